// LangGraph's own persistence on the platform's PostgreSQL: checkpoints (schema `langgraph`, keyed by
// thread id, which is unique across deployments; the platform's own SQL on them is in
// services/threads/checkpoints.store.ts) and the long-term store (one schema per deployment, so one
// deployment's graphs never read another's memories).
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import pg from 'pg';
import { PreparingClient } from '../database/prepared-statements.js';
import { storeSchema } from '../services/store/store-items.store.js';
import { CHECKPOINT_SCHEMA } from '../services/threads/checkpoints.store.js';
import type { Persistence } from './graph-registry.js';
import { RunMetadataSaver } from './run-checkpointer.js';


export type RuntimePersistence = Persistence & {
  checkpointer: PostgresSaver;
  pool: pg.Pool;
  close(): Promise<void>;
};

/** Opens (and on first use creates) the checkpoint tables and the deployment's store. */
export async function openPersistence(databaseUrl: string, deploymentId: string, options: { poolSize: number }): Promise<RuntimePersistence> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: options.poolSize, application_name: 'agent-platform-checkpoints', Client: PreparingClient });
  pool.on('error', () => undefined);
  // Each checkpoint carries its run's metadata, as the reference server's checkpointer does (history filters on it).
  const checkpointer = new RunMetadataSaver(pool, undefined, { schema: CHECKPOINT_SCHEMA });
  const store = new PostgresStore({
    connectionOptions: { connectionString: databaseUrl, max: 2, application_name: 'agent-platform-store' },
    schema: storeSchema(deploymentId),
  });
  // Concurrent first starts race on CREATE SCHEMA/TABLE; an advisory lock serialises them.
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', ['agent-platform:langgraph-setup']);
    await checkpointer.setup();
    await store.setup();
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', ['agent-platform:langgraph-setup']).catch(() => undefined);
    client.release();
  }
  return {
    checkpointer,
    store,
    pool,
    async close() {
      await store.stop().catch(() => undefined);
      await pool.end();
    },
  };
}
