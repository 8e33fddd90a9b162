// The long-term store of a deployment (LangGraph's BaseStore, as graphs see it through `store`):
// namespaced JSON items with optional time to live. Every call acts in the request's deployment, so
// deployments never see each other's items. When the graph config indexes the store, texts are
// embedded by the deployment's runtime (the API never loads deployment code) and `query` ranks by
// vector similarity.
import { AppError } from '../../errors.js';
import { askRuntime } from '../deployments/runtime-client.js';
import type { AgentServerContext } from '../deployments/deployment-scope.js';
import { parseInput } from '../validate.js';
import { StoreItemDelete, StoreItemGetQuery, StoreItemPut, StoreNamespacesRequest, StoreSearchRequest } from './store.schemas.js';
import * as sql from './store-items.store.js';
import { type Embedder, getStoreItem, putStoreItem, searchStoreItems, type StoreScope } from './store-operations.js';

export type StoreItem = {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  /** Search relevance, when searched with a query. */
  score?: number;
};

const toItem = (row: sql.StoreItemRow): StoreItem => ({
  namespace: sql.namespaceOf(row),
  key: row.key,
  value: row.value,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  ...(row.score != null ? { score: row.score } : {}),
});

/** Embeds through the deployment's runtime; UNAVAILABLE when none runs. */
const runtimeEmbedder = (ctx: AgentServerContext): Embedder => ({
  documents: async (texts) => (await askRuntime(ctx, { kind: 'store-embed', texts, query: false })) as number[][],
  query: async (text) => ((await askRuntime(ctx, { kind: 'store-embed', texts: [text], query: true })) as number[][])[0]!,
});

async function tables(ctx: AgentServerContext): Promise<string> {
  await sql.ensureStoreTables(ctx.db, ctx.deployment.deploymentId);
  return ctx.deployment.deploymentId;
}

async function scope(ctx: AgentServerContext): Promise<StoreScope> {
  const { deploymentId } = ctx.deployment;
  await sql.ensureStoreTables(ctx.db, deploymentId);
  return { db: ctx.db, deploymentId, settings: await sql.readStoreSettings(ctx.db, deploymentId), embedder: runtimeEmbedder(ctx) };
}

/**
 * Creates or replaces an item. `ttl` in minutes (none: the config's `default_ttl`, else never);
 * `index`: the fields to embed, or false. VALIDATION_FAILED for an
 * empty namespace or labels that are empty or hold '.'; PAYLOAD_TOO_LARGE for a value over the body limit.
 */
export async function putItem(ctx: AgentServerContext, input: unknown): Promise<void> {
  const body = parseInput(StoreItemPut, input, 'body');
  // REST bodies are bounded by the body parser already; this bounds GraphQL's and in-process callers'.
  if (Buffer.byteLength(JSON.stringify(body.value)) > ctx.config.bodyLimitBytes) throw new AppError('PAYLOAD_TOO_LARGE', 'The item value is too large.');
  await putStoreItem(await scope(ctx), { namespace: body.namespace, key: body.key, value: body.value, index: body.index, ttlMinutes: body.ttl });
}

/**
 * One live item, or null. Reading restarts its time to live unless `refresh_ttl` is false (unset: the
 * config's `refresh_on_read`, which defaults to true as in LangGraph).
 */
export async function getItem(ctx: AgentServerContext, input: unknown): Promise<StoreItem | null> {
  const query = parseInput(StoreItemGetQuery, input, 'query');
  const row = await getStoreItem(await scope(ctx), query.namespace, query.key, query.refresh_ttl);
  return row ? toItem(row) : null;
}

/** Deletes an item; deleting one that does not exist is not an error. */
export async function deleteItem(ctx: AgentServerContext, input: unknown): Promise<void> {
  const body = parseInput(StoreItemDelete, input, 'body');
  await sql.deleteItem(ctx.db, await tables(ctx), body.namespace, body.key);
}

/**
 * Live items under a namespace prefix, filtered by value fields; `query` ranks by vector similarity
 * (`score`) when the store is indexed, else keeps the items that match it as text.
 */
export async function searchItems(ctx: AgentServerContext, input: unknown): Promise<StoreItem[]> {
  const body = parseInput(StoreSearchRequest, input ?? {}, 'body');
  const rows = await searchStoreItems(await scope(ctx), {
    namespacePrefix: body.namespace_prefix,
    filter: body.filter ?? {},
    query: body.query || null,
    limit: body.limit,
    offset: body.offset,
    refresh: body.refresh_ttl,
  });
  return rows.map(toItem);
}

/** The namespaces that hold live items, matching a prefix and suffix, cut to `max_depth` labels. */
export async function listNamespaces(ctx: AgentServerContext, input: unknown): Promise<string[][]> {
  const body = parseInput(StoreNamespacesRequest, input ?? {}, 'body');
  return sql.selectNamespaces(ctx.db, await tables(ctx), {
    prefix: body.prefix ?? [],
    suffix: body.suffix ?? [],
    maxDepth: body.max_depth ?? null,
    limit: body.limit,
    offset: body.offset,
  });
}
