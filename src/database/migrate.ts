// Applies a migration chain's migration.sql files in order, recording them in Prisma's own
// _prisma_migrations table, so `prisma migrate deploy` stays compatible where it can run. No engine
// binary is needed. An advisory lock serialises processes that start at the same time.
//
// Two chains, one per database: the platform's (prisma/migrations, from schema.prisma), applied to the
// platform's database, and the agent server's (src/agent-server/prisma/migrations), applied by each
// agent server to its own database (and to the template deployments' databases are copied from). A
// deployed agent server's sandbox sees only src/, which holds its chain.
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';

/** Where each chain's migrations are. */
export const MIGRATION_CHAINS = {
  platform: new URL('../../prisma/migrations/', import.meta.url).pathname,
  'agent-server': new URL('../agent-server/prisma/migrations/', import.meta.url).pathname,
} as const;

export type MigrationChain = keyof typeof MIGRATION_CHAINS;

const MIGRATION_LOCK_ID = 0x6167_706c; // "agpl"

/**
 * The SQLSTATE a migration raises to be held back: not applied now (rolled back, nothing recorded),
 * nor any migration after it, and tried again at the next start. The platform's drop of the
 * agent-server tables it kept before deployments had databases of their own is held back while a
 * deployment's rows remain there (platform/services/deployments/shared-agent-rows.ts moves them).
 */
const HELD_BACK = 'AP101';

export type Migration = { name: string; sql: string; checksum: string };

export function readMigrations(chain: MigrationChain): Migration[] {
  const dir = MIGRATION_CHAINS[chain];
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(dir, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/**
 * Applies every pending migration of `chain` to the database at `url`; returns the names applied.
 * Throws if an applied migration was edited. A migration held back (HELD_BACK) stops the run there,
 * said in the log.
 */
export async function migrateDatabase(url: string, logger: Logger, chain: MigrationChain): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const { rows } = await client.query<{ migration_name: string; checksum: string }>(
      'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const applied = new Map(rows.map((row) => [row.migration_name, row.checksum]));
    const done: string[] = [];
    for (const migration of readMigrations(chain)) {
      const checksum = applied.get(migration.name);
      if (checksum !== undefined) {
        if (checksum !== migration.checksum) {
          throw new Error(`Migration ${migration.name} was changed after it was applied; add a new migration instead.`);
        }
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
           VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), migration.checksum, migration.name],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        if ((error as { code?: string }).code === HELD_BACK) {
          logger.info({ migration: migration.name, reason: (error as Error).message }, 'a migration is held back until its precondition holds');
          break;
        }
        throw new Error(`Migration ${migration.name} failed: ${(error as Error).message}`);
      }
      done.push(migration.name);
    }
    if (done.length) logger.info({ migrations: done, chain }, 'database migrated');
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.end();
  }
}
