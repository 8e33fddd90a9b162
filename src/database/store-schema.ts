// The tables of a deployment's long-term store, in its agent server's database: LangGraph's
// PostgresStore's (schema `langgraph_store_<id>`, one per deployment) and, beside them, the store's
// settings. Ground, as checkpoint-schema.ts is: the agent server makes them where it runs, and the
// platform where it moves a deployment's store there from its own database (an earlier version's).
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import type pg from 'pg';

/** The schema of a deployment's store. */
export const storeSchema = (deploymentId: string) => `langgraph_store_${deploymentId.replace(/-/g, '')}`;

const SETUP_LOCK = 'agent-platform:langgraph-setup';

// Per database and deployment: a process may run several agent servers.
const ready = new Set<string>();

/**
 * Creates the deployment's store tables (PostgresStore's own migrations) and its settings table, if
 * they are not there yet, under the lock the runtimes take.
 */
export async function ensureStoreSchema(db: { pool: pg.Pool; url: string }, deploymentId: string): Promise<void> {
  const key = `${db.url}\n${deploymentId}`;
  if (ready.has(key)) return;
  const schema = storeSchema(deploymentId);
  const { rows } = await db.pool.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2', [schema, 'platform_store_settings']);
  if (!rows[0]) {
    const store = new PostgresStore({ connectionOptions: { connectionString: db.url, max: 1, application_name: 'agent-platform-store' }, schema });
    const client = await db.pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [SETUP_LOCK]);
      await store.setup();
      await client.query(
        `CREATE TABLE IF NOT EXISTS "${schema}".platform_store_settings (
           singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
           settings jsonb NOT NULL,
           swept_at timestamptz
         )`,
      );
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SETUP_LOCK]).catch(() => undefined);
      client.release();
      await store.stop().catch(() => undefined);
    }
  }
  ready.add(key);
}
