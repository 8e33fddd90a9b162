// Runs: invocations of an assistant's graph on a thread (or on a throwaway thread: stateless runs).
// Creating a run writes its row and enqueues its job in one transaction; the runtime executes it and
// appends its stream; readers follow that stream (run-stream.ts) whichever process they are in.
import type pg from 'pg';
import { withTransaction } from '../../../db.js';
import { AppError } from '../../../errors.js';
import { isUuid, newId } from '../../../ids.js';
import { literalTargetProblem } from '../../../limits/outbound-url.js';
import { parseInput } from '../../../validate.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { type AuthFilter, type AuthorizedContext, authConfigurable, authorize, matchesFilter } from '../custom-auth/custom-auth.js';
import { resolveAssistantId } from '../assistants/assistants.service.js';
import { threadNotFound } from '../threads/threads.service.js';
import { insertEmptyThread, selectThreadMetadata, selectThreadValues } from '../threads/threads.store.js';
import { followRunEvents, isTerminalStatus, type RunEvent, type RunStreamSignal } from './run-stream.js';
import {
  RunBatchCreate,
  RunCancelQuery,
  RunCreate,
  RunListQuery,
  RunsCancelRequest,
  type MultitaskStrategy,
  type RunKwargs,
  type RunStatus,
} from './runs.schemas.js';
import * as store from './runs.store.js';
import type { RunRow } from './runs.store.js';
import type { Run } from '../../../contracts/agent-server-api.js';

export type { Run };

type Json = Record<string, unknown>;


const toRun = (row: RunRow): Run => ({
  runId: row.id,
  threadId: row.thread_id,
  assistantId: row.assistant_id,
  status: row.status,
  metadata: row.metadata ?? {},
  kwargs: row.kwargs,
  multitaskStrategy: row.multitask_strategy,
  output: row.output,
  attempt: row.attempt,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const RUN_NOT_FOUND = 'Run not found';
// The reference server's text for a run naming an assistant or graph it does not have.
const noAssistantFor = (assistantId: string) =>
  `No assistant found for "${assistantId}". Make sure the assistant ID is for a valid assistant or a valid graph ID.`;
const REJECTED = 'Thread is already running a task. Wait for it to finish or choose a different multitask strategy.';

/**
 * Creates a run and enqueues it. `threadId` null makes a stateless run (a throwaway thread unless
 * `on_completion: keep`). Multitask strategies against runs already pending or running on the thread:
 * `enqueue` (default) queues behind them; `reject` is CONFLICT; `interrupt` and `rollback` cancel them
 * (rollback also deletes them and what they wrote). NOT_FOUND for an unknown thread (unless
 * `if_not_exists: create`) or assistant. Publishes `runs.status`.
 */
export async function createRun(ctx: AuthorizedContext, threadId: string | null, input: unknown): Promise<Run> {
  return createParsedRun(ctx, threadId, parseInput(RunCreate, input, 'body'));
}

/**
 * Creates a run on a thread whose stream is the thread streaming protocol's events (run.start and
 * input.respond of POST /threads/{id}/commands); otherwise as createRun.
 */
export async function createProtocolRun(ctx: AgentServerContext, threadId: string, input: unknown): Promise<Run> {
  return createParsedRun(ctx, threadId, parseInput(RunCreate, input, 'params'), { protocol: true });
}

/** A new run as typed callers (GraphQL) give it; validated as the REST body is. */
export type NewRunInput = {
  assistantId: string;
  input?: unknown;
  command?: unknown;
  config?: unknown;
  context?: unknown;
  metadata?: unknown;
  streamModes?: string[];
  streamSubgraphs?: boolean;
  multitaskStrategy?: MultitaskStrategy;
};

/** Creates a run from typed input (see createRun). */
export async function startRun(ctx: AuthorizedContext, threadId: string | null, run: NewRunInput): Promise<Run> {
  return createRun(ctx, threadId, {
    assistant_id: run.assistantId,
    input: run.input,
    command: run.command,
    config: run.config,
    context: run.context,
    metadata: run.metadata,
    stream_mode: run.streamModes,
    stream_subgraphs: run.streamSubgraphs,
    multitask_strategy: run.multitaskStrategy,
  });
}

async function createParsedRun(
  ctx: AuthorizedContext,
  requestedThreadId: string | null,
  body: RunCreate,
  options: { runId?: string; waited?: boolean; protocol?: boolean } = {},
): Promise<Run> {
  const runId = options.runId ?? newId();
  const { deploymentId } = ctx.deployment;
  if (!ctx.deployment.graphIds.includes(body.assistant_id) && !isUuid(body.assistant_id)) throw AppError.notFound(noAssistantFor(body.assistant_id));
  assertWebhookAllowed(ctx, body.webhook);
  const assistantId = resolveAssistantId(ctx, body.assistant_id);
  const strategy: MultitaskStrategy = body.multitask_strategy ?? 'enqueue';
  const stateless = requestedThreadId === null;
  const temporary = stateless && (body.on_completion ?? 'delete') === 'delete';
  if (requestedThreadId !== null && !isUuid(requestedThreadId)) throw AppError.notFound(threadNotFound(requestedThreadId));
  const threadId = requestedThreadId?.toLowerCase() ?? newId();

  // Runs answer to their thread's rules: the project's handler may refuse, change the run's metadata
  // (which a thread the run creates takes too) and filter which existing threads the caller may run on.
  const asked = {
    thread_id: stateless ? null : threadId,
    assistant_id: body.assistant_id,
    run_id: runId,
    status: 'pending',
    metadata: { ...(body.metadata ?? {}) },
    prevent_insert_if_inflight: strategy === 'reject',
    multitask_strategy: strategy,
    if_not_exists: body.if_not_exists ?? 'reject',
    after_seconds: body.after_seconds ?? 0,
    kwargs: { input: body.input, command: body.command, config: body.config, context: body.context, stream_mode: body.stream_mode },
  };
  const filter = await authorize(ctx, 'threads', 'create_run', asked);
  const metadata = (asked.metadata ?? {}) as Json;
  if (filter && !stateless) {
    const existing = await selectThreadMetadata(ctx.db, threadId, deploymentId);
    if (existing && !matchesFilter(existing, filter)) throw AppError.notFound(threadNotFound(threadId));
  }

  // The caller's identity under custom auth reaches the graph (and stays on the run), over any value sent under its keys.
  const configurable: Json = { ...(body.config?.configurable ?? {}), ...authConfigurable(ctx) };
  if (ctx.auth && configurable.user_id === undefined) configurable.user_id = ctx.auth.user.identity;
  if (body.checkpoint_id) configurable.checkpoint_id = body.checkpoint_id;
  if (body.checkpoint) for (const [key, value] of Object.entries(body.checkpoint)) if (value != null) configurable[key] = value;
  const kwargs: RunKwargs = {
    input: body.input,
    command: body.command ?? null,
    config: { ...(body.config ?? {}), tags: body.config?.tags ?? undefined, recursion_limit: body.config?.recursion_limit ?? undefined, configurable },
    context: body.context ?? null,
    stream_mode: body.stream_mode?.length ? body.stream_mode : ['values'],
    interrupt_before: body.interrupt_before ?? null,
    interrupt_after: body.interrupt_after ?? null,
    webhook: body.webhook ?? null,
    subgraphs: body.stream_subgraphs ?? false,
    resumable: body.stream_resumable ?? false,
    durability: body.durability ?? (body.checkpoint_during === false ? 'exit' : null),
    temporary,
    ...(temporary && options.waited ? { outcome_only: true } : {}),
    ...(options.protocol ? { protocol: true, subgraphs: true } : {}),
  };

  const jobId = newId();
  const job = { runId, threadId, stateful: !temporary, jobId, startAfterSeconds: body.after_seconds ?? undefined };
  // The job's insert rides in the run's statement (and the runtimes' wake-up with it), so a stateless
  // run, or a run queued on an existing thread (`enqueue`, the default), is created in one round trip
  // with no transaction; other strategies read the thread's runs in flight under its row lock first.
  const jobInsert = await ctx.deployment.queue.jobInsert(job);
  const inOneStatement = !!jobInsert && (temporary || (!stateless && strategy === 'enqueue' && body.if_not_exists !== 'create'));
  // A delayed run's wake-up says when it is due: runtimes fetch it then (their poll is only a backstop).
  const queued = { deploymentId, origin: ctx.deployment.queue.origin, ...(body.after_seconds ? { afterSeconds: body.after_seconds } : {}) };
  const wake = ctx.events.notifyArguments('runs.queued', queued, deploymentId);
  // A run created in one statement announces its `pending` status in it too; with a transaction
  // (other strategies cancel runs in flight first) it is published after, in that order.
  const pending = !temporary && inOneStatement ? ctx.events.notifyArguments('runs.status', { runId, threadId, status: 'pending' }, threadId) : undefined;
  let woken = false;
  let announced = false;
  const newRun: store.NewRun = {
    runId,
    deploymentId,
    threadId,
    assistantId,
    metadata,
    kwargs: JSON.stringify(kwargs),
    strategy,
    jobId,
    stateful: !temporary,
    threadConfig: threadConfigOf(kwargs),
  };
  const insertRun = async (client: pg.Pool | pg.PoolClient): Promise<Run> => {
    const inserted = await store.insertRun(client, newRun, { jobInsert, notify: [wake, pending].filter((notice) => notice !== undefined) });
    if (!inserted) {
      // No run row: no such assistant here, or (created in one statement) no such thread.
      if (!temporary && client === ctx.db.pool) await assertThread(ctx, threadId);
      throw AppError.notFound(noAssistantFor(body.assistant_id));
    }
    if (jobInsert) {
      if (inserted.jobRows !== 1) {
        if (client === ctx.db.pool) await store.deleteRun(ctx.db, runId);
        throw new Error(`The job of run ${runId} was not enqueued`);
      }
      woken = wake !== undefined;
      announced = pending !== undefined;
      return toRun(inserted.row);
    }
    await ctx.deployment.queue.send(client as pg.PoolClient, job);
    return toRun(inserted.row);
  };

  const { run, inflight } =
    inOneStatement
      ? { run: await insertRun(ctx.db.pool), inflight: [] as { id: string; status: RunStatus }[] }
      : await withTransaction(ctx.db, async (client) => {
          let inflight: { id: string; status: RunStatus }[] = [];
          if (!temporary) {
            // Locking the thread row serialises run creation per thread (what `reject` relies on).
            const threadInflight = await store.lockThreadRunsInFlight(client, threadId, deploymentId);
            if (!threadInflight) {
              if (!stateless && body.if_not_exists !== 'create') throw AppError.notFound(threadNotFound(threadId));
              // The id may already be a thread of another deployment (or one created at this instant): a conflict, not a 500.
              if (!(await insertEmptyThread(client, threadId, deploymentId, metadata))) throw AppError.conflict(`Thread ${threadId} cannot be created: the id is taken.`);
            } else {
              inflight = threadInflight;
            }
            if (strategy === 'reject' && inflight.length) throw AppError.conflict(REJECTED);
          }
          return { run: await insertRun(client), inflight };
        });

  if ((strategy === 'interrupt' || strategy === 'rollback') && inflight.length) {
    await cancelRunIds(ctx, inflight.map((r) => r.id), strategy);
  }
  // Wake-ups, not state: the response need not wait for them.
  const log = (error: unknown) => ctx.logger.warn({ err: error }, 'could not publish a run event');
  ctx.deployment.queue.wakeLocal(queued.afterSeconds);
  if (!woken) void ctx.events.publish('runs.queued', queued, deploymentId).catch(log);
  if (!temporary && !announced) void ctx.events.publish('runs.status', { runId, threadId, status: 'pending' }, threadId).catch(log);
  return run;
}

/** VALIDATION_FAILED for a webhook naming a private or loopback address (unless the installation allows them). */
export function assertWebhookAllowed(ctx: AgentServerContext, webhook: string | null | undefined): void {
  // A path is delivered inside the deployment's runtime, never over the network.
  const problem = webhook && !webhook.startsWith('/') && !ctx.config.webhookAllowPrivate ? literalTargetProblem(webhook) : undefined;
  if (problem) throw new AppError('VALIDATION_FAILED', `body.webhook: ${problem}`, [{ loc: ['body', 'webhook'], msg: problem, type: 'url_not_allowed' }]);
}

/** What a run leaves in its thread's config: its config, without the checkpoint it started from. */
function threadConfigOf(kwargs: RunKwargs): string {
  const { checkpoint_id: _, checkpoint_ns: __, checkpoint_map: ___, thread_id: ____, ...configurable } = kwargs.config.configurable ?? {};
  return JSON.stringify({ ...kwargs.config, configurable });
}

/** Creates several stateless runs. */
export async function createRunBatch(ctx: AuthorizedContext, input: unknown): Promise<Run[]> {
  const bodies = parseInput(RunBatchCreate, input, 'body');
  const runs: Run[] = [];
  for (const body of bodies) runs.push(await createParsedRun(ctx, null, body));
  return runs;
}

async function findRunRow(ctx: AgentServerContext, runId: string): Promise<RunRow | undefined> {
  if (!isUuid(runId)) return undefined;
  return store.selectRun(ctx.db, runId, ctx.deployment.deploymentId);
}

/**
 * NOT_FOUND unless the deployment has the thread and (under custom auth) the caller's handler of
 * `threads:<action>` lets them see it; FORBIDDEN when the handler refuses.
 */
async function assertThread(ctx: AuthorizedContext, threadId: string, action?: 'read' | 'search'): Promise<void> {
  if (!isUuid(threadId)) throw AppError.notFound(threadNotFound(threadId));
  const filter = action ? await authorize(ctx, 'threads', action, { thread_id: threadId }) : undefined;
  const metadata = await selectThreadMetadata(ctx.db, threadId, ctx.deployment.deploymentId);
  if (!metadata || !matchesFilter(metadata, filter)) throw AppError.notFound(threadNotFound(threadId));
}

/** Whether the caller's filter lets them see these runs: judged by each run's thread (see selectRunsOwnerMetadata). */
async function visibleRunIds(ctx: AuthorizedContext, runIds: string[], filter: AuthFilter | undefined): Promise<string[]> {
  if (!filter || !runIds.length) return runIds;
  const owners = await store.selectRunsOwnerMetadata(ctx.db, runIds);
  return runIds.filter((runId) => matchesFilter(owners.get(runId), filter));
}

/**
 * One run; `threadId` null for stateless runs. NOT_FOUND unless it exists in this deployment (on that
 * thread) and, under custom auth, its thread passes the caller's filter for `threads:<action>`.
 */
export async function getRun(ctx: AuthorizedContext, threadId: string | null, runId: string, action: 'read' | 'update' | 'delete' = 'read'): Promise<Run> {
  const filter = ctx.auth ? await authorize(ctx, 'threads', action, { thread_id: threadId, run_id: runId }) : undefined;
  const row = await findRunRow(ctx, runId);
  if (!row || (threadId !== null && row.thread_id !== threadId.toLowerCase())) throw AppError.notFound(RUN_NOT_FOUND);
  // A read names the thread the filter hides, a change the run, in the reference server's words.
  if (filter && !(await visibleRunIds(ctx, [row.id], filter)).length) throw AppError.notFound(threadId && action === 'read' ? threadNotFound(threadId) : RUN_NOT_FOUND);
  return toRun(row);
}

/** A thread's runs, newest first, optionally by status. */
export async function listRuns(ctx: AuthorizedContext, threadId: string, input: unknown): Promise<Run[]> {
  const query = parseInput(RunListQuery, input, 'query');
  await assertThread(ctx, threadId, 'search');
  return (await store.selectThreadRuns(ctx.db, threadId, query)).map(toRun);
}

/**
 * The newest runs of each of the deployment's threads, a list per thread in the order given, in one
 * statement (a GraphQL dataloader's batch); threads of other deployments get none.
 */
export async function listRunsOfThreads(ctx: AgentServerContext, threadIds: readonly string[], input: unknown): Promise<Run[][]> {
  const query = parseInput(RunListQuery.pick({ limit: true }), input, 'query');
  const rows = await store.selectRunsOfThreads(ctx.db, ctx.deployment.deploymentId, threadIds.filter(isUuid), query.limit);
  return threadIds.map((threadId) => rows.filter((row) => row.thread_id === threadId.toLowerCase()).map(toRun));
}

/** Deletes a finished or pending run and its stream. CONFLICT while it runs. */
export async function deleteRun(ctx: AuthorizedContext, threadId: string, runId: string): Promise<void> {
  const run = await getRun(ctx, threadId, runId, 'delete');
  if (run.status === 'running') throw AppError.conflict('Run is running; cancel it first');
  await store.deleteRunAndEvents(ctx.db, run.runId);
  if (run.status === 'pending') await ctx.events.publish('runs.stream', { runId: run.runId, status: 'interrupted' }, run.runId);
}

/**
 * Cancels runs by id. Pending ones end at once (`interrupted`; deleted for rollback); running ones are
 * signalled to the runtime executing them (`runs.cancel`), which stops the graph.
 */
export async function cancelRunIds(ctx: AgentServerContext, runIds: string[], action: 'interrupt' | 'rollback'): Promise<void> {
  if (!runIds.length) return;
  const ended = await store.endPendingRuns(ctx.db, runIds, action);
  const endedIds = new Set(ended.map((row) => row.id));
  for (const row of ended) {
    await ctx.events.publish('runs.stream', { runId: row.id, status: 'interrupted' }, row.id);
    await ctx.events.publish('runs.status', { runId: row.id, threadId: row.thread_id, status: 'interrupted' }, row.thread_id);
  }
  const threads = [...new Set(ended.map((row) => row.thread_id))];
  if (threads.length) {
    await store.idleThreadsWithoutRunsInFlight(ctx.db, threads);
  }
  for (const runId of runIds) if (!endedIds.has(runId)) await ctx.events.publish('runs.cancel', { runId, action }, runId);
}

/** Cancels one run of a thread; with `wait`, returns once it has stopped. NOT_FOUND for an unknown run. */
export async function cancelRun(ctx: AuthorizedContext, threadId: string, runId: string, input: unknown): Promise<{ waited: boolean }> {
  const query = parseInput(RunCancelQuery, input, 'query');
  const run = await getRun(ctx, threadId, runId, 'update');
  const waiting = query.wait ? waitForRun(ctx, run.runId) : undefined;
  if (!isTerminalStatus(run.status)) await cancelRunIds(ctx, [run.runId], query.action);
  if (waiting) await waiting;
  return { waited: query.wait };
}

/** Cancels many runs: by ids, or a thread's runs by status (pending, running or all). */
export async function cancelRuns(ctx: AuthorizedContext, input: unknown, options: { action?: unknown } = {}): Promise<void> {
  const body = parseInput(RunsCancelRequest, input, 'body');
  const { action } = parseInput(RunCancelQuery, { action: options.action ?? undefined }, 'query');
  let ids: string[];
  const { deploymentId } = ctx.deployment;
  const filter = await authorize(ctx, 'threads', 'update', { thread_id: body.thread_id ?? null, run_ids: body.run_ids ?? null, status: body.status ?? null });
  if (body.run_ids?.length) {
    ids = await visibleRunIds(ctx, await store.selectRunIds(ctx.db, deploymentId, { runIds: body.run_ids, threadId: body.thread_id ?? undefined }), filter);
    if (ids.length !== body.run_ids.length) throw AppError.notFound(RUN_NOT_FOUND);
  } else if (body.thread_id) {
    const statuses = body.status && body.status !== 'all' ? [body.status] : ['pending', 'running'];
    ids = await store.selectRunIds(ctx.db, deploymentId, { threadId: body.thread_id, statuses });
  } else if (body.status) {
    const statuses = body.status !== 'all' ? [body.status] : ['pending', 'running'];
    ids = await store.selectRunIds(ctx.db, deploymentId, { statuses });
  } else {
    throw new AppError('VALIDATION_FAILED', 'Name run_ids, a thread_id or a status.', [{ loc: ['body'], msg: 'run_ids, thread_id or status required', type: 'missing' }]);
  }
  await cancelRunIds(ctx, await visibleRunIds(ctx, ids, filter), action);
}

/** Resolves with the run once it has ended (or undefined if it was deleted, e.g. rolled back). */
export async function waitForRun(ctx: AgentServerContext, runId: string, signal?: AbortSignal): Promise<Run | undefined> {
  return withRunSignals(ctx, runId, signal, async (signals) => {
    const row = await findRunRow(ctx, runId);
    if (!row || isTerminalStatus(row.status)) return row && toRun(row);
    return followToEnd(ctx, toRun(row), signals);
  });
}

/**
 * Creates a run and resolves once it has ended (runs/wait). The run's signals are subscribed to
 * before the run exists, so its end cannot fall between its creation and the subscription, and the
 * row need not be read back.
 */
export async function createRunAndWait(
  ctx: AuthorizedContext,
  threadId: string | null,
  input: unknown,
  signal?: AbortSignal,
): Promise<{ run: Run; done: Run | undefined }> {
  const body = parseInput(RunCreate, input, 'body');
  const runId = newId();
  return withRunSignals(ctx, runId, signal, async (signals) => {
    const run = await createParsedRun(ctx, threadId, body, { runId, waited: true });
    return { run, done: await followToEnd(ctx, run, signals) };
  });
}

async function withRunSignals<T>(
  ctx: AgentServerContext,
  runId: string,
  signal: AbortSignal | undefined,
  work: (signals: AsyncGenerator<RunStreamSignal>) => Promise<T>,
): Promise<T> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await work(ctx.events.subscribe('runs.stream', { key: runId, signal: stop.signal }));
  } finally {
    signal?.removeEventListener('abort', onAbort);
    stop.abort();
  }
}

/** Follows a run not yet ended (as of `run`) to its end through signals subscribed to before `run` was read. */
async function followToEnd(ctx: AgentServerContext, run: Run, signals: AsyncGenerator<RunStreamSignal>): Promise<Run | undefined> {
  for await (const event of signals) {
    if (event.status && isTerminalStatus(event.status)) {
      // Small results ride on the final signal; larger ones are read from the row.
      if (event.output !== undefined) return { ...run, status: event.status as RunStatus, output: JSON.parse(event.output) };
      break;
    }
  }
  const row = await findRunRow(ctx, run.runId);
  return row && toRun(row);
}

/**
 * What runs/wait and join answer: the run's last `values` (or `{__error__}` when it failed); for a run
 * that produced none, the thread's values.
 */
export async function runResult(ctx: AgentServerContext, run: Run | undefined, threadId: string | null): Promise<unknown> {
  if (run?.output != null) return run.output;
  if (!threadId) return null;
  return selectThreadValues(ctx.db, threadId);
}

/** Waits for a thread's run to end and returns its result (GET …/runs/{id}/join). */
export async function joinRun(ctx: AuthorizedContext, threadId: string, runId: string, signal?: AbortSignal): Promise<unknown> {
  await assertThread(ctx, threadId, 'read');
  const run = await getRun(ctx, threadId, runId);
  const done = await waitForRun(ctx, run.runId, signal);
  return runResult(ctx, done, threadId);
}

/**
 * A run's stream events after `afterSeq` (from Last-Event-ID), live until it ends. `modes` narrows to
 * some of the run's stream modes. The same iterable feeds SSE and the GraphQL subscription.
 */
export function streamRun(
  ctx: AgentServerContext,
  runId: string,
  options: { afterSeq?: number; modes?: string[]; signal?: AbortSignal } = {},
): AsyncIterable<RunEvent> {
  return followRunEvents(ctx, runId, {
    ...options,
    readStatus: async () => (await findRunRow(ctx, runId))?.status,
  });
}

/** Events of a thread's current run and every later one, until `signal` aborts (GET /threads/{id}/stream). */
export async function* streamThread(
  ctx: AuthorizedContext,
  threadId: string,
  options: { modes?: string[]; signal?: AbortSignal; lastEventId?: string } = {},
): AsyncGenerator<RunEvent & { runId: string }> {
  await assertThread(ctx, threadId, 'read');
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const statuses = ctx.events.subscribe('runs.status', { key: threadId, signal: stop.signal });
  const seen = new Set<string>();
  const [resumeRun, resumeSeq] = (options.lastEventId ?? '').split(':');
  try {
    // Under custom auth the caller's access is checked again before each later run: one who lost it
    // (the thread's metadata changed, their permission was withdrawn) gets an error event, and the end.
    const denied = async (): Promise<AppError | undefined> => {
      if (!ctx.auth || !seen.size) return undefined;
      return assertThread(ctx, threadId, 'read').then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof AppError) return error;
          throw error;
        },
      );
    };
    const follow = async function* (runId: string, afterSeq = 0): AsyncGenerator<RunEvent & { runId: string }, boolean> {
      const refusal = await denied();
      if (refusal) {
        yield { runId, seq: 0, event: 'error', data: JSON.stringify({ error: refusal.code === 'NOT_FOUND' ? 'NotFound' : 'Forbidden', message: refusal.message }) };
        return false;
      }
      seen.add(runId);
      for await (const event of streamRun(ctx, runId, { afterSeq, modes: options.modes, signal: stop.signal })) yield { ...event, runId };
      return true;
    };
    if (resumeRun && isUuid(resumeRun) && !(yield* follow(resumeRun, Number(resumeSeq) || 0))) return;
    // Runs not finished yet, oldest first; then whichever start later.
    for (;;) {
      const inflight = await store.selectThreadRunIdsInFlight(ctx.db, threadId);
      const next = inflight.find((id) => !seen.has(id));
      if (next) {
        if (!(yield* follow(next))) return;
        continue;
      }
      const { value, done } = await statuses.next();
      if (done) return;
      if (!seen.has(value.runId) && !isTerminalStatus(value.status) && !(yield* follow(value.runId))) return;
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.abort();
  }
}

/** The deployment a run belongs to (GraphQL names runs by id alone); NOT_FOUND if there is no such run. */
export async function runDeploymentId(deps: Pick<AgentServerContext, 'db'>, runId: string): Promise<string> {
  if (!isUuid(runId)) throw AppError.notFound(RUN_NOT_FOUND);
  const deploymentId = await store.selectRunDeploymentId(deps.db, runId);
  if (!deploymentId) throw AppError.notFound(RUN_NOT_FOUND);
  return deploymentId;
}
