// The long-term store of a deployment (LangGraph's BaseStore, as graphs see it through `store`):
// namespaced JSON items with optional time to live. Every call acts in the request's deployment, so
// deployments never see each other's items. When the graph config indexes the store, texts are
// embedded by the deployment's runtime (the API never loads deployment code) and `query` ranks by
// vector similarity.
import { AppError } from '../../../errors.js';
import { askRuntime } from '../served-deployment/runtime-client.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { type AuthFilter, type AuthorizedContext, AuthRefusal, authorize, matchesFilter } from '../custom-auth/custom-auth.js';
import { parseInput } from '../../../validate.js';
import { StoreItemDelete, StoreItemGetQuery, StoreItemPut, StoreNamespacesRequest, StoreSearchRequest } from './store.schemas.js';
import * as sql from './store-items.store.js';
import { ensureStoreSchema } from '../../../database/store-schema.js';
import { type Embedder, getStoreItem, putStoreItem, searchStoreItems, type StoreScope } from './store-operations.js';
import { encryptionOf } from '../encryption/at-rest.js';
import type { StoreItem } from '../../../contracts/agent-server-api.js';

export type { StoreItem };


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
  await ensureStoreSchema(ctx.db, ctx.deployment.deploymentId);
  return ctx.deployment.deploymentId;
}

async function scope(ctx: AgentServerContext): Promise<StoreScope> {
  const { deploymentId } = ctx.deployment;
  await ensureStoreSchema(ctx.db, deploymentId);
  return { db: ctx.db, deploymentId, settings: await sql.readStoreSettings(ctx.db, deploymentId), embedder: runtimeEmbedder(ctx), encryption: encryptionOf(ctx.config) };
}

/** What a custom-auth filter judges an item by, as on the reference server: its value's fields, its namespace and key. */
const authView = (namespace: string[], key: string | undefined, value: Record<string, unknown> | undefined) => ({ ...(value ?? {}), namespace, ...(key === undefined ? {} : { key }) });

/**
 * Asks the caller's custom-auth handler of `store:<action>`; returns its filter and the namespace it
 * left in `value` (a handler may scope the caller to its own namespace), checked as the request's is.
 */
async function authorizeStore(ctx: AuthorizedContext, action: string, value: Record<string, unknown> & { namespace: string[] }): Promise<{ filter?: AuthFilter; namespace: string[] }> {
  if (!ctx.auth) return { namespace: value.namespace };
  const filter = await authorize(ctx, 'store', action, value);
  const { namespace } = value;
  if (!Array.isArray(namespace) || !namespace.every((label) => typeof label === 'string' && label !== '' && !label.includes('.'))) {
    ctx.logger.warn({ event: `store:${action}` }, 'custom auth: a store handler left a namespace that is not a list of labels; the request is refused (403)');
    throw new AuthRefusal(403, 'Forbidden');
  }
  return { filter, namespace };
}

// A filtered search reads pages of candidates and keeps those the filter passes, up to this many.
const AUTH_SCAN_PAGE = 1000;
const AUTH_SCAN_LIMIT = 10_000;

/**
 * Creates or replaces an item. `ttl` in minutes (none: the config's `default_ttl`, else never);
 * `index`: the fields to embed, or false. VALIDATION_FAILED for an
 * empty namespace or labels that are empty or hold '.'; PAYLOAD_TOO_LARGE for a value over the body limit.
 */
export async function putItem(ctx: AuthorizedContext, input: unknown): Promise<void> {
  const body = parseInput(StoreItemPut, input, 'body');
  // REST bodies are bounded by the body parser already; this bounds GraphQL's and in-process callers'.
  if (Buffer.byteLength(JSON.stringify(body.value)) > ctx.config.bodyLimitBytes) throw new AppError('PAYLOAD_TOO_LARGE', 'The item value is too large.');
  const { filter, namespace } = await authorizeStore(ctx, 'put', { namespace: [...body.namespace], key: body.key, value: body.value });
  const where = await scope(ctx);
  if (filter) {
    // Another user's item is not there for this caller; an item the caller may not own is refused.
    const existing = await getStoreItem(where, namespace, body.key, false);
    if (existing && !matchesFilter(authView(sql.namespaceOf(existing), existing.key, existing.value), filter)) throw AppError.notFound('Item not found');
    if (!matchesFilter(authView(namespace, body.key, body.value), filter)) throw AppError.forbidden('Not authorized');
  }
  await putStoreItem(where, { namespace, key: body.key, value: body.value, index: body.index, ttlMinutes: body.ttl });
}

/**
 * One live item, or null. Reading restarts its time to live unless `refresh_ttl` is false (unset: the
 * config's `refresh_on_read`, which defaults to true as in LangGraph).
 */
export async function getItem(ctx: AuthorizedContext, input: unknown): Promise<StoreItem | null> {
  const query = parseInput(StoreItemGetQuery, input, 'query');
  const { filter, namespace } = await authorizeStore(ctx, 'get', { namespace: [...query.namespace], key: query.key });
  const row = await getStoreItem(await scope(ctx), namespace, query.key, query.refresh_ttl);
  if (row && !matchesFilter(authView(sql.namespaceOf(row), row.key, row.value), filter)) throw AppError.notFound('Item not found');
  return row ? toItem(row) : null;
}

/** Deletes an item; deleting one that does not exist is not an error. */
export async function deleteItem(ctx: AuthorizedContext, input: unknown): Promise<void> {
  const body = parseInput(StoreItemDelete, input, 'body');
  const { filter, namespace } = await authorizeStore(ctx, 'delete', { namespace: [...body.namespace], key: body.key });
  if (filter) {
    const existing = await getStoreItem(await scope(ctx), namespace, body.key, false);
    if (existing && !matchesFilter(authView(sql.namespaceOf(existing), existing.key, existing.value), filter)) throw AppError.notFound('Item not found');
    if (!existing && !matchesFilter(authView(namespace, body.key, undefined), filter)) throw AppError.forbidden('Not authorized');
  }
  await sql.deleteItem(ctx.db, await tables(ctx), namespace, body.key);
}

/**
 * Live items under a namespace prefix, filtered by value fields; `query` ranks by vector similarity
 * (`score`) when the store is indexed, else keeps the items that match it as text.
 */
export async function searchItems(ctx: AuthorizedContext, input: unknown): Promise<StoreItem[]> {
  const body = parseInput(StoreSearchRequest, input ?? {}, 'body');
  const asked = { namespace: [...body.namespace_prefix], filter: body.filter ?? null, limit: body.limit, offset: body.offset, query: body.query ?? null };
  const { filter, namespace } = await authorizeStore(ctx, 'search', asked);
  const where = await scope(ctx);
  const search = { namespacePrefix: namespace, filter: body.filter ?? {}, query: body.query || null, refresh: body.refresh_ttl };
  if (!filter) return (await searchStoreItems(where, { ...search, limit: body.limit, offset: body.offset })).map(toItem);
  const wanted = body.offset + body.limit;
  const kept = await scanFiltered(wanted, (limit, offset) => searchStoreItems(where, { ...search, limit, offset }), (row) =>
    matchesFilter(authView(sql.namespaceOf(row), row.key, row.value), filter),
  );
  return kept.slice(body.offset, wanted).map(toItem);
}

/** Reads pages of candidates until `wanted` pass `keep` or none are left; BAD_REQUEST past AUTH_SCAN_LIMIT candidates. */
async function scanFiltered<T>(wanted: number, page: (limit: number, offset: number) => Promise<T[]>, keep: (candidate: T) => boolean): Promise<T[]> {
  const kept: T[] = [];
  let scanned = 0;
  while (kept.length < wanted) {
    if (scanned >= AUTH_SCAN_LIMIT) throw AppError.badRequest('This search, filtered by the deployment’s auth, reads too many items: narrow its namespace or filter.');
    const limit = Math.min(AUTH_SCAN_PAGE, AUTH_SCAN_LIMIT - scanned);
    const candidates = await page(limit, scanned);
    scanned += candidates.length;
    kept.push(...candidates.filter(keep));
    if (candidates.length < limit) break;
  }
  return kept;
}

/** The namespaces that hold live items, matching a prefix and suffix, cut to `max_depth` labels. */
export async function listNamespaces(ctx: AuthorizedContext, input: unknown): Promise<string[][]> {
  const body = parseInput(StoreNamespacesRequest, input ?? {}, 'body');
  const asked = { namespace: [...(body.prefix ?? [])], suffix: body.suffix ?? null, max_depth: body.max_depth ?? null, limit: body.limit, offset: body.offset };
  const { filter, namespace } = await authorizeStore(ctx, 'list_namespaces', asked);
  const deploymentId = await tables(ctx);
  const list = { prefix: namespace, suffix: body.suffix ?? [], maxDepth: body.max_depth ?? null };
  if (!filter) return sql.selectNamespaces(ctx.db, deploymentId, { ...list, limit: body.limit, offset: body.offset });
  const wanted = body.offset + body.limit;
  const kept = await scanFiltered(wanted, (limit, offset) => sql.selectNamespaces(ctx.db, deploymentId, { ...list, limit, offset }), (labels) =>
    matchesFilter(authView(labels, undefined, undefined), filter),
  );
  return kept.slice(body.offset, wanted);
}
