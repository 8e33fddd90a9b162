// The thread streaming protocol (what the SDK's ThreadStream speaks): commands on a thread (starting
// and resuming runs, reading state) and the thread's event stream, framed from the stored events of
// its runs (thread-stream.events.ts) as the runs' SSE streams read them, so a stream that reconnects
// with `since` resumes exactly where it stopped, whichever process serves it.
import { z } from 'zod';
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';
import type { AuthorizedContext } from '../custom-auth/custom-auth.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { commandWrites } from '../../../contracts/gateway-protocol.js';
import { agentContext } from '../served-deployment/served-deployment.js';
import { getThread, getThreadState, threadNotFound } from '../threads/threads.service.js';
import { selectThreadMetadata } from '../threads/threads.store.js';
import { isTerminalStatus } from './run-stream.js';
import { streamRun } from './run-follow.service.js';
import { getRun } from './run-reads.service.js';
import { createProtocolRun } from './runs.service.js';
import { selectEventsAfter, selectThreadRunPositions, type ThreadRunPosition } from './runs.store.js';
import { encryptionOf } from '../encryption/at-rest.js';
import { type EventFilter, isChannel, matchesFilter, type ProtocolEvent, RUN_SPAN, RunEventFramer } from './thread-stream.events.js';

export type { EventFilter, ProtocolEvent };
export { matchesFilter };

type Json = Record<string, unknown>;

// Bounds on what a client may ask for: a filter names at most this many channels and namespaces.
const MAX_FILTER_ITEMS = 64;
const Namespace = z.array(z.string().max(1024)).max(64);
const Channel = z.string().refine(isChannel, 'an unknown channel');
const FilterFields = {
  channels: z.array(Channel).min(1).max(MAX_FILTER_ITEMS),
  namespaces: z.array(Namespace).max(MAX_FILTER_ITEMS).optional(),
  depth: z.number().int().min(0).optional(),
};

/** The body of POST /threads/{thread_id}/stream/events. */
export const EventStreamRequest = z.object({ ...FilterFields, since: z.number().int().min(0).optional() }).strict();
/** The params of `subscription.subscribe` (WebSocket). */
export const SubscribeParams = z.object(FilterFields).passthrough();

/** A protocol command: `{id, method, params}`. */
export const ProtocolCommand = z.object({ id: z.number().int().min(0), method: z.string().min(1).max(128), params: z.record(z.string(), z.unknown()).optional() });
export type ProtocolCommand = z.infer<typeof ProtocolCommand>;

export type ErrorCode =
  | 'invalid_argument'
  | 'unknown_command'
  | 'unknown_error'
  | 'no_such_run'
  | 'no_such_subscription'
  | 'no_such_namespace'
  | 'no_such_interrupt'
  | 'no_such_checkpoint'
  | 'permission_denied'
  | 'not_supported';
export type ProtocolResponse =
  | { type: 'success'; id: number; result: Json; meta?: Json }
  | { type: 'error'; id: number | null; error: ErrorCode; message: string };

export const protocolError = (id: number | null, error: ErrorCode, message: string): ProtocolResponse => ({ type: 'error', id, error, message });

/** A command frame as text, parsed; or the protocol's answer to a frame that is not one. */
export function parseCommandFrame(text: string): ProtocolCommand | ProtocolResponse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return protocolError(null, 'invalid_argument', 'Protocol commands must be valid JSON.');
  }
  return readCommand(value);
}

/** A parsed JSON value as a command, or the protocol's error for it. */
export function readCommand(value: unknown): ProtocolCommand | ProtocolResponse {
  const parsed = ProtocolCommand.safeParse(value);
  if (parsed.success) return parsed.data;
  const id = typeof (value as { id?: unknown } | null)?.id === 'number' ? ((value as { id: number }).id) : null;
  return protocolError(Number.isInteger(id) && id! >= 0 ? id : null, 'invalid_argument', 'Protocol commands must include an integer id, a string method and object params.');
}

/** A filter from validated request fields. */
export const toFilter = (fields: { channels: string[]; namespaces?: string[][]; depth?: number }): EventFilter => ({
  channels: new Set(fields.channels),
  namespaces: fields.namespaces,
  depth: fields.depth,
});

/** NOT_FOUND unless the thread exists in this deployment. */
async function assertThreadExists(ctx: AgentServerContext, threadId: string): Promise<void> {
  if (!isUuid(threadId)) throw AppError.notFound(threadNotFound(threadId));
  // As a thread read: under custom auth, another user's thread is not found either.
  await getThread(ctx, threadId.toLowerCase());
}

/**
 * Whether the caller may follow the thread's events: NOT_FOUND for an id that is no thread id, and
 * under custom auth when the thread exists and the caller's `threads:read` handler filters it out
 * (FORBIDDEN when it refuses). A thread that does not exist yet passes, as on the reference: a client
 * subscribes before its `run.start` creates the thread (as the caller's), and followThreadEvents
 * checks again before each run it shows.
 */
export async function assertThreadFollowable(ctx: AuthorizedContext, threadId: string): Promise<void> {
  if (!isUuid(threadId)) throw AppError.notFound(threadNotFound(threadId));
  if (!ctx.auth) return;
  const id = threadId.toLowerCase();
  if ((await selectThreadMetadata(ctx.db, id, ctx.deployment.deploymentId)) === undefined) return;
  await getThread(ctx, id);
}

/** Under custom auth, whether the caller (still) sees the thread, as a read of it would. */
async function threadVisible(ctx: AuthorizedContext, threadId: string): Promise<boolean> {
  if (!ctx.auth) return true;
  return getThread(ctx, threadId).then(
    () => true,
    (error: unknown) => {
      if (error instanceof AppError) return false;
      throw error;
    },
  );
}

// How many of a thread's latest runs an event stream without `since` replays at most.
const REPLAYED_RUNS = 10;

/**
 * The thread's protocol events, then every later run's, live, until `signal` aborts. From position
 * `since` (exclusive) when given; else, with `replay: 'thread'` (an SSE event stream, as the
 * reference server replays its thread buffer), from the first of its latest runs started through the
 * protocol (at most REPLAYED_RUNS back), and otherwise (a WebSocket subscription, as the reference
 * replays its current run) from the start of its oldest run in flight, or its latest run. The caller
 * checks the thread first; a thread created later (by run.start) is followed once it is. Under custom
 * auth the stream ends before a run of a thread the caller does not see (another user's, made after
 * the stream began, or one whose access the caller lost). `onRun` is told each run it starts to
 * follow, before that run's events.
 */
export async function* followThreadEvents(
  ctx: AuthorizedContext,
  threadId: string,
  options: { since?: number; signal?: AbortSignal; replay?: 'run' | 'thread'; onRun?: (runId: string) => void } = {},
): AsyncGenerator<ProtocolEvent> {
  const id = threadId.toLowerCase();
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // Subscribed before reading the runs: a run created after the read announces itself here.
  const statuses = ctx.events.subscribe('runs.status', { key: id, signal: stop.signal });
  const followed = new Set<string>();
  const after = options.since ?? 0;
  let next: number | undefined = options.since !== undefined ? Math.max(1, Math.floor(options.since / RUN_SPAN)) : undefined;
  try {
    for (;;) {
      const runs = isUuid(id) ? await selectThreadRunPositions(ctx.db, id, ctx.deployment.deploymentId) : [];
      if (next === undefined) {
        const inFlight = runs.find((run) => !isTerminalStatus(run.status));
        const firstProtocolRun = options.replay === 'thread' ? runs.slice(-REPLAYED_RUNS).find((run) => run.protocol) : undefined;
        next = firstProtocolRun?.position ?? inFlight?.position ?? runs[runs.length - 1]?.position ?? 1;
      }
      const due = runs.filter((run) => run.position >= next!);
      for (const run of due) {
        if (stop.signal.aborted || !(await threadVisible(ctx, id))) return;
        followed.add(run.id);
        options.onRun?.(run.id);
        for await (const event of followRun(ctx, run, stop.signal)) if (event.seq > after) yield event;
        next = run.position + 1;
      }
      if (due.length) continue;
      // Nothing new: wait until a run this stream has not followed changes status.
      for (;;) {
        const { value, done } = await statuses.next();
        if (done || stop.signal.aborted) return;
        if (!followed.has(value.runId)) break;
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.abort();
  }
}

async function* followRun(ctx: AgentServerContext, run: ThreadRunPosition, signal: AbortSignal): AsyncGenerator<ProtocolEvent> {
  const framer = new RunEventFramer(run, run.graph_id ?? 'root');
  for await (const stored of streamRun(ctx, run.id, { signal })) yield* framer.frame(stored);
  if (signal.aborted) return;
  // A run deleted meanwhile (rolled back) has no end to show.
  const ended = await getRun(ctx, null, run.id).catch(() => undefined);
  if (ended && isTerminalStatus(ended.status)) yield* framer.end(ended.status);
}

/** The protocol's error code for a service failure. */
function errorCode(error: AppError): ErrorCode {
  switch (error.code) {
    case 'VALIDATION_FAILED':
    case 'BAD_REQUEST':
    case 'CONFLICT':
      return 'invalid_argument';
    case 'FORBIDDEN':
    case 'UNAUTHENTICATED':
      return 'permission_denied';
    case 'NOT_FOUND':
      return 'no_such_run';
    default:
      return 'unknown_error';
  }
}

const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Answers a command on a thread: `run.start` (a new run; a resume when the thread waits on
 * interrupts; a fork with `config.configurable.checkpoint_id`), `input.respond`, `state.get` and
 * `agent.getTree`. Subscriptions are the WebSocket's (see `subscription`); over HTTP each event stream
 * is its own subscription. Failures come back as protocol errors; run-starting commands need write access.
 */
export async function handleThreadCommand(ctx: AgentServerContext, threadId: string, command: ProtocolCommand): Promise<ProtocolResponse> {
  const params = command.params ?? {};
  try {
    if (commandWrites(command.method)) {
      // The caller may only read (a workspace viewer): FORBIDDEN, as for the runs API.
      await agentContext(ctx, ctx.deployment.deploymentId, { access: 'write', dev: ctx.deployment.dev });
    }
    switch (command.method) {
      case 'run.start':
        return await startRun(ctx, threadId, command.id, params);
      case 'input.respond':
        return await respondInput(ctx, threadId, command.id, params);
      case 'state.get':
        return await readState(ctx, threadId, command.id, params);
      case 'agent.getTree':
        return await agentTree(ctx, threadId, command.id);
      case 'subscription.subscribe':
      case 'subscription.unsubscribe':
        return protocolError(command.id, 'not_supported', `${command.method} is a WebSocket command; over HTTP, POST /threads/{thread_id}/stream/events with a filter.`);
      case 'subscription.reconnect':
        return protocolError(command.id, 'not_supported', 'subscription.reconnect is not supported: subscribe again (events are replayed) or reconnect with since.');
      default:
        return protocolError(command.id, 'unknown_command', `Unknown protocol command: ${command.method}`);
    }
  } catch (error) {
    if (error instanceof AppError) return protocolError(command.id, errorCode(error), error.message);
    throw error;
  }
}

const success = (id: number, threadId: string, result: Json): ProtocolResponse => ({ type: 'success', id, result, meta: { thread_id: threadId } });

const MULTITASK = new Set(['reject', 'rollback', 'interrupt', 'enqueue']);

/** Whether the thread waits on interrupts (its row caches them after each run). */
async function pendingInterrupts(ctx: AgentServerContext, threadId: string): Promise<boolean> {
  if (!isUuid(threadId)) return false;
  const thread = await getThread(ctx, threadId).catch(() => undefined);
  return !!thread && Object.values(thread.interrupts).some((list) => Array.isArray(list) && list.length > 0);
}

async function startRun(ctx: AgentServerContext, threadId: string, id: number, params: Json): Promise<ProtocolResponse> {
  if (typeof params.assistant_id !== 'string' || !params.assistant_id) return protocolError(id, 'invalid_argument', 'run.start requires an assistant_id.');
  const strategy = [params.multitask_strategy, params.multitaskStrategy].find((value) => typeof value === 'string' && MULTITASK.has(value));
  // Input to a thread waiting on interrupts resumes it, as the protocol's run.start says.
  const resume = params.input != null && (await pendingInterrupts(ctx, threadId));
  const run = await createProtocolRun(ctx, threadId, {
    assistant_id: params.assistant_id,
    ...(resume ? { command: { resume: params.input } } : { input: params.input ?? null }),
    config: isRecord(params.config) ? params.config : undefined,
    metadata: isRecord(params.metadata) ? params.metadata : undefined,
    multitask_strategy: strategy ?? 'enqueue',
    if_not_exists: 'create',
  });
  return success(id, run.threadId, { run_id: run.runId });
}

async function respondInput(ctx: AgentServerContext, threadId: string, id: number, params: Json): Promise<ProtocolResponse> {
  const answers: Json = {};
  if (Array.isArray(params.responses)) {
    for (const entry of params.responses) {
      if (!isRecord(entry) || typeof entry.interrupt_id !== 'string') return protocolError(id, 'invalid_argument', 'input.respond responses entries require an interrupt_id.');
      answers[entry.interrupt_id] = entry.response;
    }
    if (!Object.keys(answers).length) return protocolError(id, 'invalid_argument', 'input.respond requires at least one response.');
  } else if (typeof params.interrupt_id === 'string') {
    answers[params.interrupt_id] = params.response;
  } else {
    return protocolError(id, 'invalid_argument', 'input.respond requires an interrupt_id.');
  }
  await assertThreadExists(ctx, threadId);
  const runs = await selectThreadRunPositions(ctx.db, threadId.toLowerCase(), ctx.deployment.deploymentId);
  const last = runs[runs.length - 1];
  if (!last) return protocolError(id, 'no_such_run', 'No interrupted run is bound to this thread.');
  if (!(await pendingInterrupts(ctx, threadId))) return protocolError(id, 'invalid_argument', 'input.respond can only be used while the run is interrupted.');
  const lastRun = await getRun(ctx, null, last.id);
  await createProtocolRun(ctx, threadId, {
    assistant_id: lastRun.assistantId,
    command: {
      resume: answers,
      ...(isRecord(params.update) || Array.isArray(params.update) ? { update: params.update } : {}),
      ...(params.goto !== undefined && params.goto !== null ? { goto: params.goto } : {}),
    },
    config: isRecord(params.config) ? params.config : undefined,
    metadata: isRecord(params.metadata) ? params.metadata : undefined,
    multitask_strategy: 'enqueue',
  });
  return success(id, threadId, {});
}

async function readState(ctx: AgentServerContext, threadId: string, id: number, params: Json): Promise<ProtocolResponse> {
  const state = await getThreadState(ctx, threadId, { subgraphs: true });
  const keys = Array.isArray(params.keys) && params.keys.every((key) => typeof key === 'string') ? (params.keys as string[]) : undefined;
  const values = (state.values ?? {}) as Json;
  const configurable = (state.checkpoint ?? {}) as { checkpoint_id?: string | null; checkpoint_ns?: string };
  return success(id, threadId, {
    values: keys ? Object.fromEntries(Object.entries(values).filter(([key]) => keys.includes(key))) : values,
    ...(configurable.checkpoint_id ? { checkpoint: { id: configurable.checkpoint_id, ns: configurable.checkpoint_ns ?? '' } } : {}),
  });
}

type TreeNode = { namespace: string[]; status: string; graph_name: string; children?: TreeNode[] };

/** The agent tree of the thread's latest run, from the lifecycle of its stored events. */
async function agentTree(ctx: AgentServerContext, threadId: string, id: number): Promise<ProtocolResponse> {
  await assertThreadExists(ctx, threadId);
  const runs = await selectThreadRunPositions(ctx.db, threadId.toLowerCase(), ctx.deployment.deploymentId);
  const last = runs[runs.length - 1];
  if (!last) return protocolError(id, 'no_such_run', 'No run is bound to this thread.');
  const framer = new RunEventFramer(last, last.graph_id ?? 'root');
  let root = 'running';
  // What is stored now: a run in flight is read up to here, not followed.
  for (const stored of await selectEventsAfter(ctx.db.pool, last.id, 0, encryptionOf(ctx.config))) {
    for (const event of framer.frame(stored)) if (event.method === 'lifecycle' && !event.params.namespace.length) root = String((event.params.data as Json).event);
  }
  if (isTerminalStatus(last.status)) for (const event of framer.end(last.status)) root = String((event.params.data as Json).event);
  const build = (namespace: string[], status: string, graphName: string): TreeNode => {
    const children = [...framer.namespaces.values()]
      .filter((entry) => entry.namespace.length === namespace.length + 1 && namespace.every((segment, i) => entry.namespace[i] === segment))
      .sort((a, b) => JSON.stringify(a.namespace).localeCompare(JSON.stringify(b.namespace)))
      .map((entry) => build(entry.namespace, entry.status, entry.graphName));
    return { namespace, status, graph_name: graphName, ...(children.length ? { children } : {}) };
  };
  return success(id, threadId, { tree: build([], root, framer.graphName) });
}
