// Threads: the state of a conversation. The row caches the latest values and interrupts (written by
// the runtime after each run) so lists and GraphQL need no graph; state and history read LangGraph's
// checkpoints through the thread's graph, so they are asked of the deployment's runtime.
import { AppError } from '../../../errors.js';
import { isUuid, newId } from '../../../ids.js';
import type { Checkpoint, ThreadState } from '../served-deployment/runtime-protocol.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { type AuthFilter, type AuthorizedContext, authorize, filterDocument, matchesFilter } from '../custom-auth/custom-auth.js';
import { CRON_FIRE_QUEUE } from '../crons/cron-schedule.js';
import { deleteThreadCrons } from '../crons/crons.store.js';
import { askRuntime } from '../served-deployment/runtime-client.js';
import { parseInput } from '../../../validate.js';
import { type SearchPage, searchPage } from '../search-page.js';
import { deleteRunsEvents, deleteThreadsRuns, threadHasRunInFlight } from '../runs/runs.store.js';
import { copyThreadCheckpoints, deleteThreadCheckpoints, threadStorage, type ThreadStorage } from './checkpoints.store.js';
import { openJson, sealJson } from '../encryption/at-rest.js';
import type { ThreadRow } from './threads.store.js';
import {
  ThreadCountRequest,
  ThreadCreate,
  ThreadHistoryRequest,
  ThreadPatch,
  ThreadSearchRequest,
  ThreadStateCheckpointRequest,
  ThreadStateUpdate,
  type ThreadStatus,
} from './threads.schemas.js';
import type { Thread } from '../../../contracts/agent-server-api.js';

export type { Thread };

type Json = Record<string, unknown>;


const field = (name: string) => ({ model: 'thread', field: name }) as const;

// A row's JSON columns are stored sealed when encryption at rest is on (encryption/at-rest.ts).
const toThread = async (ctx: AgentServerContext, row: ThreadRow): Promise<Thread> => ({
  threadId: row.id,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  metadata: await openJson(ctx.config, field('metadata'), row.metadata ?? {}),
  status: row.status,
  config: await openJson(ctx.config, field('config'), row.config ?? {}),
  values: await openJson(ctx.config, field('values'), row.values),
  interrupts: await openJson(ctx.config, field('interrupts'), row.interrupts ?? {}),
  error: row.error,
});

/** The reference server's text, which clients match on. */
export const threadNotFound = (threadId: string) => `Thread with ID ${threadId} not found`;

/** Creates a thread from typed input (see createThread). */
export async function startThread(ctx: AuthorizedContext, thread: { threadId?: string; metadata?: unknown }): Promise<Thread> {
  return createThread(ctx, { thread_id: thread.threadId, metadata: thread.metadata });
}

/** Creates a thread; CONFLICT when `thread_id` exists (unless if_exists=do_nothing). `supersteps` seed its state. */
export async function createThread(ctx: AuthorizedContext, input: unknown): Promise<Thread> {
  const body = parseInput(ThreadCreate, input, 'body');
  const id = body.thread_id?.toLowerCase() ?? newId();
  // The project's handler may refuse, or change the metadata (typically: stamp the owner on it).
  const asked = { thread_id: id, metadata: { ...(body.metadata ?? {}) }, if_exists: body.if_exists ?? null };
  const filter = await authorize(ctx, 'threads', 'create', asked);
  const metadata = Object.fromEntries(Object.entries(asked.metadata ?? {}).filter(([, value]) => value !== undefined));
  const { rows } = await ctx.db.pool.query<ThreadRow>(
    `INSERT INTO agent_threads (id, deployment_id, metadata, ttl_minutes, updated_at) VALUES ($1, $2, $3, $4, now())
     ON CONFLICT (id) DO NOTHING RETURNING *`,
    [id, ctx.deployment.deploymentId, await sealJson(ctx.config, field('metadata'), metadata), body.ttl ?? null],
  );
  if (!rows[0]) {
    const existing = await findThread(ctx, id);
    if (existing && body.if_exists === 'do_nothing' && matchesFilter(existing.metadata, filter)) return existing;
    throw AppError.conflict('Thread already exists');
  }
  let thread = await toThread(ctx, rows[0]);
  if (body.supersteps?.length) {
    await askRuntime(ctx, { kind: 'seed-thread-state', threadId: id, graphId: graphOf(thread), supersteps: body.supersteps });
    thread = await getThread(ctx, id);
  }
  return thread;
}

async function findThread(ctx: AgentServerContext, threadId: string): Promise<Thread | undefined> {
  if (!isUuid(threadId)) return undefined;
  const { rows } = await ctx.db.pool.query<ThreadRow>('SELECT * FROM agent_threads WHERE id = $1 AND deployment_id = $2', [
    threadId,
    ctx.deployment.deploymentId,
  ]);
  return rows[0] ? await toThread(ctx, rows[0]) : undefined;
}

/**
 * One thread; NOT_FOUND otherwise (also for another deployment's thread, and for one the caller's
 * custom-auth handler of `threads:<action>` filters out; FORBIDDEN when it refuses the action).
 */
export async function getThread(ctx: AuthorizedContext, threadId: string, action: 'read' | 'update' | 'delete' = 'read', value: Json = {}): Promise<Thread> {
  // The handler gets the caller's own object, so what it changes there (a stamped metadata) is what the
  // caller stores; a copy lost it (the Agent Server's advisory "auth mutations not applied").
  const filter = await authorize(ctx, 'threads', action, Object.assign(value, { thread_id: threadId }));
  const thread = await findThread(ctx, threadId);
  if (!thread || !matchesFilter(thread.metadata, filter)) throw AppError.notFound(threadNotFound(threadId));
  return thread;
}

function filters(
  ctx: AgentServerContext,
  query: { metadata?: Json | null; values?: Json | null; status?: string | null; ids?: string[] | null },
  authFilter?: AuthFilter,
) {
  const where = ['deployment_id = $1'];
  const params: unknown[] = [ctx.deployment.deploymentId];
  const add = (clause: (n: number) => string, value: unknown) => {
    params.push(value);
    where.push(clause(params.length));
  };
  if (query.metadata && Object.keys(query.metadata).length) add((n) => `metadata @> $${n}::jsonb`, JSON.stringify(query.metadata));
  if (query.values && Object.keys(query.values).length) add((n) => `"values" @> $${n}::jsonb`, JSON.stringify(query.values));
  if (query.status) add((n) => `status = $${n}`, query.status);
  if (query.ids?.length) add((n) => `id = ANY($${n}::uuid[])`, query.ids);
  const owned = filterDocument(authFilter);
  if (owned) add((n) => `metadata @> $${n}::jsonb`, owned);
  return { where: where.join(' AND '), params };
}

/** Threads matching metadata/values (containment), status and ids; with the total count. */
export async function searchThreads(ctx: AuthorizedContext, input: unknown): Promise<SearchPage<Thread>> {
  const query = parseInput(ThreadSearchRequest, input, 'body');
  const authFilter = await authorize(ctx, 'threads', 'search', { ...query });
  const { where, params } = filters(ctx, query, authFilter);
  const column = query.sort_by === 'thread_id' ? 'id' : (query.sort_by ?? 'created_at');
  const order = query.sort_order === 'asc' ? 'ASC' : 'DESC';
  const { rows } = await ctx.db.pool.query<ThreadRow & { total: string }>(
    `SELECT *, count(*) OVER () AS total FROM agent_threads WHERE ${where} ORDER BY ${column} ${order}, id ${order} LIMIT ${query.limit} OFFSET ${query.offset}`,
    params,
  );
  return searchPage(await Promise.all(rows.map((row) => toThread(ctx, row))), rows[0] ? Number(rows[0].total) : 0, query);
}

/** How many threads match. */
export async function countThreads(ctx: AuthorizedContext, input: unknown): Promise<number> {
  const query = parseInput(ThreadCountRequest, input, 'body');
  const authFilter = await authorize(ctx, 'threads', 'search', { ...query, limit: 0, offset: 0 });
  const { where, params } = filters(ctx, query, authFilter);
  const { rows } = await ctx.db.pool.query<{ count: string }>(`SELECT count(*) FROM agent_threads WHERE ${where}`, params);
  return Number(rows[0]!.count);
}

/** Merges metadata into a thread and sets its TTL when given (the TTL counts from now, as from any update). */
export async function updateThread(ctx: AuthorizedContext, threadId: string, input: unknown): Promise<Thread> {
  const body = parseInput(ThreadPatch, input, 'body');
  const asked = { metadata: { ...(body.metadata ?? {}) } };
  await getThread(ctx, threadId, 'update', asked);
  const { rows } = await ctx.db.pool.query<ThreadRow>(
    'UPDATE agent_threads SET metadata = metadata || $2::jsonb, ttl_minutes = COALESCE($3, ttl_minutes), updated_at = now() WHERE id = $1 RETURNING *',
    [threadId, JSON.stringify(await sealJson(ctx.config, field('metadata'), asked.metadata ?? {})), body.ttl ?? null],
  );
  return await toThread(ctx, rows[0]!);
}

/**
 * Deletes threads with their runs, stream events and checkpoints. Runs still executing are cancelled
 * first (the runtime stops them). Used by thread delete and assistant delete (`delete_threads`).
 */
export async function deleteThreadsWhere(ctx: AgentServerContext, where: { ids?: string[]; assistant_id?: string }): Promise<number> {
  const params: unknown[] = [ctx.deployment.deploymentId];
  let clause: string;
  if (where.ids) {
    params.push(where.ids);
    clause = 'id = ANY($2::uuid[])';
  } else {
    params.push(JSON.stringify({ assistant_id: where.assistant_id }));
    clause = 'metadata @> $2::jsonb';
  }
  const { rows } = await ctx.db.pool.query<{ id: string }>(`DELETE FROM agent_threads WHERE deployment_id = $1 AND ${clause} RETURNING id`, params);
  const ids = rows.map((row) => row.id);
  if (!ids.length) return 0;
  const runIds = await deleteThreadsRuns(ctx.db, ids);
  for (const runId of runIds) await ctx.events.publish('runs.cancel', { runId, action: 'interrupt' }, runId);
  await deleteRunsEvents(ctx.db, runIds);
  await deleteThreadCheckpoints(ctx.db.pool, ids);
  // A thread's crons go with it, as on the reference server (their pg-boss schedules too).
  for (const cronId of await deleteThreadCrons(ctx.db, ids)) await ctx.boss?.unschedule(CRON_FIRE_QUEUE, cronId);
  return ids.length;
}

/** Deletes one thread (NOT_FOUND if unknown). */
export async function deleteThread(ctx: AuthorizedContext, threadId: string): Promise<void> {
  await getThread(ctx, threadId, 'delete');
  await deleteThreadsWhere(ctx, { ids: [threadId] });
}

/** A new thread with the same metadata and a copy of the whole checkpoint history. */
export async function copyThread(ctx: AuthorizedContext, threadId: string): Promise<Thread> {
  const source = await getThread(ctx, threadId);
  const id = newId();
  // The copy is a new thread: its creation is the caller's to be allowed, its metadata the handler's to change.
  const asked = { thread_id: id, metadata: { ...source.metadata }, if_exists: null };
  await authorize(ctx, 'threads', 'create', asked);
  const { rows } = await ctx.db.pool.query<ThreadRow>(
    `INSERT INTO agent_threads (id, deployment_id, metadata, status, "values", interrupts, config, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, now()) RETURNING *`,
    [
      id,
      ctx.deployment.deploymentId,
      await sealJson(ctx.config, field('metadata'), asked.metadata ?? {}),
      source.status === 'busy' ? 'idle' : source.status,
      await sealJson(ctx.config, field('values'), source.values),
      await sealJson(ctx.config, field('interrupts'), source.interrupts),
      await sealJson(ctx.config, field('config'), source.config),
    ],
  );
  await copyThreadCheckpoints(ctx.db.pool, threadId, id);
  return await toThread(ctx, rows[0]!);
}

const graphOf = (thread: Thread): string => {
  const graphId = thread.metadata.graph_id;
  if (typeof graphId !== 'string') throw AppError.badRequest('Thread has no graph: run it first or create it with metadata.graph_id');
  return graphId;
};

export type { Checkpoint, ThreadState };

const emptyState = (): ThreadState => ({
  values: {},
  next: [],
  tasks: [],
  metadata: null,
  created_at: null,
  checkpoint: null,
  parent_checkpoint: null,
  interrupts: [],
});

/** The thread's current state (or at a checkpoint; NOT_FOUND for an unknown one); `subgraphs` includes subgraph states in tasks. Asked of the runtime. */
export async function getThreadState(
  ctx: AuthorizedContext,
  threadId: string,
  options: { subgraphs?: boolean; checkpoint?: Partial<Checkpoint> | null } = {},
): Promise<ThreadState> {
  const thread = await getThread(ctx, threadId);
  if (typeof thread.metadata.graph_id !== 'string') return emptyState();
  const request = { kind: 'thread-state', threadId, graphId: graphOf(thread), config: thread.config, subgraphs: options.subgraphs ?? false, checkpoint: options.checkpoint ?? null } as const;
  return (await askRuntime(ctx, request)) as ThreadState;
}

/** State at the checkpoint named in the body (POST /threads/{id}/state/checkpoint). */
export async function getThreadStateAtCheckpoint(ctx: AuthorizedContext, threadId: string, input: unknown): Promise<ThreadState> {
  const body = parseInput(ThreadStateCheckpointRequest, input, 'body');
  return getThreadState(ctx, threadId, { subgraphs: body.subgraphs ?? false, checkpoint: body.checkpoint as Partial<Checkpoint> });
}

/**
 * Writes values into the thread's state as if `as_node` had returned them (a new checkpoint), through
 * the runtime. CONFLICT while a run is pending or running on the thread; BAD_REQUEST when LangGraph
 * refuses the update (unknown `as_node`, values its channels cannot take).
 */
export async function updateThreadState(
  ctx: AuthorizedContext,
  threadId: string,
  input: unknown,
): Promise<{ checkpoint: Checkpoint | null; configurable: Json }> {
  const body = parseInput(ThreadStateUpdate, input, 'body');
  const thread = await getThread(ctx, threadId, 'update');
  if (await threadHasRunInFlight(ctx.db, threadId)) throw AppError.conflict('Thread is busy: a run is pending or running');
  const checkpoint: Json = body.checkpoint_id ? { checkpoint_id: body.checkpoint_id } : {};
  for (const [key, value] of Object.entries(body.checkpoint ?? {})) if (value != null) checkpoint[key] = value;
  const request = { kind: 'update-thread-state', threadId, graphId: graphOf(thread), config: thread.config, checkpoint, values: body.values ?? null, asNode: body.as_node ?? undefined } as const;
  return (await askRuntime(ctx, request)) as { checkpoint: Checkpoint | null; configurable: Json };
}

/**
 * The bytes a thread's checkpoints occupy, as stored, by section (GET /threads/{id}/storage, as the
 * hosted server answers it): what makes a thread large, before a TTL or a trim is chosen.
 */
export async function getThreadStorage(ctx: AuthorizedContext, threadId: string): Promise<ThreadStorage & { thread_id: string; total_bytes: number }> {
  const thread = await getThread(ctx, threadId);
  const storage = await threadStorage(ctx.db.pool, thread.threadId);
  const total = storage.checkpoints.bytes + storage.channel_values.bytes + storage.pending_writes.bytes;
  return { thread_id: thread.threadId, total_bytes: total, ...storage };
}

/** Past states, newest first (`before` a checkpoint, filtered by checkpoint metadata). Asked of the runtime. */
export async function getThreadHistory(ctx: AuthorizedContext, threadId: string, input: unknown): Promise<ThreadState[]> {
  const body = parseInput(ThreadHistoryRequest, input, 'body');
  const thread = await getThread(ctx, threadId);
  if (typeof thread.metadata.graph_id !== 'string') return [];
  const request = {
    kind: 'thread-history',
    threadId,
    graphId: graphOf(thread),
    config: thread.config,
    checkpoint: (body.checkpoint as Json | undefined) ?? null,
    limit: body.limit,
    before: body.before ?? null,
    metadata: body.metadata ?? null,
  } as const;
  return (await askRuntime(ctx, request)) as ThreadState[];
}

/** Every thread of the deployment (GraphQL lists). */
export async function listThreads(ctx: AuthorizedContext, options: { limit?: number; offset?: number; status?: ThreadStatus } = {}) {
  return (await searchThreads(ctx, { limit: options.limit ?? 50, offset: options.offset ?? 0, status: options.status })).items;
}
