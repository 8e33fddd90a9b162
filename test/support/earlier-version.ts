// A database as the versions before deployments had databases of their own migrated it: the
// platform's chain up to its last migration of that time (deployment databases too: one chain was
// applied to every database), recorded as their migrator recorded it.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { readMigrations } from '../../src/database/migrate.js';

/** The platform's last migration of those versions. */
export const LAST_EARLIER_MIGRATION = '20261128160000_deployment_usage';

/** Applies the platform's migrations of those versions to the database at `url` (this version's own later ones are left for its start). */
export async function migrateAsEarlierVersions(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE TABLE "_prisma_migrations" ("id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ, "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    for (const migration of readMigrations('platform').filter((m) => m.name <= LAST_EARLIER_MIGRATION)) {
      await client.query(migration.sql);
      await client.query('INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)', [
        randomUUID(),
        migration.checksum,
        migration.name,
      ]);
    }
  } finally {
    await client.end();
  }
}
