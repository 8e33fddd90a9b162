// The one door to the database login that makes, alters and drops deployments' logins. The
// platform's own login may create no role: a role that can is kept apart (the embedded server's
// `agent_platform_admin`, or AGENT_PLATFORM_ADMIN_DATABASE_URL), so code that got hold of the
// platform's login cannot make itself new logins. Grants on tables are not made here: the platform's
// login owns the tables and grants them (deployment-database.ts).
//
// PostgreSQL 16+: a CREATEROLE login may alter and drop only roles it holds ADMIN OPTION on, which it
// gets for the roles it creates; `createrole_self_grant = 'inherit'` also gives it their privileges,
// which ending their sessions and DROP OWNED need. Before 16, CREATEROLE alone may alter and drop them.
import pg from 'pg';
import type { Logger } from 'pino';
import { createPool } from './pool.js';

/**
 * A migrated database new deployment databases are copied from (CREATE DATABASE … TEMPLATE: a file
 * copy, where migrating an empty database replays every migration), its objects owned by `role`, a
 * role of no login that each copy hands its objects over from to the copy's owner.
 */
export type DatabaseTemplate = { name: string; role: string };

export type AdminLogin = {
  /**
   * Makes `role` a login with `password`, or brings an existing one back to exactly that: it logs in
   * with this password over at most `limits.connections` connections (all its databases together),
   * writes temporary files of at most `limits.tempFileKb` per session, keeps no other settings of its
   * own and is a member of no role (an earlier version made runtime logins members of the platform's
   * role). Neither limit is the login's to change: a role alters its own connection limit only with
   * CREATEROLE, and `temp_file_limit` only a superuser sets. With `sharedWith` (a LIKE pattern of
   * logins), the connection limits of those logins and this one must fit together in the server's
   * connections that are not reserved (for superusers, and for the platform's logins by
   * `reserved_connections`): else ConnectionBudgetError, and nothing changes. Throws when the admin
   * login may not.
   */
  ensureLogin(role: string, password: string, limits: { connections: number; tempFileKb: number; sharedWith?: string }): Promise<void>;
  /**
   * Stops `role` logging in and ends its sessions. Returns false when there is no such role. Sessions
   * the admin login may not end (PostgreSQL before 16) run on until they close.
   */
  disableLogin(role: string): Promise<boolean>;
  /**
   * Drops `role`, with what it owns in the admin login's database. Privileges others granted it must be
   * revoked first, by their grantor. No such role: no-op.
   */
  dropLogin(role: string): Promise<void>;
  /**
   * Makes database `name` for `login` (a login this admin made): the login owns every object in it and
   * may create schemas there, but the database itself is the admin login's, so its settings (its
   * connection limit, who may connect) are not the login's to change; no other login may connect
   * (CONNECT and TEMPORARY taken from PUBLIC), and the database takes at most `connectionLimit`
   * connections. An existing one (of an earlier version, where the login owned it) is brought back to
   * exactly that. Returns whether it was made now.
   */
  ensureDatabase(name: string, login: string, connectionLimit: number, template?: DatabaseTemplate): Promise<boolean>;
  /**
   * The size on disk and the open sessions of each database named (the admin login owns deployments'
   * databases, which the platform's own login may not even look into); names without one are left out.
   */
  databaseUsage(names: string[]): Promise<Map<string, { bytes: number; connections: number }>>;
  /** Drops database `name`, ending its sessions first. No such database: no-op. */
  dropDatabase(name: string): Promise<void>;
  /**
   * Makes template database `template.name` if there is none yet: an empty database (the admin's,
   * reachable by no other login) whose objects `fill` makes through the url it is given, acting as
   * the template's role `template.role` (NOLOGIN); then it takes no connection and is marked a template.
   * One left half made by a crash is made again. Other templates of the same `prefix` are dropped.
   */
  ensureTemplate(template: DatabaseTemplate & { prefix: string }, fill: (url: string) => Promise<void>): Promise<void>;
  /** The admin login's role name (current_user). */
  loginName(): Promise<string>;
  /**
   * Its URL: deployments' databases are on its server (which may be another than the platform's), so
   * their agent servers connect where it points, with logins of their own.
   */
  readonly url: string;
  close(): Promise<void>;
};

const LOGINS_LOCK = 'agent-platform:deployment-logins';

/** A login's connection limit does not fit in what the server's other logins of its kind leave. */
export class ConnectionBudgetError extends Error {}

/**
 * ConnectionBudgetError unless `connections` more fit beside the limits of the other logins matching
 * `pattern`, in the server's connections that are not reserved (superuser_reserved_connections, and
 * PostgreSQL 16's reserved_connections for the platform's logins).
 */
async function checkConnectionBudget(client: pg.PoolClient, pattern: string, role: string, connections: number): Promise<void> {
  const { rows } = await client.query<{ available: number; taken: number; logins: number }>(
    `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
            - coalesce(current_setting('reserved_connections', true)::int, 0) AS available,
            (SELECT coalesce(sum(rolconnlimit), 0)::int FROM pg_roles WHERE rolname LIKE $1 AND rolname <> $2 AND rolcanlogin AND rolconnlimit > 0) AS taken,
            (SELECT count(*)::int FROM pg_roles WHERE rolname LIKE $1 AND rolname <> $2 AND rolcanlogin) AS logins`,
    [pattern, role],
  );
  const { available, taken, logins } = rows[0]!;
  if (taken + connections > available) {
    throw new ConnectionBudgetError(
      `the database server has no room for this deployment's ${connections} connections: ${logins} other deployments may hold ${taken} of the ${available} it keeps for deployments (max_connections less the connections reserved for superusers and for the platform). Raise the server's max_connections (AGENT_PLATFORM_EMBEDDED_MAX_CONNECTIONS for the embedded one) or lower AGENT_PLATFORM_DEPLOYMENT_DB_CONNECTIONS`,
    );
  }
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
const quoteLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;
// 42710: duplicate_object; 23505: two processes creating it at once.
const ALREADY_EXISTS = new Set(['42710', '23505']);

/** The admin login at `url`; it connects on first use (at most two connections). What it cannot do but may go without, it tells `onWarning`. */
export function openAdminLogin(adminUrl: string, onWarning?: (message: string) => void): AdminLogin {
  let pool: pg.Pool | undefined;
  let warnedOfTempFiles = false;
  const connect = async () => {
    if (!pool) {
      pool = createPool({ connectionString: adminUrl, max: 2, application_name: 'agent-platform-admin' });
    }
    const client = await pool.connect();
    try {
      const { rows } = await client.query<{ v16: boolean }>("SELECT current_setting('server_version_num')::int >= 160000 AS v16");
      // `set` too: ALTER … OWNER TO a login needs it (objects inside deployments' databases are their logins').
      if (rows[0]!.v16) await client.query("SET createrole_self_grant = 'set, inherit'");
      return client;
    } catch (error) {
      client.release(true);
      throw error;
    }
  };
  // Work in another database of the server, as the admin login, on a connection of its own.
  const inDatabase = async <T>(database: string, work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    const client = new pg.Client({ connectionString: url.toString(), application_name: 'agent-platform-admin' });
    // Its session ended from outside (the database dropped meanwhile: a deployment deleted while its
    // build still worked there) fails the work's query; without a listener it also crashed the process.
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  const makeTemplate = async (client: pg.PoolClient, template: DatabaseTemplate & { prefix: string }, fill: (url: string) => Promise<void>) => {
    const { rows } = await client.query<{ ready: boolean }>('SELECT datistemplate AS ready FROM pg_database WHERE datname = $1', [template.name]);
    if (rows[0]?.ready) return;
    const database = quoteIdent(template.name);
    const role = quoteIdent(template.role);
    await client.query(`CREATE ROLE ${role} NOLOGIN`).catch((error: { code?: string }) => {
      if (!ALREADY_EXISTS.has(error.code ?? '')) throw error;
    });
    await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${database}`);
    await client.query(`REVOKE ALL ON DATABASE ${database} FROM PUBLIC`);
    await client.query(`GRANT CREATE, CONNECT ON DATABASE ${database} TO ${role}`);
    await inDatabase(template.name, (copy) => copy.query(`GRANT CREATE ON SCHEMA public TO ${role}`));
    const url = new URL(adminUrl);
    url.pathname = `/${template.name}`;
    url.searchParams.set('options', `-c role=${template.role}`);
    await fill(url.toString());
    await client.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS false IS_TEMPLATE true`);
    const { rows: older } = await client.query<{ name: string }>(
      `SELECT datname AS name FROM pg_database WHERE datistemplate AND starts_with(datname, $1) AND datname <> $2 AND pg_has_role(current_user, datdba, 'USAGE')`,
      [template.prefix, template.name],
    );
    for (const { name } of older) {
      await client.query(`ALTER DATABASE ${quoteIdent(name)} IS_TEMPLATE false`);
      await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    }
  };
  const withClient = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await connect();
    try {
      return await work(client);
    } finally {
      client.release();
    }
  };

  return {
    url: adminUrl,
    ensureLogin: (role, password, limits) =>
      withClient(async (client) => {
        const name = quoteIdent(role);
        // Logins made at once are counted one after the other (a session lock in the admin's own database).
        await client.query('SELECT pg_advisory_lock(hashtext($1))', [LOGINS_LOCK]);
        try {
          if (limits.sharedWith) await checkConnectionBudget(client, limits.sharedWith, role, limits.connections);
          const attributes = `LOGIN PASSWORD ${quoteLiteral(password)} CONNECTION LIMIT ${Math.trunc(limits.connections)}`;
          await client.query(`CREATE ROLE ${name} ${attributes}`).catch(async (error: { code?: string }) => {
            if (!ALREADY_EXISTS.has(error.code ?? '')) throw error;
            await client.query(`ALTER ROLE ${name} ${attributes}`);
          });
        } finally {
          await client.query('SELECT pg_advisory_unlock(hashtext($1))', [LOGINS_LOCK]).catch(() => undefined);
        }
        // A login may give itself session defaults (ALTER ROLE … SET): none survive a launch but the platform's own.
        await client.query(`ALTER ROLE ${name} RESET ALL`);
        await client.query(`ALTER ROLE ${name} SET temp_file_limit = ${quoteLiteral(`${Math.trunc(limits.tempFileKb)}kB`)}`).catch((error: { code?: string }) => {
          // 42501: the admin login may not set it (an external server's, without SET ON PARAMETER): said once.
          if (error.code !== '42501') throw error;
          if (!warnedOfTempFiles) onWarning?.("deployments' temporary files are not bounded: GRANT SET ON PARAMETER temp_file_limit TO the admin login (as a superuser)");
          warnedOfTempFiles = true;
        });
        const { rows: memberships } = await client.query<{ name: string }>(
          `SELECT quote_ident(r.rolname) AS name FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid WHERE m.member = $1::regrole`,
          [role],
        );
        for (const membership of memberships) await client.query(`REVOKE ${membership.name} FROM ${name}`);
      }),

    disableLogin: (role) =>
      withClient(async (client) => {
        const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
        if (!rowCount) return false;
        await client.query(`ALTER ROLE ${quoteIdent(role)} NOLOGIN`);
        await client.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND pg_has_role(current_user, usesysid, 'USAGE')`,
          [role],
        );
        return true;
      }),

    dropLogin: (role) =>
      withClient(async (client) => {
        const { rows } = await client.query<{ privileges: boolean }>(`SELECT pg_has_role(current_user, oid, 'USAGE') AS privileges FROM pg_roles WHERE rolname = $1`, [role]);
        if (!rows[0]) return;
        // Objects it made (a temporary table of a session just ended): DROP OWNED needs its privileges.
        if (rows[0].privileges) await client.query(`DROP OWNED BY ${quoteIdent(role)}`);
        await client.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`);
      }),

    ensureDatabase: (name, owner, connectionLimit, template) =>
      withClient(async (client) => {
        const database = quoteIdent(name);
        const login = quoteIdent(owner);
        // A login made by an earlier version holds INHERIT but not SET, which handing it objects needs.
        await client.query(`GRANT ${login} TO CURRENT_USER WITH SET TRUE, INHERIT TRUE`).catch(() => undefined);
        const copied = template ? ` TEMPLATE ${quoteIdent(template.name)}` : '';
        const made = await client
          .query(`CREATE DATABASE ${database}${copied} CONNECTION LIMIT ${Math.trunc(connectionLimit)}`)
          .then(() => true)
          .catch(async (error: { code?: string }) => {
            // 42P04: duplicate_database (an earlier deploy made it, or two made it at once).
            if (error.code !== '42P04') throw error;
            // An earlier version made its login the owner: the admin login, a member of that login, takes it back.
            await client.query(`ALTER DATABASE ${database} OWNER TO CURRENT_USER`);
            await client.query(`ALTER DATABASE ${database} CONNECTION LIMIT ${Math.trunc(connectionLimit)}`);
            return false;
          });
        await client.query(`REVOKE ALL ON DATABASE ${database} FROM PUBLIC`);
        await client.query(`GRANT CONNECT, TEMPORARY, CREATE ON DATABASE ${database} TO ${login}`);
        // The login owns what is inside, as if it had made (migrated) it itself: the public schema
        // (else the database owner's) and, in a copy, everything the template's role owned, which
        // keeps no grant there.
        await inDatabase(name, async (inside) => {
          await inside.query(`ALTER SCHEMA public OWNER TO ${login}`);
          if (!template || !made) return;
          // Schemas first: a table changes owner only to a role that may create in its schema.
          const { rows: schemas } = await inside.query<{ name: string }>('SELECT nspname AS name FROM pg_namespace WHERE nspowner = $1::regrole', [template.role]);
          for (const schema of schemas) await inside.query(`ALTER SCHEMA ${quoteIdent(schema.name)} OWNER TO ${login}`);
          await inside.query(`REASSIGN OWNED BY ${quoteIdent(template.role)} TO ${login}`);
          await inside.query(`DROP OWNED BY ${quoteIdent(template.role)}`);
        });
        return made;
      }),

    databaseUsage: (names) =>
      withClient(async (client) => {
        const { rows } = await client.query<{ name: string; bytes: string; connections: number }>(
          `SELECT d.datname AS name, pg_database_size(d.oid) AS bytes,
                  (SELECT count(*) FROM pg_stat_activity a WHERE a.datid = d.oid)::int AS connections
             FROM pg_database d WHERE d.datname = ANY($1::text[])`,
          [names],
        );
        return new Map(rows.map((row) => [row.name, { bytes: Number(row.bytes), connections: row.connections }]));
      }),

    dropDatabase: (name) =>
      withClient(async (client) => {
        await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      }),

    ensureTemplate: (template, fill) =>
      withClient(async (client) => {
        // Platform processes starting together make it once: the others wait, then find it made.
        await client.query('SELECT pg_advisory_lock(hashtext($1))', [`agent-platform:template:${template.prefix}`]);
        try {
          await makeTemplate(client, template, fill);
        } finally {
          await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`agent-platform:template:${template.prefix}`]).catch(() => undefined);
        }
      }),

    loginName: () => withClient(async (client) => (await client.query<{ name: string }>('SELECT current_user AS name')).rows[0]!.name),

    async close() {
      await pool?.end();
      pool = undefined;
    },
  };
}

/**
 * What the platform's and the admin's logins may do, said once at start when it is more than they
 * should: a superuser platform login (deployed code that got it would own the server), or deployments'
 * logins made by a superuser, or (in a process that launches deployments) no login able to make them:
 * deploys then fail, since deployed code is never given the platform's login.
 */
export async function checkDatabaseLogins(
  urls: { platform: string; admin: string; adminConfigured: boolean },
  options: { launchesDeployments: boolean },
  logger: Logger,
): Promise<void> {
  const attributes = async (url: string) => {
    const client = new pg.Client({ connectionString: url, application_name: 'agent-platform-setup' });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string; superuser: boolean; createrole: boolean }>(
        'SELECT rolname AS name, rolsuper AS superuser, rolcreaterole AS createrole FROM pg_roles WHERE rolname = current_user',
      );
      return rows[0]!;
    } finally {
      await client.end();
    }
  };
  const platform = await attributes(urls.platform);
  await warnOfOpenDatabases(urls.platform, logger);
  // Deployments' databases on a server of their own: what their logins could reach there is said too.
  if (!sameServer(urls.platform, urls.admin)) await warnOfOpenDatabases(urls.admin, logger);
  const admin = urls.admin === urls.platform ? platform : await attributes(urls.admin);
  if (platform.superuser) {
    logger.warn({ login: platform.name }, "the platform's database login is a superuser: give it a login that owns the database and is not a superuser (see the README's settings)");
  }
  if (admin.superuser) {
    logger.warn(
      { login: admin.name, via: urls.adminConfigured ? 'AGENT_PLATFORM_ADMIN_DATABASE_URL' : 'DATABASE_URL' },
      "deployed code's database logins are made by a superuser login: set AGENT_PLATFORM_ADMIN_DATABASE_URL to a login with CREATEROLE that is not a superuser",
    );
  } else if (!admin.createrole && options.launchesDeployments) {
    logger.warn(
      { login: admin.name },
      "no database login may make deployments' logins (CREATEROLE): deploys will fail until one can; set AGENT_PLATFORM_ADMIN_DATABASE_URL",
    );
  }
}

/** Whether two connection URLs reach one server (host, port and Unix socket folder alike). */
function sameServer(a: string, b: string): boolean {
  const where = (url: URL) => `${url.hostname}:${url.port || '5432'}:${url.searchParams.get('host') ?? ''}`;
  return where(new URL(a)) === where(new URL(b));
}

/**
 * What a deployment's login could still reach on an external server that the platform cannot close
 * itself, said once at start: databases any login may connect to (PostgreSQL's default; their locks,
 * catalogs and temporary tables are then a deployment's to use), and no connection slots reserved for
 * the platform's logins (a deployment that took every slot would keep the platform out).
 */
async function warnOfOpenDatabases(platformUrl: string, logger: Logger): Promise<void> {
  const client = new pg.Client({ connectionString: platformUrl, application_name: 'agent-platform-setup' });
  await client.connect();
  try {
    const { rows: open } = await client.query<{ name: string }>(
      `SELECT datname AS name FROM pg_database
        WHERE datallowconn AND datname <> current_database() AND has_database_privilege('public', oid, 'CONNECT')
          AND NOT starts_with(datname, 'agent_deployment_')
        ORDER BY datname`,
    );
    if (open.length) {
      logger.warn(
        { databases: open.map((row) => row.name) },
        `these databases let every login connect, deployments' logins included: close them (REVOKE CONNECT ON DATABASE … FROM PUBLIC, by their owner)`,
      );
    }
    const { rows } = await client.query<{ reserved: number; ours: boolean }>(
      `SELECT coalesce(current_setting('reserved_connections', true)::int, 0) AS reserved,
              CASE WHEN current_setting('server_version_num')::int >= 160000 THEN pg_has_role(current_user, 'pg_use_reserved_connections', 'USAGE') ELSE false END AS ours`,
    );
    if (!rows[0]!.reserved || !rows[0]!.ours) {
      logger.warn(
        { reservedConnections: rows[0]!.reserved, platformMayUseThem: rows[0]!.ours },
        "no connection slots are kept for the platform: deployments could take every slot of the server; set reserved_connections (PostgreSQL 16+) and GRANT pg_use_reserved_connections to the platform's and the admin's logins",
      );
    }
  } finally {
    await client.end();
  }
}
