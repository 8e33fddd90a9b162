// The upgrade from the versions before deployments had databases of their own, where a deployment's
// assistants and their versions, threads, runs and their events, crons, checkpoints and store sat in
// the platform's own database: when the platform starts, it moves each deployment's rows into that
// deployment's own database, then applies the migration that drops those tables there, which is held
// back while any deployment's rows remain (src/database/migrate.ts). For each deployment: its database
// and login are made if they are not yet (deployment-database.ts), migrated with the agent server's
// chain, and given its rows in one transaction (rows it has already are kept); then they are deleted
// here in one transaction, so a start interrupted between the two copies nothing twice the next time.
// Its pending runs arrive without their jobs and its crons without their schedules: its agent server
// enqueues and schedules them again when it starts (agent-server/runtime/recovery.ts,
// agent-server/services/crons/crons.service.ts). Rows of a deleted deployment, or of one the platform
// has no record of, go with the tables.
import pg from 'pg';
import type { Deps } from '../../../context.js';
import { createPool } from '../../../database/pool.js';
import { ensureCheckpointTables } from '../../../database/checkpoint-schema.js';
import { migrateDatabase } from '../../../database/migrate.js';
import { ensureStoreSchema, storeSchema } from '../../../database/store-schema.js';
import { ensureDeploymentDatabase } from './deployment-database.js';
import {
  copyDeploymentRows,
  copyEmbeddingsTable,
  deleteDeploymentRows,
  deleteOrphanedRows,
  deploymentsWithSharedRows,
  findDeploymentRecord,
  sharedTablesExist,
} from './shared-agent-rows.store.js';

// Platform processes starting together move each deployment once: the others wait, then find nothing.
const MOVE_LOCK = 'agent-platform:shared-agent-rows';

/**
 * Moves every deployment's rows out of the platform's shared agent-server tables into its own
 * database, then migrates the platform's database (the tables' drop, and what follows it, applies
 * once they are empty). A deployment whose rows cannot be moved (its database cannot be made, say)
 * keeps them here, said in the log, and the drop stays held back until a later start moves them.
 * Nothing to do once the tables are gone. Called by the entry points after the platform's
 * dependencies are up (start, serve, migrate).
 */
export async function moveSharedAgentRows(deps: Pick<Deps, 'db' | 'adminLogin' | 'secrets' | 'config' | 'logger'>): Promise<void> {
  if (!(await sharedTablesExist(deps.db))) return;
  const lock = new pg.Client({ connectionString: deps.db.url, application_name: 'agent-platform-upgrade' });
  lock.on('error', () => undefined);
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock(hashtext($1))', [MOVE_LOCK]);
    if (!(await sharedTablesExist(deps.db))) return;
    for (const deploymentId of await deploymentsWithSharedRows(deps.db)) {
      const record = await findDeploymentRecord(deps.db, deploymentId);
      try {
        if (!record || record.deleted) {
          await discard(deps, deploymentId);
          deps.logger.warn({ deploymentId, deleted: record?.deleted ?? false }, "dropped the platform's shared agent-server rows of a deployment that is deleted or unknown");
          continue;
        }
        const copied = await moveDeployment(deps, deploymentId, record.source === 'local');
        deps.logger.info({ deploymentId, copied }, "moved a deployment's rows from the platform's shared tables into its own database");
      } catch (error) {
        deps.logger.error({ err: error, deploymentId }, "could not move a deployment's rows into its own database: they stay in the platform's, and the move is tried again at the next start");
      }
    }
    const orphans = await deleteOrphanedRows(deps.db);
    if (orphans) deps.logger.warn({ rows: orphans }, "dropped shared agent-server rows that belonged to no thread or run");
  } finally {
    await lock.query('SELECT pg_advisory_unlock(hashtext($1))', [MOVE_LOCK]).catch(() => undefined);
    await lock.end().catch(() => undefined);
  }
  await migrateDatabase(deps.db.url, deps.logger, 'platform');
}

/** Copies a deployment's shared rows into its own database, then deletes them here. Returns the rows copied, by table. */
async function moveDeployment(deps: Pick<Deps, 'db' | 'adminLogin' | 'secrets' | 'config' | 'logger'>, deploymentId: string, local: boolean): Promise<Record<string, number>> {
  const { url } = await ensureDeploymentDatabase(deps, deploymentId, { local });
  // As its owner, the deployment's own login: what it makes there is its own.
  await migrateDatabase(url, deps.logger, 'agent-server');
  const target = createPool({ connectionString: url, max: 2, application_name: 'agent-platform-upgrade' });
  const source = await deps.db.pool.connect();
  try {
    await ensureCheckpointTables({ pool: target, url });
    const { rows } = await source.query<{ store: boolean }>('SELECT to_regclass($1) IS NOT NULL AS store', [`"${storeSchema(deploymentId)}".store`]);
    const client = await target.connect();
    try {
      if (rows[0]!.store) {
        await ensureStoreSchema({ pool: target, url }, deploymentId);
        if (!(await copyEmbeddingsTable(source, client, deploymentId))) {
          deps.logger.warn({ deploymentId }, "its store's embeddings are left out (its database cannot make pgvector's type): items are embedded again when written");
        }
      }
      await client.query('BEGIN');
      let copied: Record<string, number>;
      try {
        copied = await copyDeploymentRows(source, client, deploymentId);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
      await deleteDeploymentRows(source, deploymentId);
      return copied;
    } finally {
      client.release();
    }
  } finally {
    source.release();
    await target.end();
  }
}

/** Deletes a deleted or unknown deployment's shared rows. */
async function discard(deps: Pick<Deps, 'db'>, deploymentId: string): Promise<void> {
  const source = await deps.db.pool.connect();
  try {
    await deleteDeploymentRows(source, deploymentId);
  } finally {
    source.release();
  }
}
