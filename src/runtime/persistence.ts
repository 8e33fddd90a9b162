// LangGraph's own persistence on the platform's PostgreSQL: checkpoints (schema `langgraph`, keyed by
// thread id, which is unique across deployments; the platform's own SQL on them is in
// services/threads/checkpoints.store.ts) and the long-term store (one schema per deployment, so one
// deployment's graphs never read another's memories).
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { PreparingClient } from '../database/prepared-statements.js';
import { ensureStoreTables, writeStoreSettings } from '../services/store/store-items.store.js';
import type { Embedder } from '../services/store/store-operations.js';
import { CHECKPOINT_SCHEMA } from '../services/threads/checkpoints.store.js';
import type { StoreConfig } from './graph-config.js';
import type { Persistence } from './graph-registry.js';
import { PlatformStore } from './platform-store.js';
import { RunMetadataSaver } from './run-checkpointer.js';

export type RuntimePersistence = Persistence & {
  checkpointer: PostgresSaver;
  store: PlatformStore;
  /** The store's embedding function, when the graph config indexes the store. */
  embedder?: Embedder;
  pool: pg.Pool;
  close(): Promise<void>;
};

/**
 * Opens (and on first use creates) the checkpoint tables and the deployment's store, and records the
 * config's store settings (index, ttl) where the API reads them.
 */
export async function openPersistence(
  databaseUrl: string,
  deploymentId: string,
  options: { poolSize: number; store?: StoreConfig; embedder?: Embedder },
): Promise<RuntimePersistence> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: options.poolSize, application_name: 'agent-platform-checkpoints', Client: PreparingClient });
  pool.on('error', () => undefined);
  // Each checkpoint carries its run's metadata, as the reference server's checkpointer does (history filters on it).
  const checkpointer = new RunMetadataSaver(pool, undefined, { schema: CHECKPOINT_SCHEMA });
  // Concurrent first starts race on CREATE SCHEMA/TABLE; an advisory lock serialises them.
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', ['agent-platform:langgraph-setup']);
    await checkpointer.setup();
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', ['agent-platform:langgraph-setup']).catch(() => undefined);
    client.release();
  }
  const db = { pool, url: databaseUrl };
  await ensureStoreTables(db, deploymentId);
  const { index, ttl } = options.store ?? {};
  const settings = await writeStoreSettings(db, deploymentId, {
    index: index && options.embedder ? { dims: index.dims, fields: index.fields ?? ['$'] } : null,
    ttl: ttl ? { defaultTtlMinutes: ttl.default_ttl ?? null, refreshOnRead: ttl.refresh_on_read ?? null, sweepIntervalMinutes: ttl.sweep_interval_minutes ?? null } : null,
  });
  const embedder = settings.index ? options.embedder : undefined;
  const unindexed = () => Promise.reject(new Error('The store is not indexed'));
  const store = new PlatformStore({ db, deploymentId, settings, embedder: embedder ?? { documents: unindexed, query: unindexed } });
  return {
    checkpointer,
    store,
    embedder,
    pool,
    close: () => pool.end(),
  };
}
