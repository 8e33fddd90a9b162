// LangGraph's own persistence on the platform's PostgreSQL: checkpoints (schema `langgraph`, keyed by
// thread id, which is unique across deployments; the platform's own SQL on them is in
// agent-server/services/threads/checkpoints.store.ts) and the long-term store (one schema per deployment, so one
// deployment's graphs never read another's memories).
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';
import { readStoreSettings } from '../services/store/store-items.store.js';
import type { AtRestCipher } from '../services/encryption/at-rest.js';
import type { Embedder } from '../services/store/store-operations.js';
import { CHECKPOINT_SCHEMA } from '../../database/checkpoint-schema.js';
import type { Persistence } from './graph-registry.js';
import { PlatformStore } from './platform-store.js';
import { RunMetadataSaver } from './run-checkpointer.js';

export type RuntimePersistence = Persistence & {
  checkpointer: PostgresSaver;
  store: PlatformStore;
  /** The store's embedding function, when the graph config indexes the store. */
  embedder?: Embedder;
  pool: pg.Pool;
};

/**
 * Opens the checkpointer and the deployment's store on tables the platform set up beforehand
 * (platform/services/deployments/deployment-database.ts: a deployed runtime's login may not create them), with the store's settings
 * as recorded there. Both use the runtime's own pool (`db`, closed by its owner): a checkpoint's read
 * or write is one short statement among the run's others (its claim, its events, its outcome), and a
 * pool of their own kept connections open beside it that the runtime's pool already had free.
 */
export async function openPersistence(
  db: { pool: pg.Pool; url: string },
  deploymentId: string,
  options: { embedder?: Embedder; encryption?: AtRestCipher },
): Promise<RuntimePersistence> {
  // Each checkpoint carries its run's metadata, as the reference server's checkpointer does (history filters on it).
  const checkpointer = new RunMetadataSaver(db.pool, { schema: CHECKPOINT_SCHEMA, encryption: options.encryption });
  const settings = await readStoreSettings(db, deploymentId);
  const embedder = settings.index ? options.embedder : undefined;
  const unindexed = () => Promise.reject(new Error('The store is not indexed'));
  const store = new PlatformStore({ db, deploymentId, settings, embedder: embedder ?? { documents: unindexed, query: unindexed }, encryption: options.encryption });
  return { checkpointer, store, embedder, pool: db.pool };
}
