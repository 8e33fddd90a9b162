// LangGraph's own persistence on the platform's PostgreSQL: checkpoints (schema `langgraph`, keyed by
// thread id, which is unique across deployments) and the long-term store (one schema per deployment,
// so one deployment's graphs never read another's memories).
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import pg from 'pg';
import { PreparingClient } from '../../database/prepared-statements.js';
import type { Persistence } from './graph-registry.js';
import { RunMetadataSaver } from './run-checkpointer.js';

export const CHECKPOINT_SCHEMA = 'langgraph';
export const storeSchema = (deploymentId: string) => `langgraph_store_${deploymentId.replace(/-/g, '')}`;

export type RuntimePersistence = Persistence & {
  checkpointer: PostgresSaver;
  pool: pg.Pool;
  close(): Promise<void>;
};

/** Opens (and on first use creates) the checkpoint tables and the deployment's store. */
export async function openPersistence(databaseUrl: string, deploymentId: string, options: { poolSize: number }): Promise<RuntimePersistence> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: options.poolSize, application_name: 'agent-platform-checkpoints', Client: PreparingClient });
  pool.on('error', () => undefined);
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

/** Deletes every checkpoint of a thread (all namespaces). */
export async function deleteThreadCheckpoints(pool: pg.Pool, threadIds: string[]): Promise<void> {
  if (!threadIds.length) return;
  await pool.query(
    `DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoint_writes WHERE thread_id = ANY($1::text[]);
     `.trim(),
    [threadIds],
  );
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoint_blobs WHERE thread_id = ANY($1::text[])`, [threadIds]);
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = ANY($1::text[])`, [threadIds]);
}

/** Removes the checkpoints a run wrote after `afterCheckpointId` (checkpoint ids sort by time). */
export async function deleteCheckpointsAfter(pool: pg.Pool, threadId: string, afterCheckpointId: string | null): Promise<void> {
  const after = afterCheckpointId ?? '';
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoint_writes WHERE thread_id = $1 AND checkpoint_id > $2`, [threadId, after]);
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = $1 AND checkpoint_id > $2`, [threadId, after]);
}

/** Copies every checkpoint of one thread to another (thread copy). */
export async function copyThreadCheckpoints(pool: pg.Pool, fromThreadId: string, toThreadId: string): Promise<void> {
  for (const table of ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes']) {
    const { rows } = await pool.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
      [CHECKPOINT_SCHEMA, table],
    );
    const columns = rows.map((row) => row.column_name);
    const select = columns.map((column) => (column === 'thread_id' ? '$2' : `"${column}"`)).join(', ');
    await pool.query(
      `INSERT INTO ${CHECKPOINT_SCHEMA}.${table} (${columns.map((c) => `"${c}"`).join(', ')}) SELECT ${select} FROM ${CHECKPOINT_SCHEMA}.${table} WHERE thread_id = $1`,
      [fromThreadId, toThreadId],
    );
  }
}
