// The store's behaviour on top of its SQL, shared by the API's store service and the store graphs get
// in the runtime (agent-server/runtime/platform-store.ts), so both apply the same settings: an item is embedded when
// the store is indexed, a put without ttl takes the configured default, a read refreshes per
// `refresh_on_read`, and `query` ranks by vector similarity when indexed, else matches text.
import { getTextAtPath } from '@langchain/langgraph-checkpoint';
import type { Database } from '../../../db.js';
import type { AtRestCipher } from '../encryption/at-rest.js';
import * as sql from './store-items.store.js';

type Db = Pick<Database, 'pool'>;

/** Turns texts into vectors: the deployment's embedding function (only its runtime can load it). */
export type Embedder = {
  documents(texts: string[]): Promise<number[][]>;
  query(text: string): Promise<number[]>;
};

/** Where a store's calls act: its deployment, settings, embedder and encryption at rest (when configured). */
export type StoreScope = { db: Db; deploymentId: string; settings: sql.StoreSettings; embedder: Embedder; encryption?: AtRestCipher };

/** An item as read, its value opened (when stored sealed by encryption at rest). */
async function opened<Row extends { value: Record<string, unknown> }>(scope: StoreScope, row: Row): Promise<Row> {
  return scope.encryption ? { ...row, value: await scope.encryption.openJson(row.value, STORE_VALUE) } : row;
}

const STORE_VALUE = { model: 'store', field: 'value' } as const;

/**
 * The texts of a value to embed: the fields `index` names, else the configured ones (`$` is the whole
 * value as JSON). A path that yields several texts gives `path.0`, `path.1`… (LangGraph's layout).
 */
function textsToEmbed(value: Record<string, unknown>, index: false | string[] | null | undefined, fields: string[]): { field: string; text: string }[] {
  if (index === false) return [];
  const texts: { field: string; text: string }[] = [];
  for (const path of index ?? fields) {
    const found = getTextAtPath(value, path);
    if (found.length === 1) texts.push({ field: path, text: found[0]! });
    else found.forEach((text, i) => texts.push({ field: `${path}.${i}`, text }));
  }
  return texts;
}

export async function putStoreItem(
  scope: StoreScope,
  item: { namespace: string[]; key: string; value: Record<string, unknown>; index?: false | string[] | null; ttlMinutes?: number | null },
): Promise<void> {
  const ttlMinutes = item.ttlMinutes ?? scope.settings.ttl?.defaultTtlMinutes ?? null;
  let embeddings: { column: sql.VectorColumn; rows: sql.ItemEmbedding[] } | undefined;
  if (scope.settings.index) {
    const texts = textsToEmbed(item.value, item.index, scope.settings.index.fields);
    const vectors = texts.length ? await scope.embedder.documents(texts.map((text) => text.text)) : [];
    embeddings = { column: scope.settings.index.vector, rows: texts.map((text, i) => ({ ...text, vector: vectors[i]! })) };
  }
  // Embedded from the value as given; stored sealed (a filter on a sealed value no longer matches).
  const value = scope.encryption ? await scope.encryption.sealJson(item.value, STORE_VALUE) : item.value;
  await sql.upsertItem(scope.db, scope.deploymentId, { namespace: item.namespace, key: item.key, value, ttlMinutes }, embeddings);
}

/** One live item; reading restarts its ttl unless `refresh` (or, unset, `refresh_on_read`) is false. */
export async function getStoreItem(scope: StoreScope, namespace: string[], key: string, refresh?: boolean | null) {
  const row = await sql.selectItem(scope.db, scope.deploymentId, namespace, key, refresh ?? scope.settings.ttl?.refreshOnRead ?? true);
  return row && (await opened(scope, row));
}

/**
 * Searches live items. A search refreshes ttls when asked, or when the config's `refresh_on_read` says
 * so; without a ttl config it does not (so listing memories does not keep them alive forever).
 */
export async function searchStoreItems(
  scope: StoreScope,
  search: { namespacePrefix: string[]; filter: Record<string, unknown>; query: string | null; limit: number; offset: number; refresh?: boolean | null },
) {
  const vector = search.query && scope.settings.index ? { column: scope.settings.index.vector, query: await scope.embedder.query(search.query) } : null;
  const rows = await sql.searchItems(scope.db, scope.deploymentId, {
    ...search,
    query: vector ? null : search.query,
    vector,
    refresh: search.refresh ?? scope.settings.ttl?.refreshOnRead ?? false,
  });
  return Promise.all(rows.map((row) => opened(scope, row)));
}
