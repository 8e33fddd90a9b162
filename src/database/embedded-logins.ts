// The embedded server's logins. The superuser (`postgres`) starts and upgrades the server and makes
// the two logins the platform uses, nothing else:
//   - `agent_platform`: the platform's everyday login (every role's pool, migrations, the admin CLI).
//     Not a superuser, may create no role or database; it owns the `agent_platform` database and
//     every object in it, so it migrates, sets up deployments' tables and grants them.
//   - `agent_platform_admin`: makes, alters and drops deployments' logins (CREATEROLE, CREATEDB), and
//     owns nothing of the platform's data.
// Deployed code that got hold of the platform's login could do what the platform does to its own
// database, but not make roles, read files of the server or run programs as a superuser can.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import type { Logger } from 'pino';

export const PLATFORM_LOGIN = 'agent_platform';
export const ADMIN_LOGIN = 'agent_platform_admin';
const BOOTSTRAP_SUPERUSER = 'postgres';
// Deployments' runtime logins, made by earlier versions with the superuser (runtimeLoginRole).
const DEPLOYMENT_LOGIN_PATTERN = 'agent\\_runtime\\_%';
const LOGINS_LOCK = 'agent-platform:embedded-logins';

/**
 * A password kept in `file` (mode 0600, made on first use). A file of an earlier version that others
 * may read is made private.
 */
export function passwordInFile(file: string): string {
  if (!existsSync(file)) writeFileSync(file, randomBytes(18).toString('base64url'), { mode: 0o600 });
  else chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/**
 * Makes (or brings up to date) the two logins as the superuser, then hands `database` and everything
 * in it to the platform's login: an installation of an earlier version, where the superuser owns
 * them, is upgraded here. Closes the server's own databases (`postgres`, `template1`) to every login
 * but the superuser, and `database` to every login but the two, so a deployment's login can connect
 * to no database but its own: none of their locks, catalogs or connection slots are its to take.
 * All of it runs in `database`, where its
 * advisory lock serialises processes starting at once (in `postgres`, any login could take that lock
 * and hold every new platform process waiting). Idempotent and cheap when nothing is left to do.
 */
export async function provisionEmbeddedLogins(
  superuserUrl: string,
  database: string,
  passwords: { platform: string; admin: string },
  logger: Logger,
): Promise<void> {
  const target = new URL(superuserUrl);
  target.pathname = `/${database}`;
  await asSuperuser(target.toString(), async (client) => {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [LOGINS_LOCK]);
    // Passwords are generated (base64url), so quoting them as literals is safe; set at every start so
    // the role follows its file.
    await ensureLogin(client, PLATFORM_LOGIN, 'NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS', passwords.platform);
    await ensureLogin(client, ADMIN_LOGIN, 'NOSUPERUSER CREATEDB CREATEROLE NOREPLICATION NOBYPASSRLS', passwords.admin);
    // The admin login takes the privileges of the logins it makes (not only ADMIN OPTION, which
    // PostgreSQL 16+ always gives their creator), so it may end their sessions when it drops them.
    await client.query(`ALTER ROLE ${ADMIN_LOGIN} SET createrole_self_grant = 'inherit'`);
    await client.query(`ALTER DATABASE ${database} OWNER TO ${PLATFORM_LOGIN}`);
    // The connection slots the server reserves (reserved_connections) are the platform's alone.
    await client.query(`GRANT pg_use_reserved_connections TO ${PLATFORM_LOGIN}, ${ADMIN_LOGIN}`);
    // Its bound on the temporary files deployments' logins write, which only a superuser sets otherwise.
    await client.query(`GRANT SET ON PARAMETER temp_file_limit TO ${ADMIN_LOGIN}`);
    for (const own of ['postgres', 'template1', database]) await client.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${own} FROM PUBLIC`);
    await client.query(`GRANT CONNECT ON DATABASE ${database} TO ${ADMIN_LOGIN}`);
    await adoptDeploymentLogins(client);
    const moved = await moveOwnership(client, BOOTSTRAP_SUPERUSER, PLATFORM_LOGIN);
    if (moved) logger.info({ objects: moved, owner: PLATFORM_LOGIN }, 'embedded database: objects handed from the superuser to the platform login');
  });
}

async function asSuperuser(url: string, work: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'agent-platform-setup' });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

async function ensureLogin(client: pg.Client, role: string, attributes: string, password: string): Promise<void> {
  const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
  const literal = `'${password.replace(/'/g, "''")}'`;
  await client.query(`${rowCount ? 'ALTER' : 'CREATE'} ROLE ${role} LOGIN ${attributes} PASSWORD ${literal}`);
}

/**
 * Deployments' logins an earlier version made as the superuser: the admin login gets what it has on
 * the logins it makes itself (ADMIN OPTION to alter and drop them, their privileges to end their
 * sessions), and memberships those versions gave them (the platform's role) go.
 */
async function adoptDeploymentLogins(client: pg.Client): Promise<void> {
  const { rows: unadopted } = await client.query<{ name: string }>(
    `SELECT quote_ident(r.rolname) AS name FROM pg_roles r
      WHERE r.rolname LIKE $1 AND NOT EXISTS (
        SELECT 1 FROM pg_auth_members m WHERE m.roleid = r.oid AND m.member = $2::regrole AND m.admin_option AND m.inherit_option)`,
    [DEPLOYMENT_LOGIN_PATTERN, ADMIN_LOGIN],
  );
  for (const { name } of unadopted) await client.query(`GRANT ${name} TO ${ADMIN_LOGIN} WITH ADMIN TRUE, INHERIT TRUE, SET FALSE`);
  const { rows: memberships } = await client.query<{ role: string; member: string; grantor: string }>(
    `SELECT quote_ident(g.rolname) AS role, quote_ident(r.rolname) AS member, quote_ident(b.rolname) AS grantor
       FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles b ON b.oid = m.grantor
      WHERE r.rolname LIKE $1`,
    [DEPLOYMENT_LOGIN_PATTERN],
  );
  for (const { role, member, grantor } of memberships) await client.query(`REVOKE ${role} FROM ${member} GRANTED BY ${grantor} CASCADE`);
}

/**
 * Gives every object of the current database that `from` owns to `to`, object by object:
 * `REASSIGN OWNED BY postgres` is refused ("required by the database system"), since the bootstrap
 * superuser also owns the system catalogs. Objects of the system (oids below 16384) and members of
 * extensions stay; indexes, sequences of identity and serial columns and tables' row types move with
 * their table, array types with their element type. Returns how many objects moved.
 */
async function moveOwnership(client: pg.Client, from: string, to: string): Promise<number> {
  const { rows } = await client.query<{ statement: string }>(
    `WITH owner AS (SELECT $1::regrole::oid AS oid),
     user_object AS (SELECT 16384 AS first_oid)
     SELECT format('ALTER SCHEMA %I OWNER TO %I', n.nspname, $2::text) AS statement
       FROM pg_namespace n, owner, user_object
      WHERE n.nspowner = owner.oid AND n.oid >= user_object.first_oid
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass AND d.objid = n.oid AND d.deptype = 'e')
     UNION ALL
     SELECT format('ALTER %s %s OWNER TO %I',
                   CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
                   c.oid::regclass, $2::text)
       FROM pg_class c, owner, user_object
      WHERE c.relowner = owner.oid AND c.oid >= user_object.first_oid AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                          AND (d.deptype = 'e' OR (c.relkind = 'S' AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i'))))
     UNION ALL
     SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, $2::text)
       FROM pg_proc p, owner, user_object
      WHERE p.proowner = owner.oid AND p.oid >= user_object.first_oid
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
     UNION ALL
     SELECT format('ALTER %s %s OWNER TO %I', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype, $2::text)
       FROM pg_type t, owner, user_object
      WHERE t.typowner = owner.oid AND t.oid >= user_object.first_oid
        AND t.typtype IN ('e', 'd', 'r', 'b', 'c') AND t.typcategory <> 'A'
        AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c')
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e')`,
    [from, to],
  );
  if (!rows.length) return 0;
  await client.query('BEGIN');
  try {
    for (const { statement } of rows) await client.query(statement);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  return rows.length;
}
