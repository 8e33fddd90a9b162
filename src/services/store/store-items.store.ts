// SQL of the long-term store: the tables LangGraph's PostgresStore keeps for a deployment (one schema
// per deployment, `langgraph_store_<id>`), read and written here on the platform's pool, so an item a
// graph writes through `store` is the item the API serves, and the other way round. Namespaces are
// stored as their labels joined by ':' (PostgresStore's layout); expired items are invisible at once
// and deleted by the `store.sweep` schedule.
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import type pg from 'pg';
import type { Database } from '../../db.js';
import { isFilterOperator } from './store.schemas.js';

export const storeSchema = (deploymentId: string) => `langgraph_store_${deploymentId.replace(/-/g, '')}`;
const table = (deploymentId: string) => `"${storeSchema(deploymentId)}".store`;
const SETUP_LOCK = 'agent-platform:langgraph-setup';

export type StoreItemRow = { namespace_path: string; key: string; value: Record<string, unknown>; created_at: Date; updated_at: Date; score?: number | null };

const pathOf = (namespace: string[]) => namespace.join(':');
const LIVE = '(expires_at IS NULL OR expires_at > now())';
// A refresh keeps the item's time to live: PostgresStore sets expires_at = write time + ttl and the
// table's trigger sets updated_at on every write, so their difference is the ttl the item was given.
const REFRESH = 'expires_at = now() + (expires_at - updated_at)';

const ready = new Set<string>();

/**
 * Creates the deployment's store tables if its runtime has not yet (the API may be asked before the
 * runtime first starts), with PostgresStore's own migrations under the lock the runtimes take.
 */
export async function ensureStoreTables(db: Database, deploymentId: string): Promise<void> {
  if (ready.has(deploymentId)) return;
  const { rows } = await db.pool.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2', [storeSchema(deploymentId), 'store']);
  if (!rows[0]) {
    const store = new PostgresStore({ connectionOptions: { connectionString: db.url, max: 1, application_name: 'agent-platform-store' }, schema: storeSchema(deploymentId) });
    const client = await db.pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [SETUP_LOCK]);
      await store.setup();
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SETUP_LOCK]).catch(() => undefined);
      client.release();
      await store.stop().catch(() => undefined);
    }
  }
  ready.add(deploymentId);
}

export async function upsertItem(db: Database, deploymentId: string, item: { namespace: string[]; key: string; value: unknown; ttlMinutes: number | null }): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${table(deploymentId)} (namespace_path, key, value, expires_at)
     VALUES ($1, $2, $3, now() + $4 * interval '1 minute')
     ON CONFLICT (namespace_path, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, updated_at = now()`,
    [pathOf(item.namespace), item.key, JSON.stringify(item.value), item.ttlMinutes],
  );
}

/** The live item, its time to live restarted when `refresh`. */
export async function selectItem(db: Database, deploymentId: string, namespace: string[], key: string, refresh: boolean): Promise<StoreItemRow | undefined> {
  const { rows } = refresh
    ? await db.pool.query<StoreItemRow>(
        `UPDATE ${table(deploymentId)} SET ${REFRESH} WHERE namespace_path = $1 AND key = $2 AND ${LIVE}
         RETURNING namespace_path, key, value, created_at, updated_at`,
        [pathOf(namespace), key],
      )
    : await db.pool.query<StoreItemRow>(
        `SELECT namespace_path, key, value, created_at, updated_at FROM ${table(deploymentId)} WHERE namespace_path = $1 AND key = $2 AND ${LIVE}`,
        [pathOf(namespace), key],
      );
  return rows[0];
}

export async function deleteItem(db: Database, deploymentId: string, namespace: string[], key: string): Promise<void> {
  await db.pool.query(`DELETE FROM ${table(deploymentId)} WHERE namespace_path = $1 AND key = $2`, [pathOf(namespace), key]);
}

const COMPARISONS = { $eq: '=', $ne: '<>', $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' } as const;

/** SQL conditions for a search filter: plain values match by containment, operators compare as jsonb. */
function filterConditions(filter: Record<string, unknown>, params: unknown[]): string[] {
  const conditions: string[] = [];
  for (const [field, expected] of Object.entries(filter)) {
    const operators = expected && typeof expected === 'object' && !Array.isArray(expected) ? Object.entries(expected) : [];
    if (operators.length && operators.every(([name]) => isFilterOperator(name))) {
      for (const [name, operand] of operators) {
        params.push(field, JSON.stringify(operand));
        conditions.push(`value -> $${params.length - 1} ${COMPARISONS[name as keyof typeof COMPARISONS]} $${params.length}::jsonb`);
      }
    } else {
      params.push(JSON.stringify({ [field]: expected }));
      conditions.push(`value @> $${params.length}::jsonb`);
    }
  }
  return conditions;
}

/**
 * Live items under a namespace prefix, newest first; with `query`, only those whose value contains the
 * text (ranked by full-text relevance, then recency). Refreshes the found items' ttl when `refresh`.
 */
export async function searchItems(
  db: Database,
  deploymentId: string,
  search: { namespacePrefix: string[]; filter: Record<string, unknown>; query: string | null; limit: number; offset: number; refresh: boolean },
): Promise<StoreItemRow[]> {
  const params: unknown[] = [];
  const conditions = [LIVE];
  if (search.namespacePrefix.length) {
    params.push(pathOf(search.namespacePrefix));
    // A prefix of whole labels: ["a"] finds a and a:b, never ab.
    conditions.push(`(namespace_path = $${params.length} OR starts_with(namespace_path, $${params.length} || ':'))`);
  }
  conditions.push(...filterConditions(search.filter, params));
  let score = 'NULL::float8';
  let order = 'updated_at DESC';
  if (search.query) {
    params.push(search.query);
    const q = `$${params.length}`;
    conditions.push(`(to_tsvector('english', value::text) @@ plainto_tsquery('english', ${q}) OR strpos(lower(value::text), lower(${q})) > 0)`);
    score = `ts_rank(to_tsvector('english', value::text), plainto_tsquery('english', ${q}))::float8`;
    order = 'score DESC, updated_at DESC';
  }
  params.push(search.limit, search.offset);
  const { rows } = await db.pool.query<StoreItemRow>(
    `SELECT namespace_path, key, value, created_at, updated_at, ${score} AS score FROM ${table(deploymentId)}
     WHERE ${conditions.join(' AND ')} ORDER BY ${order} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  );
  if (search.refresh && rows.length) {
    await db.pool.query(
      `UPDATE ${table(deploymentId)} s SET ${REFRESH}
       FROM unnest($1::text[], $2::text[]) AS found(namespace_path, key)
       WHERE s.namespace_path = found.namespace_path AND s.key = found.key AND s.expires_at IS NOT NULL`,
      [rows.map((row) => row.namespace_path), rows.map((row) => row.key)],
    );
  }
  return rows;
}

/**
 * The distinct namespaces of live items, cut to `maxDepth` labels, matching `prefix` and `suffix`
 * (where `*` matches any label), in order.
 */
export async function selectNamespaces(
  db: Database,
  deploymentId: string,
  query: { prefix: string[]; suffix: string[]; maxDepth: number | null; limit: number; offset: number },
): Promise<string[][]> {
  const params: unknown[] = [];
  const conditions: string[] = [];
  query.prefix.forEach((label, index) => {
    if (label === '*') return;
    params.push(label);
    conditions.push(`labels[${index + 1}] = $${params.length}`);
  });
  if (query.prefix.length) conditions.push(`cardinality(labels) >= ${query.prefix.length}`);
  query.suffix.forEach((label, index) => {
    if (label === '*') return;
    params.push(label);
    conditions.push(`labels[cardinality(labels) - ${query.suffix.length - 1 - index}] = $${params.length}`);
  });
  if (query.suffix.length) conditions.push(`cardinality(labels) >= ${query.suffix.length}`);
  params.push(query.maxDepth, query.limit, query.offset);
  const n = params.length;
  const { rows } = await db.pool.query<{ namespace: string[] }>(
    `SELECT DISTINCT CASE WHEN $${n - 2}::int IS NULL THEN labels ELSE labels[1:$${n - 2}::int] END AS namespace
     FROM (SELECT DISTINCT string_to_array(namespace_path, ':') AS labels FROM ${table(deploymentId)} WHERE ${LIVE}) AS namespaces
     ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}
     ORDER BY namespace LIMIT $${n - 1} OFFSET $${n}`,
    params,
  );
  return rows.map((row) => row.namespace);
}

/** Deletes the expired items of every deployment's store; returns how many. */
export async function deleteExpiredItems(client: pg.Pool): Promise<number> {
  const { rows } = await client.query<{ table_schema: string }>(
    `SELECT table_schema FROM information_schema.tables WHERE table_schema LIKE 'langgraph\\_store\\_%' AND table_name = 'store'`,
  );
  let deleted = 0;
  for (const { table_schema: schema } of rows) {
    const result = await client.query(`DELETE FROM "${schema}".store WHERE expires_at IS NOT NULL AND expires_at <= now()`);
    deleted += result.rowCount ?? 0;
  }
  return deleted;
}
