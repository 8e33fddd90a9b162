// The DDL an agent server needs in whatever database it runs on (a deployed revision's own database,
// `serve`'s, a local deployment's): checkpoint tables, its store schema and settings, the threads'
// default TTL and its run queue. Run by the runtime before it takes runs.
import type { PgBoss } from 'pg-boss';
import { ensureCheckpointTables } from '../../../database/checkpoint-schema.js';
import type { Database } from '../../../db.js';
import type { GraphConfig } from '../../../contracts/graph-config.js';
import { runQueueFor } from '../runs/run-queue.js';
import { type StoreSettings, writeStoreSettings } from '../store/store-items.store.js';
import { ensureStoreSchema } from '../../../database/store-schema.js';
import { recordThreadTtl } from './served-deployment.store.js';

/**
 * Everything of a deployment's persistence that needs DDL, from its graph config (read as JSON; no
 * deployment code runs here): the checkpoint tables, its store schema, the store's settings (the
 * embeddings table shaped to `store.index.dims`), the threads' default TTL (on the deployment's row,
 * where the sweep reads it) and, when the job queue is given, its run queue. Idempotent. Returns the
 * store's settings as recorded.
 */
export async function setUpDeploymentDatabase(
  db: Database,
  deploymentId: string,
  config: Pick<GraphConfig, 'store' | 'threadTtl'>,
  boss?: PgBoss,
): Promise<StoreSettings> {
  await ensureCheckpointTables(db);
  await ensureStoreSchema(db, deploymentId);
  const { index, ttl } = config.store ?? {};
  const settings = await writeStoreSettings(db, deploymentId, {
    // The runtime loads the embedding function `index.embed` names, and fails to start without it.
    index: index ? { dims: index.dims, fields: index.fields ?? ['$'] } : null,
    ttl: ttl ? { defaultTtlMinutes: ttl.default_ttl ?? null, refreshOnRead: ttl.refresh_on_read ?? null, sweepIntervalMinutes: ttl.sweep_interval_minutes ?? null } : null,
  });
  await recordThreadTtl(db, deploymentId, config.threadTtl);
  if (boss) await runQueueFor(boss, deploymentId).ensure();
  return settings;
}
