// SQL of the agent-server rows earlier versions kept in the platform's own database (the "shared"
// tables agent_assistants, agent_assistant_versions, agent_threads, agent_runs, run_events,
// agent_crons, LangGraph's checkpoint schema `langgraph` and one store schema `langgraph_store_<id>`
// per deployment) and of their copy into a deployment's own database, whose tables have the same
// shape (src/agent-server/prisma). Read here until the platform's migration that drops them applies.
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { Database } from '../../../db.js';
import { CHECKPOINT_SCHEMA } from '../../../database/checkpoint-schema.js';
import { storeSchema } from '../../../database/store-schema.js';

const STORE_SCHEMA_PATTERN = 'langgraph\\_store\\_%';
const CHECKPOINT_TABLES = ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes'];

/** Whether the platform's database still has the shared agent-server tables (the drop has not applied yet). */
export async function sharedTablesExist(db: Pick<Database, 'pool'>): Promise<boolean> {
  const { rows } = await db.pool.query<{ found: boolean }>("SELECT to_regclass('public.agent_threads') IS NOT NULL AS found");
  return rows[0]!.found;
}

/** The deployments with rows in the shared tables or a store schema with items, oldest row first. */
export async function deploymentsWithSharedRows(db: Pick<Database, 'pool'>): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `SELECT deployment_id AS id FROM agent_assistants UNION SELECT deployment_id FROM agent_threads
     UNION SELECT deployment_id FROM agent_runs UNION SELECT deployment_id FROM agent_crons`,
  );
  const ids = new Set(rows.map((row) => row.id));
  for (const schema of await storeSchemas(db)) {
    const { rows: items } = await db.pool.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM "${schema}".store) AS any`);
    if (items[0]!.any) ids.add(uuidOfStoreSchema(schema));
  }
  return [...ids];
}

async function storeSchemas(db: Pick<Database, 'pool'>): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    "SELECT n.nspname AS name FROM pg_namespace n WHERE n.nspname LIKE $1 AND to_regclass(quote_ident(n.nspname) || '.store') IS NOT NULL",
    [STORE_SCHEMA_PATTERN],
  );
  return rows.map((row) => row.name);
}

/** langgraph_store_<32 hex> → the deployment's id. */
const uuidOfStoreSchema = (schema: string) => schema.slice('langgraph_store_'.length).replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');

/** A deployment's row in the platform's deployments, deleted or not; undefined when it has none. */
export async function findDeploymentRecord(db: Pick<Database, 'pool'>, deploymentId: string): Promise<{ source: string; deleted: boolean } | undefined> {
  const { rows } = await db.pool.query<{ source: string; deleted: boolean }>('SELECT source, deleted_at IS NOT NULL AS deleted FROM deployments WHERE id = $1', [deploymentId]);
  return rows[0];
}

/** The type of a table's column as DDL writes it (`vector(1536)`, `real[]`), or undefined. */
async function columnType(db: pg.ClientBase, schema: string, table: string, column: string): Promise<string | undefined> {
  const { rows } = await db.query<{ type: string }>(
    `SELECT format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
      WHERE a.attrelid = to_regclass(quote_ident($1) || '.' || quote_ident($2)) AND a.attname = $3 AND NOT a.attisdropped`,
    [schema, table, column],
  );
  return rows[0]?.type;
}

/** The columns a table has, in order (none when it does not exist). */
async function columnsOf(db: pg.ClientBase | pg.Pool, schema: string, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT a.attname AS name FROM pg_attribute a
      WHERE a.attrelid = to_regclass(quote_ident($1) || '.' || quote_ident($2)) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [schema, table],
  );
  return rows.map((row) => row.name);
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * What of the shared rows is a deployment's, table by table, as WHERE clauses on the platform's
 * database (the id is a validated uuid, written into the statement: COPY takes no parameters), and
 * columns read otherwise than as they are (`read`). Runs still pending come without their job (it is
 * in the platform's queue), with when it was due (`kwargs.start_after`, when `jobsDue` says the
 * platform's queue is there to ask): their agent server enqueues them again.
 */
function deploymentParts(deploymentId: string, jobsDue = false): { schema: string; table: string; where: string; read?: Record<string, string> }[] {
  const id = `'${deploymentId}'::uuid`;
  const threads = `(SELECT id::text FROM public.agent_threads WHERE deployment_id = ${id} UNION SELECT thread_id::text FROM public.agent_runs WHERE deployment_id = ${id})`;
  const store = storeSchema(deploymentId);
  return [
    { schema: 'public', table: 'agent_assistants', where: `deployment_id = ${id}` },
    { schema: 'public', table: 'agent_assistant_versions', where: `deployment_id = ${id}` },
    { schema: 'public', table: 'agent_threads', where: `deployment_id = ${id}` },
    {
      schema: 'public',
      table: 'agent_runs',
      where: `deployment_id = ${id}`,
      read: {
        job_id: "CASE WHEN status = 'pending' THEN NULL ELSE job_id END",
        kwargs: jobsDue
          ? `CASE WHEN status = 'pending' THEN kwargs || coalesce((SELECT jsonb_build_object('start_after', j.start_after) FROM pgboss.job j
               WHERE j.name = 'runs.execute.' || agent_runs.deployment_id AND j.id::text = agent_runs.job_id), '{}') ELSE kwargs END`
          : 'kwargs',
      },
    },
    { schema: 'public', table: 'run_events', where: `run_id IN (SELECT id FROM public.agent_runs WHERE deployment_id = ${id})` },
    { schema: 'public', table: 'agent_crons', where: `deployment_id = ${id}` },
    ...CHECKPOINT_TABLES.map((table) => ({ schema: CHECKPOINT_SCHEMA, table, where: `thread_id IN ${threads}` })),
    { schema: store, table: 'store', where: 'true' },
    { schema: store, table: 'platform_store_settings', where: 'true' },
    { schema: store, table: 'platform_store_embeddings', where: 'true' },
  ];
}

/**
 * The deployment's store embeddings table, made in `target` as it is in the platform's database (the
 * type of its vectors: pgvector's, or real[]), when it has one there; false when `target` cannot make
 * it (pgvector missing there): its embeddings are then left out, as when the index's settings change.
 */
export async function copyEmbeddingsTable(source: pg.PoolClient, target: pg.ClientBase, deploymentId: string): Promise<boolean> {
  const schema = storeSchema(deploymentId);
  const type = await columnType(source, schema, 'platform_store_embeddings', 'embedding');
  if (!type) return true;
  try {
    if (type.startsWith('vector')) await target.query('CREATE EXTENSION IF NOT EXISTS vector');
    await target.query(
      `CREATE TABLE IF NOT EXISTS ${ident(schema)}.platform_store_embeddings (
         namespace_path text NOT NULL, key text NOT NULL, field_path text NOT NULL, text_content text NOT NULL, embedding ${type} NOT NULL,
         PRIMARY KEY (namespace_path, key, field_path),
         FOREIGN KEY (namespace_path, key) REFERENCES ${ident(schema)}.store (namespace_path, key) ON DELETE CASCADE
       )`,
    );
    return true;
  } catch {
    return false;
  }
}

/**
 * Copies a deployment's shared rows into `target` (its own database, inside the caller's transaction
 * there), each table's through a temporary table: rows it has already (each graph's default assistant,
 * made again by a version that gave it its own database) are kept. Tables `target` does not have
 * (an embeddings table it could not make) are left out. Returns the rows copied, by table.
 */
export async function copyDeploymentRows(source: pg.PoolClient, target: pg.ClientBase, deploymentId: string): Promise<Record<string, number>> {
  const copied: Record<string, number> = {};
  let n = 0;
  const { rows } = await source.query<{ jobs: boolean }>("SELECT to_regclass('pgboss.job') IS NOT NULL AS jobs");
  for (const part of deploymentParts(deploymentId, rows[0]!.jobs)) {
    const from = await columnsOf(source, part.schema, part.table);
    const into = await columnsOf(target, part.schema, part.table);
    const columns = into.filter((column) => from.includes(column));
    if (!from.length || !columns.length) continue;
    const qualified = `${ident(part.schema)}.${ident(part.table)}`;
    const list = columns.map(ident).join(', ');
    const temporary = `moving_${n++}`;
    await target.query(`CREATE TEMPORARY TABLE ${temporary} (LIKE ${qualified} INCLUDING DEFAULTS) ON COMMIT DROP`);
    const read = columns.map((column) => (part.read?.[column] ? `${part.read[column]} AS ${ident(column)}` : ident(column))).join(', ');
    // Text COPY: every value in its text form, which the same column type reads back.
    await pipeline(
      source.query(copyTo(`COPY (SELECT ${read} FROM ${qualified} WHERE ${part.where}) TO STDOUT`)),
      target.query(copyFrom(`COPY ${temporary} (${list}) FROM STDIN`)),
    );
    const { rowCount } = await target.query(`INSERT INTO ${qualified} (${list}) SELECT ${list} FROM ${temporary} ON CONFLICT DO NOTHING`);
    copied[`${part.schema === 'public' ? '' : `${part.schema}.`}${part.table}`] = rowCount ?? 0;
  }
  return copied;
}

/** Deletes a deployment's shared rows (and its store schema) from the platform's database, in one transaction. */
export async function deleteDeploymentRows(client: pg.PoolClient, deploymentId: string): Promise<void> {
  const parts = deploymentParts(deploymentId).filter((part) => part.schema !== storeSchema(deploymentId));
  await client.query('BEGIN');
  try {
    // Dependents first: the events, checkpoints and versions name the runs, threads and assistants.
    const order = ['run_events', ...CHECKPOINT_TABLES, 'agent_assistant_versions', 'agent_crons', 'agent_runs', 'agent_threads', 'agent_assistants'];
    for (const table of order) {
      const part = parts.find((candidate) => candidate.table === table)!;
      if (!(await columnsOf(client, part.schema, part.table)).length) continue;
      await client.query(`DELETE FROM ${ident(part.schema)}.${ident(part.table)} WHERE ${part.where}`);
    }
    await client.query(`DROP SCHEMA IF EXISTS ${ident(storeSchema(deploymentId))} CASCADE`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

/**
 * Deletes the shared rows that belong to no deployment any more: events of runs that are gone, and,
 * once every deployment's rows are gone, checkpoints of no thread. Returns how many rows.
 */
export async function deleteOrphanedRows(db: Pick<Database, 'pool'>): Promise<number> {
  let deleted = (await db.pool.query('DELETE FROM run_events e WHERE NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = e.run_id)')).rowCount ?? 0;
  const { rows } = await db.pool.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM agent_threads) OR EXISTS (SELECT 1 FROM agent_runs) AS any');
  if (!rows[0]!.any) {
    for (const table of CHECKPOINT_TABLES) {
      if ((await columnsOf(db.pool, CHECKPOINT_SCHEMA, table)).length) deleted += (await db.pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.${table}`)).rowCount ?? 0;
    }
  }
  return deleted;
}
