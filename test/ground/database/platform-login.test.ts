// The embedded database's logins: the platform connects with a login that is not a superuser and
// may create no role or database, and owns everything it works with; deployments' logins are made
// and dropped by a separate admin login; an installation whose objects the superuser owns (earlier
// versions) is handed over at start. Each test starts an embedded PostgreSQL of its own.
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { pino } from 'pino';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { openAdminLogin } from '../../../src/database/admin-login.js';
import { type EmbeddedDatabase, SUPERUSER_PASSWORD_FILE, startEmbeddedPostgres } from '../../../src/database/embedded-postgres.js';
import { migrateDatabase, readMigrations } from '../../../src/database/migrate.js';
import { connectDatabase } from '../../../src/db.js';
import { createDeps } from '../../../src/wiring.js';
import { createSecretBox } from '../../../src/crypto.js';
import { deploymentDatabaseName, dropDeploymentDatabase, ensureDeploymentDatabase, runtimeLoginRole } from '../../../src/platform/services/deployments/deployment-database.js';
import { ensureStoreSchema } from '../../../src/database/store-schema.js';
import { CHECKPOINT_SCHEMA } from '../../../src/database/checkpoint-schema.js';
import { bossConnection } from '../../../src/queues.js';
import { adminLoginUrl, databaseUrl } from '../../support/helpers.js';
import { LAST_EARLIER_MIGRATION, migrateAsEarlierVersions } from '../../support/earlier-version.js';

const logger = pino({ level: 'silent' });
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-login-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function start(dataDir: string): Promise<EmbeddedDatabase> {
  const embedded = await startEmbeddedPostgres(dataDir, logger);
  cleanups.push(() => embedded.stop());
  return embedded;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

const loginOf = (url: string) =>
  query<{ name: string; superuser: boolean; createrole: boolean; createdb: boolean; bypassrls: boolean }>(
    url,
    `SELECT rolname AS name, rolsuper AS superuser, rolcreaterole AS createrole, rolcreatedb AS createdb, rolbypassrls AS bypassrls
       FROM pg_roles WHERE rolname = current_user`,
  ).then((rows) => rows[0]);

const superuserUrl = (embedded: EmbeddedDatabase, password: string) => {
  const url = new URL(embedded.url);
  url.username = 'postgres';
  url.password = password;
  return url.toString();
};

/** Objects of the database (not the system's, not extensions') that `owner` owns, as "kind name". */
const objectsOwnedBy = (url: string, owner: string) =>
  query<{ object: string }>(
    url,
    `SELECT 'schema ' || nspname AS object FROM pg_namespace WHERE nspowner = $1::regrole AND oid >= 16384
     UNION ALL SELECT 'relation ' || oid::regclass FROM pg_class WHERE relowner = $1::regrole AND oid >= 16384
     UNION ALL SELECT 'routine ' || oid::regprocedure FROM pg_proc WHERE proowner = $1::regrole AND oid >= 16384
     UNION ALL SELECT 'type ' || oid::regtype FROM pg_type WHERE typowner = $1::regrole AND oid >= 16384`,
    [owner],
  ).then((rows) => rows.map((row) => row.object));

const deploymentLoginExists = async (url: string, deploymentId: string) =>
  (await query(url, 'SELECT 1 FROM pg_roles WHERE rolname = $1', [runtimeLoginRole(deploymentId)])).length === 1;

type DeploymentDatabaseDeps = Parameters<typeof ensureDeploymentDatabase>[0];

/**
 * Makes a deployment's database and login as a build does (ensureDeploymentDatabase), logs in with
 * it, and shows what it may do: own its database (a runtime migrates it), not enter the platform's.
 */
async function makeDeploymentDatabase(deps: DeploymentDatabaseDeps, deploymentId: string) {
  const { url } = await ensureDeploymentDatabase(deps, deploymentId);
  expect(await query(url, 'SELECT current_database() AS name')).toEqual([{ name: deploymentDatabaseName(deploymentId) }]);
  await query(url, 'CREATE TABLE IF NOT EXISTS own_table (id int)');
  const platform = new URL(url);
  platform.pathname = new URL(deps.db.url).pathname;
  // 42501: permission denied for database (CONNECT was taken from PUBLIC).
  await expect(query(platform.toString(), 'SELECT 1')).rejects.toMatchObject({ code: '42501' });
  return url;
}

describe('the embedded database', () => {
  it('gives the platform a login that is no superuser and may create no role or database, and owns the database', async () => {
    const dataDir = tempDataDir();
    const embedded = await start(dataDir);

    expect(await loginOf(embedded.url)).toEqual({ name: 'agent_platform', superuser: false, createrole: false, createdb: false, bypassrls: false });
    expect(await loginOf(embedded.adminUrl)).toEqual({ name: 'agent_platform_admin', superuser: false, createrole: true, createdb: true, bypassrls: false });
    expect(await query(embedded.url, 'SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()')).toEqual([{ owner: 'agent_platform' }]);
    // The platform's login cannot make a login for itself.
    await expect(query(embedded.url, 'CREATE ROLE sneaky LOGIN')).rejects.toMatchObject({ code: '42501' });
    // Passwords: only the data directory's owner may read them.
    for (const file of [SUPERUSER_PASSWORD_FILE, 'platform-login-password', 'admin-login-password']) {
      expect({ file, mode: statSync(join(dataDir, file)).mode & 0o777 }).toEqual({ file, mode: 0o600 });
    }
  }, 120_000);

  it('migrates as the platform, which makes and drops a deployment login through the admin login', async () => {
    const dataDir = tempDataDir();
    const config = loadConfig({}, { AGENT_PLATFORM_DATA_DIR: dataDir, LOG_LEVEL: 'silent', AGENT_PLATFORM_INGEST_THREADS: '0' });
    // What `start` does: the embedded database, migrated, and the process's dependencies.
    const wiring = await createDeps(config, logger);
    cleanups.push(() => wiring.stop());
    const { deps } = wiring;
    expect(await loginOf(deps.db.url)).toMatchObject({ name: 'agent_platform', superuser: false });
    // Migrated and pg-boss set up, all by the platform's login, which owns them.
    const boss = new PgBoss({ ...bossConnection(deps.db.url), supervise: false, schedule: false });
    await boss.start();
    cleanups.push(() => boss.stop({ graceful: false, close: true }));
    const deploymentId = randomUUID();
    expect(await objectsOwnedBy(deps.db.url, 'postgres')).toEqual([]);
    expect(await objectsOwnedBy(deps.db.url, 'agent_platform')).toEqual(expect.arrayContaining(['schema pgboss', 'relation deployments', 'relation api_keys']));

    const runtimeUrl = await makeDeploymentDatabase(deps, deploymentId);
    // It arrives migrated with the agent server's chain (a copy of the template the admin login
    // migrated once), everything in it its own login's (its later migrations alter those tables),
    // nothing the template's role's, and none of the platform's tables.
    expect(await migrateDatabase(runtimeUrl, logger, 'agent-server')).toEqual([]);
    expect(await query(runtimeUrl, "SELECT to_regclass('deployments') AS platform, to_regclass('served_deployments') AS own")).toEqual([{ platform: null, own: 'served_deployments' }]);
    expect(await objectsOwnedBy(runtimeUrl, runtimeLoginRole(deploymentId))).toEqual(expect.arrayContaining(['relation agent_threads', 'relation _prisma_migrations', 'schema pgboss', 'relation langgraph.checkpoints']));
    expect(await objectsOwnedBy(runtimeUrl, 'agent_platform_admin')).toEqual([]);
    expect(await query(runtimeUrl, `SELECT 1 FROM pg_roles WHERE rolname = 'agent_deployment_template' AND pg_has_role(current_user, oid, 'USAGE')`)).toEqual([]);
    // The template itself takes no connection, from the platform's login or any other.
    const [template] = await query<{ datname: string }>(deps.db.url, `SELECT datname FROM pg_database WHERE datistemplate AND datname LIKE 'agent_deployment_template_%'`);
    const templateUrl = new URL(runtimeUrl);
    templateUrl.pathname = `/${template!.datname}`;
    await expect(query(templateUrl.toString(), 'SELECT 1')).rejects.toMatchObject({ code: expect.stringMatching(/^(42501|55000)$/) });
    // The runtime's login, too, may make no login, and no database.
    await expect(query(runtimeUrl, 'CREATE ROLE sneaky LOGIN')).rejects.toMatchObject({ code: '42501' });
    await expect(query(runtimeUrl, 'CREATE DATABASE sneaky')).rejects.toMatchObject({ code: '42501' });
    // Ensuring it again (another runtime of the deployment) keeps it, and its data, working.
    await ensureDeploymentDatabase(deps, deploymentId);
    expect(await query(runtimeUrl, 'SELECT count(*)::int AS count FROM own_table')).toEqual([{ count: 0 }]);

    await dropDeploymentDatabase(deps, deploymentId);
    expect(await deploymentLoginExists(deps.db.url, deploymentId)).toBe(false);
    expect(await query(deps.db.url, 'SELECT 1 FROM pg_database WHERE datname = $1', [deploymentDatabaseName(deploymentId)])).toEqual([]);
    await expect(query(runtimeUrl, 'SELECT 1')).rejects.toMatchObject({ code: expect.stringMatching(/^28/) });
    // Dropping it again is a no-op.
    await dropDeploymentDatabase(deps, deploymentId);
  }, 180_000);

  it('upgrades an installation whose objects the superuser owns, runtime logins included', async () => {
    const dataDir = tempDataDir();
    const first = await startEmbeddedPostgres(dataDir, logger);
    const superPassword = readFileSync(join(dataDir, SUPERUSER_PASSWORD_FILE), 'utf8').trim();
    const superUrl = superuserUrl(first, superPassword);
    const legacyDeployment = randomUUID();
    const legacyRole = runtimeLoginRole(legacyDeployment);
    try {
      // The installation as earlier versions left it: no platform or admin login, everything made by
      // the superuser (their migrations, pg-boss, LangGraph, a deployment's store in the platform's
      // database), and a deployment's runtime login made and granted by the superuser too, member of
      // the superuser's role.
      await query(superUrl, 'ALTER DATABASE agent_platform OWNER TO postgres');
      await query(superUrl, 'REASSIGN OWNED BY agent_platform, agent_platform_admin TO postgres');
      await query(superUrl, 'DROP OWNED BY agent_platform, agent_platform_admin');
      await query(superUrl, 'DROP ROLE agent_platform, agent_platform_admin');
      unlinkSync(join(dataDir, 'platform-login-password'));
      unlinkSync(join(dataDir, 'admin-login-password'));
      chmodSync(join(dataDir, SUPERUSER_PASSWORD_FILE), 0o644);
      await migrateAsEarlierVersions(superUrl);
      const boss = new PgBoss({ ...bossConnection(superUrl), supervise: false, schedule: false });
      await boss.start();
      await boss.stop({ graceful: false, close: true });
      const superDb = connectDatabase(superUrl, { poolSize: 2 });
      try {
        // (This process already set the checkpoint tables up once, in another database: not again.)
        await new PostgresSaver(superDb.pool, undefined, { schema: CHECKPOINT_SCHEMA }).setup();
        await ensureStoreSchema(superDb, legacyDeployment);
        await superDb.pool.query(`CREATE ROLE "${legacyRole}" LOGIN PASSWORD 'legacy'`);
        await superDb.pool.query(`GRANT postgres TO "${legacyRole}"`);
        // What earlier versions granted a runtime login on the shared tables.
        await superDb.pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON agent_threads, agent_runs TO "${legacyRole}"`);
        await superDb.pool.query(`GRANT USAGE ON SCHEMA pgboss TO "${legacyRole}"`);
      } finally {
        await superDb.close();
      }
      expect(await objectsOwnedBy(superUrl, 'postgres')).toEqual(expect.arrayContaining(['schema pgboss', 'schema langgraph', 'relation agent_threads']));
    } finally {
      await first.stop();
    }

    // The next start hands everything to the platform's login.
    const embedded = await start(dataDir);
    expect(await loginOf(embedded.url)).toMatchObject({ name: 'agent_platform', superuser: false, createrole: false });
    expect(statSync(join(dataDir, SUPERUSER_PASSWORD_FILE)).mode & 0o777).toBe(0o600);
    expect(await objectsOwnedBy(embedded.url, 'postgres')).toEqual([]);
    expect(await query(embedded.url, 'SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()')).toEqual([{ owner: 'agent_platform' }]);
    // The old runtime login is no member of the superuser's role any more.
    expect(await query(embedded.url, 'SELECT 1 FROM pg_auth_members WHERE member = $1::regrole', [legacyRole])).toEqual([]);
    // The platform works on it: this version's migrations apply, pg-boss starts, its tables can be written.
    expect(await migrateDatabase(embedded.url, logger, 'platform')).toEqual(readMigrations('platform').map((m) => m.name).filter((name) => name > LAST_EARLIER_MIGRATION));
    const boss = new PgBoss({ ...bossConnection(embedded.url), supervise: false, schedule: false });
    await boss.start();
    await boss.stop({ graceful: false, close: true });
    const db = connectDatabase(embedded.url, { poolSize: 2 });
    const adminLogin = openAdminLogin(embedded.adminUrl);
    cleanups.push(async () => {
      await adminLogin.close();
      await db.close();
    });
    await db.pool.query(`INSERT INTO organizations (id, name, updated_at) VALUES ($1, 'after the upgrade', now())`, [randomUUID()]);
    // The admin login took over the old runtime login: it can give it a new password and a database
    // of its own (and the platform's is closed to it now), and drop both.
    const deps = { db, adminLogin, logger, secrets: createSecretBox(Buffer.alloc(32, 3)), config: loadConfig({}, { AGENT_PLATFORM_DATA_DIR: dataDir }) };
    const runtimeUrl = await makeDeploymentDatabase(deps, legacyDeployment);
    await dropDeploymentDatabase(deps, legacyDeployment);
    expect(await deploymentLoginExists(embedded.url, legacyDeployment)).toBe(false);
    await expect(query(runtimeUrl, 'SELECT 1')).rejects.toMatchObject({ code: expect.stringMatching(/^28/) });
  }, 240_000);
});

describe('an external database', () => {
  /** Starts a process's dependencies as `start` does on DATABASE_URL, and returns the warnings it logged. */
  async function startWarnings(env: Record<string, string>): Promise<string[]> {
    const lines: { level: number; msg: string }[] = [];
    const captured = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const config = loadConfig({}, { AGENT_PLATFORM_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'), AGENT_PLATFORM_INGEST_THREADS: '0', ...env });
    const wiring = await createDeps(config, captured, { listen: false });
    await wiring.stop();
    return lines.filter((line) => line.level === 40).map((line) => line.msg);
  }
  // The test server's superuser, on this file's database.
  const superuserOnFileDatabase = () => {
    const url = new URL(inject('adminDatabaseUrl'));
    url.pathname = new URL(databaseUrl()).pathname;
    return url.toString();
  };

  it('says when the platform, and the logins of deployed code, come from a superuser login', async () => {
    const warnings = await startWarnings({ DATABASE_URL: superuserOnFileDatabase() });
    expect(warnings).toEqual([
      expect.stringContaining("the platform's database login is a superuser"),
      expect.stringContaining("deployed code's database logins are made by a superuser login"),
    ]);
  });

  it('says when no login may make deployments\' logins, and nothing with a separate admin login', async () => {
    expect(await startWarnings({ DATABASE_URL: databaseUrl() })).toEqual([expect.stringContaining("no database login may make deployments' logins")]);
    expect(await startWarnings({ DATABASE_URL: databaseUrl(), AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl() })).toEqual([]);
  });

  it('takes an admin login beside the embedded database too: deployments\' databases then live on its server (deployment-database-server.test.ts)', () => {
    expect(loadConfig({}, { AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl() })).toMatchObject({ databaseUrl: undefined, adminDatabaseUrl: adminLoginUrl() });
  });
});
