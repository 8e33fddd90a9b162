// LangGraph's checkpoint tables (schema `langgraph`, made by its Postgres saver) in an agent server's
// database: ground, because the platform makes them in the template every deployment's database is
// copied from, and the agent server in whatever database it runs on.
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type pg from 'pg';

export const CHECKPOINT_SCHEMA = 'langgraph';

const SETUP_LOCK = 'agent-platform:langgraph-setup';

// Per database: a process may run several agent servers (a platform process's local deployments).
const checkpointTables = new Map<string, Promise<void>>();

/** LangGraph's checkpoint tables (schema `langgraph`), created once per process and database under the set-up lock. */
export function ensureCheckpointTables(db: { pool: pg.Pool; url: string }): Promise<void> {
  let made = checkpointTables.get(db.url);
  if (made) return made;
  made = (async () => {
    const client = await db.pool.connect();
    try {
      // Concurrent first starts race on CREATE SCHEMA/TABLE; the advisory lock serialises them.
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [SETUP_LOCK]);
      await new PostgresSaver(db.pool, undefined, { schema: CHECKPOINT_SCHEMA }).setup();
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SETUP_LOCK]).catch(() => undefined);
      client.release();
    }
  })().catch((error: unknown) => {
    checkpointTables.delete(db.url);
    throw error;
  });
  checkpointTables.set(db.url, made);
  return made;
}
