// A deployment's database. Each control-plane deployment's agent server keeps its data (assistants,
// threads, runs and their events, checkpoints, store, its run queue and crons, its event bus) in a
// PostgreSQL database of its own, owned by a login of its own: the admin login makes both
// (ensureDeploymentDatabase) and takes CONNECT on that database from every other login, and the
// platform's own database is closed to every login but the platform's and the admin's
// (closePlatformDatabase). Deployed code therefore has no table, catalog row, channel or advisory lock
// of the platform's or of another deployment's in reach: not by grants to remember, but because it is
// never connected where they are. The agent server migrates its database itself, as its owner.
//
// The agent server migrates its database with its own chain (src/agent-server/prisma/migrations) and
// makes the rest of the DDL it needs itself (agent-server/services/served-deployment/database-setup.ts);
// the template below holds what every one needs.
import { createHash } from 'node:crypto';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { PgBoss } from 'pg-boss';
import { type AdminLogin, ConnectionBudgetError, type DatabaseTemplate } from '../../../database/admin-login.js';
import { migrateDatabase, readMigrations } from '../../../database/migrate.js';
import { withTransaction } from '../../../db.js';
import { createPool } from '../../../database/pool.js';
import { bossConnection } from '../../../queues.js';
import type { Deps } from '../../../context.js';
import { CHECKPOINT_SCHEMA } from '../../../database/checkpoint-schema.js';

/** The database login of a deployment's agent server: one per deployment, made by the admin login. */
export const runtimeLoginRole = (deploymentId: string) => `agent_runtime_${deploymentId.replace(/-/g, '')}`;

/** Every deployment's login (runtimeLoginRole), as a LIKE pattern. */
const RUNTIME_LOGIN_PATTERN = 'agent\\_runtime\\_%';

/** The database of a deployment's agent server. */
export const deploymentDatabaseName = (deploymentId: string) => `agent_deployment_${deploymentId.replace(/-/g, '')}`;

/** Platform databases closed by this process, by URL. */
const platformDatabasesClosed = new Map<string, Promise<void>>();

/**
 * Takes CONNECT and TEMPORARY on the platform's database from PUBLIC, so no deployment's login can
 * connect to it (a login may connect to every database by default), and gives CONNECT back to the
 * admin login. Done by the platform's login, which owns the database; once per process.
 */
function closePlatformDatabase(deps: Pick<Deps, 'db' | 'adminLogin' | 'logger'>): Promise<void> {
  const closed = platformDatabasesClosed.get(deps.db.url);
  if (closed) return closed;
  const closing = (async () => {
    const admin = await deps.adminLogin.loginName();
    await deps.db.pool.query(
      `DO $$ BEGIN
         EXECUTE format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
         -- (Absent where the admin login is on a server of deployments' own: it never connects here.)
         IF ${pgLiteral(admin)} <> current_user AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${pgLiteral(admin)}) THEN
           EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), ${pgLiteral(admin)});
         END IF;
       END $$`,
    );
  })().catch((error: unknown) => {
    platformDatabasesClosed.delete(deps.db.url);
    throw new Error(`could not close the platform's database to other logins (${(error as Error).message}); its login must own the database`);
  });
  platformDatabasesClosed.set(deps.db.url, closing);
  return closing;
}

const pgLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** Whether the deployment's database exists already (on the admin login's server, where deployments' databases are). */
export async function deploymentDatabaseExists(deps: Pick<Deps, 'adminLogin'>, deploymentId: string): Promise<boolean> {
  const name = deploymentDatabaseName(deploymentId);
  return (await deps.adminLogin.databaseUsage([name])).has(name);
}

export type DeploymentDatabase = { url: string; made: boolean };

const TEMPLATE_PREFIX = 'agent_deployment_template_';
// Named into the template's name with the migrations: a change to what fillTemplate puts in makes a new one.
const TEMPLATE_CONTENTS = "the agent server's migrations, pg-boss, checkpoint tables";
const templates = new WeakMap<AdminLogin, Promise<DatabaseTemplate | undefined>>();

/**
 * What every deployment's database holds before its agent server first starts: the agent server's own
 * migrations (src/agent-server/prisma/migrations; none of the platform's), pg-boss's schema and
 * LangGraph's checkpoint tables (each of which an agent server made on its first start otherwise, on
 * the deploy's path).
 */
async function fillTemplate(url: string, logger: Deps['logger']): Promise<void> {
  await migrateDatabase(url, logger, 'agent-server');
  const boss = new PgBoss({ ...bossConnection(url), supervise: false, schedule: false, migrate: true });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.stop({ graceful: false, close: true });
  const pool = createPool({ connectionString: url, max: 1 });
  try {
    await new PostgresSaver(pool, undefined, { schema: CHECKPOINT_SCHEMA }).setup();
  } finally {
    await pool.end();
  }
}

/**
 * The migrated database a new deployment's database is copied from: made once per set of migrations
 * (named by them, so a new version's migrations make a new one), on the first deploy. Copying it is a
 * file copy where migrating an empty database replayed every migration on the first deploy's path.
 * Undefined, and each database migrated from empty by its agent server, where the server cannot make
 * one (said once in the log). The worker role makes it when it starts, so the first deploy finds it.
 */
export function deploymentTemplate(deps: Pick<Deps, 'adminLogin' | 'logger'>): Promise<DatabaseTemplate | undefined> {
  let template = templates.get(deps.adminLogin);
  if (!template) {
    const migrations = readMigrations('agent-server');
    const digest = createHash('sha256').update([TEMPLATE_CONTENTS, ...migrations.map((migration) => `${migration.name}:${migration.checksum}`)].join('\n')).digest('hex');
    const spec = { name: `${TEMPLATE_PREFIX}${digest.slice(0, 16)}`, role: 'agent_deployment_template', prefix: TEMPLATE_PREFIX };
    template = deps.adminLogin
      .ensureTemplate(spec, (url) => fillTemplate(url, deps.logger))
      .then(() => spec)
      .catch((error: unknown) => {
        deps.logger.warn({ err: error }, "deployment databases are migrated from empty: the template they would be copied from could not be made");
        return undefined;
      });
    templates.set(deps.adminLogin, template);
  }
  return template;
}

/**
 * Makes (or brings back) the deployment's login and its database, owned by that login and closed to
 * every other, and returns the URL the deployment's agent server connects with: the platform's
 * server, its own database and login. The password is derived from the installation's key for the
 * deployment, so every runtime of it (the serving one, the next revision's, a restarted one) logs in
 * with the same one. `made`: the database did not exist before. A `local` deployment's (a graph config
 * the operator runs in a platform process: code as trusted as the platform's) takes connections as
 * its agent server needs them, outside the deployments' budget: no connection limit of its own.
 */
export async function ensureDeploymentDatabase(
  deps: Pick<Deps, 'db' | 'adminLogin' | 'secrets' | 'config' | 'logger'>,
  deploymentId: string,
  options: { local?: boolean } = {},
): Promise<DeploymentDatabase> {
  await closePlatformDatabase(deps);
  const role = runtimeLoginRole(deploymentId);
  const password = deps.secrets.derive(`database-login:${deploymentId}`).key.toString('hex');
  const name = deploymentDatabaseName(deploymentId);
  let made: boolean;
  try {
    const connections = options.local ? -1 : deps.config.deploymentDatabaseConnections;
    await deps.adminLogin.ensureLogin(role, password, {
      connections,
      tempFileKb: Math.ceil(deps.config.deploymentTempFileBytes / 1024),
      sharedWith: options.local ? undefined : RUNTIME_LOGIN_PATTERN,
    });
    const template = await deploymentTemplate(deps);
    made = await deps.adminLogin.ensureDatabase(name, role, connections, template).catch(async (error: unknown) => {
      if (!template) throw error;
      // A copy that failed half way is a database just made: dropped, and made empty instead.
      deps.logger.warn({ err: error, deploymentId }, "a deployment's database could not be copied from the template; its agent server migrates it from empty");
      await deps.adminLogin.dropDatabase(name);
      return deps.adminLogin.ensureDatabase(name, role, connections);
    });
  } catch (error) {
    if (error instanceof ConnectionBudgetError) throw error;
    throw new Error(
      `could not make the deployment's own database and login (${(error as Error).message}); give the platform an admin login that may create roles and databases (AGENT_PLATFORM_ADMIN_DATABASE_URL)`,
    );
  }
  return { url: deploymentDatabaseUrl(deps.adminLogin.url, deps.secrets, deploymentId), made };
}

/**
 * The URL a deployment's agent server connects with: the server of the admin login that made its
 * database (`serverUrl`: the platform's, or one of deployments' own), the deployment's own database
 * and login, whose password is derived from the installation's key.
 */
export function deploymentDatabaseUrl(serverUrl: string, secrets: Pick<Deps['secrets'], 'derive'>, deploymentId: string): string {
  const url = new URL(serverUrl);
  url.username = runtimeLoginRole(deploymentId);
  url.password = secrets.derive(`database-login:${deploymentId}`).key.toString('hex');
  url.pathname = `/${deploymentDatabaseName(deploymentId)}`;
  url.searchParams.delete('options');
  return url.toString();
}

/**
 * Drops a deleted deployment's database and login: the admin login stops the login and ends its
 * sessions, drops the database (its data goes with it), takes back what an earlier version granted
 * the login in the platform's database (shared tables, before deployments had databases of their
 * own) and drops it. Idempotent.
 */
export async function dropDeploymentDatabase(deps: Pick<Deps, 'db' | 'adminLogin'>, deploymentId: string): Promise<void> {
  const name = runtimeLoginRole(deploymentId);
  if (!(await deps.adminLogin.disableLogin(name))) return;
  await deps.adminLogin.dropDatabase(deploymentDatabaseName(deploymentId));
  await withTransaction(deps.db, async (client) => {
    const { rows } = await client.query<{ statement: string }>(
      `SELECT DISTINCT CASE
           WHEN d.classid = 'pg_class'::regclass THEN
             format('REVOKE ALL ON %s %s FROM %I', CASE WHEN c.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, d.objid::regclass, $1::text)
           WHEN d.classid = 'pg_namespace'::regclass THEN format('REVOKE ALL ON SCHEMA %I FROM %I', n.nspname, $1::text)
           WHEN d.classid = 'pg_proc'::regclass THEN format('REVOKE ALL ON ROUTINE %s FROM %I', d.objid::regprocedure, $1::text)
           WHEN d.classid = 'pg_type'::regclass THEN format('REVOKE ALL ON TYPE %s FROM %I', d.objid::regtype, $1::text)
         END AS statement
         FROM pg_shdepend d
         LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
         LEFT JOIN pg_namespace n ON d.classid = 'pg_namespace'::regclass AND n.oid = d.objid
        WHERE d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND d.refclassid = 'pg_authid'::regclass AND d.refobjid = $1::regrole AND d.deptype = 'a'`,
      [name],
    );
    for (const { statement } of rows) if (statement) await client.query(statement);
  });
  await deps.adminLogin.dropLogin(name);
}
