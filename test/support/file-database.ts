// Runs before every test file (vitest `setupFiles`): copies the migrated template (test/support/global-setup.ts)
// into a database of the file's own, which `databaseUrl()` in test/support/helpers.ts answers. Copying takes a
// fraction of a second. Global teardown removes them all at once.
import { randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { TEMPLATE_DATABASE, TEST_DATABASE_PREFIX } from './database-names.js';

const adminUrl = inject('adminDatabaseUrl');
const logins = inject('databaseLogins');
// Named after the test file, so a leftover or a slow query in pg_stat_activity says whose it is.
const fileName = basename(expect.getState().testPath ?? 'test', '.test.ts').replace(/[^a-z0-9]+/gi, '_').toLowerCase().slice(0, 32);
const name = `${TEST_DATABASE_PREFIX}${fileName}_${randomBytes(4).toString('hex')}`;

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
try {
  // Owned by the platform's login, as the installation's database is, and as closed to other logins
  // (deployments' among them) as the platform makes its own (deployment-database.ts).
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DATABASE}${logins.owner ? ` OWNER ${logins.owner}` : ''}`);
  await admin.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${name} FROM PUBLIC`);
  for (const login of new Set([logins.platform, logins.admin].map((url) => new URL(url).username))) await admin.query(`GRANT CONNECT ON DATABASE ${name} TO ${login}`);
} finally {
  await admin.end();
}

const onFileDatabase = (login: string) => {
  const url = new URL(login);
  url.pathname = `/${name}`;
  return url.toString();
};
// Read through databaseUrl() and adminLoginUrl() in test/support/helpers.ts; each test file runs in a process of its own.
process.env.TEST_FILE_DATABASE_URL = onFileDatabase(logins.platform);
process.env.TEST_FILE_ADMIN_DATABASE_URL = onFileDatabase(logins.admin);

