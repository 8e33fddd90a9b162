// SQL of the long-term store: the tables LangGraph's PostgresStore keeps for a deployment (one schema
// per deployment, `langgraph_store_<id>`, made by database/store-schema.ts), read and written here on the
// agent server's pool, so an item a graph writes through `store` is the item the API serves, and the
// other way round. Namespaces are
// stored as their labels joined by ':' (PostgresStore's layout, labels encoded: namespace-labels.ts); expired items are invisible at once
// and deleted by the `store.sweep` schedule. Beside PostgresStore's tables the platform keeps two of its
// own in the schema: the store's settings (the graph config's `store` section, written by the runtime,
// which alone can load the embedding function) and the embeddings of indexed items, ranked by cosine
// similarity with pgvector when the server has it, otherwise exactly over `real[]` in SQL.
import type pg from 'pg';
import { type Database, withTransaction } from '../../../db.js';
import { storeSchema } from '../../../database/store-schema.js';
import { decodeLabel, encodeLabel } from './namespace-labels.js';
import { isFilterOperator } from './store.schemas.js';

const table = (deploymentId: string) => `"${storeSchema(deploymentId)}".store`;
const settingsTable = (deploymentId: string) => `"${storeSchema(deploymentId)}".platform_store_settings`;
const embeddingsTable = (deploymentId: string) => `"${storeSchema(deploymentId)}".platform_store_embeddings`;
const SETUP_LOCK = 'agent-platform:langgraph-setup';

type Db = Pick<Database, 'pool'>;

/** How a deployment's store embeds items (`store.index`) and ages them (`store.ttl`). */
export type StoreSettings = {
  index: { dims: number; fields: string[]; vector: VectorColumn } | null;
  ttl: { defaultTtlMinutes: number | null; refreshOnRead: boolean | null; sweepIntervalMinutes: number | null } | null;
};
/** pgvector's `vector(dims)` when the server has the extension, else a plain `real[]`. */
export type VectorColumn = 'pgvector' | 'real[]';
const NO_SETTINGS: StoreSettings = { index: null, ttl: null };

/** One embedded text of an item: the field path it came from and its vector. */
export type ItemEmbedding = { field: string; text: string; vector: number[] };

export type StoreItemRow = { namespace_path: string; key: string; value: Record<string, unknown>; created_at: Date; updated_at: Date; score?: number | null };

/** A namespace as stored: its encoded labels joined by ':' (see namespace-labels.ts). */
export const pathOf = (namespace: string[]) => namespace.map(encodeLabel).join(':');
/** The namespace of a stored item. */
export const namespaceOf = (row: Pick<StoreItemRow, 'namespace_path'>): string[] => row.namespace_path.split(':').map(decodeLabel);
const LIVE = '(expires_at IS NULL OR expires_at > now())';
// A refresh keeps the item's time to live: PostgresStore sets expires_at = write time + ttl and the
// table's trigger sets updated_at on every write, so their difference is the ttl the item was given.
const REFRESH = 'expires_at = now() + (expires_at - updated_at)';

/** The deployment's store settings, as its runtime last wrote them (none before it first started). */
export async function readStoreSettings(db: Db, deploymentId: string): Promise<StoreSettings> {
  const { rows } = await db.pool.query<{ settings: StoreSettings }>(`SELECT settings FROM ${settingsTable(deploymentId)}`);
  return rows[0]?.settings ?? NO_SETTINGS;
}

/**
 * Records the graph config's store settings (the runtime, on start) and shapes the embeddings table to
 * them: pgvector's type when the extension is there or can be created, else `real[]`. Embeddings are
 * derived data, so a change of dimensions or of column type drops them (items put since are embedded
 * again; older ones rank after them until written again). Returns the settings as recorded.
 */
export async function writeStoreSettings(db: Db, deploymentId: string, wanted: { index: { dims: number; fields: string[] } | null; ttl: StoreSettings['ttl'] }): Promise<StoreSettings> {
  const client = await db.pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [SETUP_LOCK]);
    const previous = (await client.query<{ settings: StoreSettings }>(`SELECT settings FROM ${settingsTable(deploymentId)}`)).rows[0]?.settings;
    const index = wanted.index && { ...wanted.index, vector: await vectorColumn(client) };
    if (!index || previous?.index?.dims !== index.dims || previous.index.vector !== index.vector) {
      await client.query(`DROP TABLE IF EXISTS ${embeddingsTable(deploymentId)}`);
    }
    if (index) {
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${embeddingsTable(deploymentId)} (
           namespace_path text NOT NULL,
           key text NOT NULL,
           field_path text NOT NULL,
           text_content text NOT NULL,
           embedding ${index.vector === 'pgvector' ? `vector(${index.dims})` : 'real[]'} NOT NULL,
           PRIMARY KEY (namespace_path, key, field_path),
           FOREIGN KEY (namespace_path, key) REFERENCES ${table(deploymentId)} (namespace_path, key) ON DELETE CASCADE
         )`,
      );
    }
    const settings: StoreSettings = { index, ttl: wanted.ttl };
    await client.query(
      `INSERT INTO ${settingsTable(deploymentId)} (settings) VALUES ($1)
       ON CONFLICT (singleton) DO UPDATE SET settings = excluded.settings`,
      [JSON.stringify(settings)],
    );
    return settings;
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SETUP_LOCK]).catch(() => undefined);
    client.release();
  }
}

/** pgvector if the server has it installed or lets us create it, else `real[]`. */
async function vectorColumn(client: pg.PoolClient): Promise<VectorColumn> {
  const { rows } = await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
  if (!rows[0]) return 'real[]';
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS vector');
    return 'pgvector';
  } catch {
    // Installed but not ours to create (no privilege): exact cosine over real[] still works.
    return 'real[]';
  }
}

/** A vector as a query parameter for the column type. */
const vectorParam = (vector: number[], column: VectorColumn) => (column === 'pgvector' ? JSON.stringify(vector) : vector);
const vectorCast = (column: VectorColumn) => (column === 'pgvector' ? 'vector' : 'real[]');

/**
 * Creates or replaces an item and, when the store is indexed, its embeddings (the old ones go: a
 * replaced value is embedded anew, or not at all with `index: false`).
 */
export async function upsertItem(
  db: Db,
  deploymentId: string,
  item: { namespace: string[]; key: string; value: unknown; ttlMinutes: number | null },
  embeddings?: { column: VectorColumn; rows: ItemEmbedding[] },
): Promise<void> {
  const path = pathOf(item.namespace);
  const upsert = (client: Pick<pg.Pool, 'query'>) =>
    client.query(
      `INSERT INTO ${table(deploymentId)} (namespace_path, key, value, expires_at)
       VALUES ($1, $2, $3, now() + $4 * interval '1 minute')
       ON CONFLICT (namespace_path, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, updated_at = now()`,
      [path, item.key, JSON.stringify(item.value), item.ttlMinutes],
    );
  if (!embeddings) {
    await upsert(db.pool);
    return;
  }
  await withTransaction(db, async (client) => {
    await upsert(client);
    await client.query(`DELETE FROM ${embeddingsTable(deploymentId)} WHERE namespace_path = $1 AND key = $2`, [path, item.key]);
    for (const row of embeddings.rows) {
      await client.query(
        `INSERT INTO ${embeddingsTable(deploymentId)} (namespace_path, key, field_path, text_content, embedding) VALUES ($1, $2, $3, $4, $5::${vectorCast(embeddings.column)})
         ON CONFLICT (namespace_path, key, field_path) DO UPDATE SET text_content = excluded.text_content, embedding = excluded.embedding`,
        [path, item.key, row.field, row.text, vectorParam(row.vector, embeddings.column)],
      );
    }
  });
}

/** The live item, its time to live restarted when `refresh`. */
export async function selectItem(db: Db, deploymentId: string, namespace: string[], key: string, refresh: boolean): Promise<StoreItemRow | undefined> {
  const params = [pathOf(namespace), key];
  const columns = 'namespace_path, key, value, created_at, updated_at';
  // Only items with a ttl are touched: an UPDATE fires the table's trigger, which moves updated_at.
  const { rows } = refresh
    ? await db.pool.query<StoreItemRow>(
        `WITH refreshed AS (
           UPDATE ${table(deploymentId)} SET ${REFRESH} WHERE namespace_path = $1 AND key = $2 AND expires_at > now() RETURNING ${columns}
         )
         SELECT * FROM refreshed
         UNION ALL
         SELECT ${columns} FROM ${table(deploymentId)} WHERE namespace_path = $1 AND key = $2 AND expires_at IS NULL`,
        params,
      )
    : await db.pool.query<StoreItemRow>(`SELECT ${columns} FROM ${table(deploymentId)} WHERE namespace_path = $1 AND key = $2 AND ${LIVE}`, params);
  return rows[0];
}

export async function deleteItem(db: Db, deploymentId: string, namespace: string[], key: string): Promise<void> {
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
 * Live items under a namespace prefix, newest first. With `query`, only those whose value contains the
 * text (ranked by full-text relevance, then recency); with `vector` (an embedded query), every item,
 * the indexed ones first by their best field's cosine similarity (as LangGraph's stores rank), then
 * the rest. Refreshes the found items' ttl when `refresh`.
 */
export async function searchItems(
  db: Db,
  deploymentId: string,
  search: {
    namespacePrefix: string[];
    filter: Record<string, unknown>;
    query: string | null;
    vector?: { column: VectorColumn; query: number[] } | null;
    limit: number;
    offset: number;
    refresh: boolean;
  },
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
  let join = '';
  if (search.vector) {
    params.push(vectorParam(search.vector.query, search.vector.column));
    const q = `$${params.length}::${vectorCast(search.vector.column)}`;
    const similarity =
      search.vector.column === 'pgvector'
        ? `1 - (e.embedding <=> ${q})`
        : `(SELECT sum(a::float8 * b) / nullif(sqrt(sum(a::float8 * a)) * sqrt(sum(b::float8 * b)), 0) FROM unnest(e.embedding, ${q}) AS pair(a, b))`;
    join = `LEFT JOIN LATERAL (SELECT max(${similarity})::float8 AS similarity FROM ${embeddingsTable(deploymentId)} e
             WHERE e.namespace_path = s.namespace_path AND e.key = s.key) AS ranked ON true`;
    score = 'ranked.similarity';
    order = 'score DESC NULLS LAST, updated_at DESC';
  } else if (search.query) {
    params.push(search.query);
    const q = `$${params.length}`;
    conditions.push(`(to_tsvector('english', value::text) @@ plainto_tsquery('english', ${q}) OR strpos(lower(value::text), lower(${q})) > 0)`);
    score = `ts_rank(to_tsvector('english', value::text), plainto_tsquery('english', ${q}))::float8`;
    order = 'score DESC, updated_at DESC';
  }
  params.push(search.limit, search.offset);
  const { rows } = await db.pool.query<StoreItemRow>(
    `SELECT s.namespace_path, s.key, s.value, s.created_at, s.updated_at, ${score} AS score FROM ${table(deploymentId)} s ${join}
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
  db: Db,
  deploymentId: string,
  query: { prefix: string[]; suffix: string[]; maxDepth: number | null; limit: number; offset: number },
): Promise<string[][]> {
  const params: unknown[] = [];
  const conditions: string[] = [];
  query.prefix.forEach((label, index) => {
    if (label === '*') return;
    params.push(encodeLabel(label));
    conditions.push(`labels[${index + 1}] = $${params.length}`);
  });
  if (query.prefix.length) conditions.push(`cardinality(labels) >= ${query.prefix.length}`);
  query.suffix.forEach((label, index) => {
    if (label === '*') return;
    params.push(encodeLabel(label));
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
  return rows.map((row) => row.namespace.map(decodeLabel));
}

/**
 * Deletes the expired items of every deployment's store that is due (its config's
 * `sweep_interval_minutes` since its last sweep; every call without one); returns how many.
 */
export async function deleteExpiredItems(client: pg.Pool): Promise<number> {
  const { rows } = await client.query<{ table_schema: string; has_settings: boolean }>(
    `SELECT table_schema, bool_or(table_name = 'platform_store_settings') AS has_settings FROM information_schema.tables
     WHERE table_schema LIKE 'langgraph\\_store\\_%' AND table_name IN ('store', 'platform_store_settings') GROUP BY table_schema`,
  );
  let deleted = 0;
  for (const { table_schema: schema, has_settings: hasSettings } of rows) {
    if (hasSettings) {
      const due = await client.query(
        `UPDATE "${schema}".platform_store_settings SET swept_at = now()
         WHERE swept_at IS NULL OR settings -> 'ttl' ->> 'sweepIntervalMinutes' IS NULL
            OR swept_at <= now() - (settings -> 'ttl' ->> 'sweepIntervalMinutes')::float8 * interval '1 minute'`,
      );
      const { rows: recorded } = await client.query(`SELECT 1 FROM "${schema}".platform_store_settings`);
      // Not due (a settings row exists, and it was swept within its interval).
      if (due.rowCount === 0 && recorded[0]) continue;
    }
    const result = await client.query(`DELETE FROM "${schema}".store WHERE expires_at IS NOT NULL AND expires_at <= now()`);
    deleted += result.rowCount ?? 0;
  }
  return deleted;
}
