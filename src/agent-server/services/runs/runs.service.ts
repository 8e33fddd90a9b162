// Runs: invocations of an assistant's graph on a thread (or on a throwaway thread: stateless runs).
// Creating a run writes its row and enqueues its job in one transaction; the runtime executes it and
// appends its stream; readers follow that stream (run-follow.service.ts) whichever process they are
// in. This file creates, cancels and deletes runs; reading them is run-reads.service.ts.
import type pg from 'pg';
import { withTransaction } from '../../../db.js';
import { AppError } from '../../../errors.js';
import { isUuid, newId } from '../../../ids.js';
import { literalTargetProblem } from '../../../limits/outbound-url.js';
import { parseInput } from '../../../validate.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { type AuthorizedContext, authConfigurable, authorize, matchesFilter } from '../custom-auth/custom-auth.js';
import { resolveAssistantId } from '../assistants/assistants.service.js';
import { threadNotFound } from '../threads/threads.service.js';
import { insertEmptyThread, selectThreadMetadata } from '../threads/threads.store.js';
import { openJson, sealJson, sealJsonKeys, sealJsonText } from '../encryption/at-rest.js';
import { RUN_KWARGS, RUN_KWARGS_SEALED } from './runs.schemas.js';

const THREAD_METADATA = { model: 'thread', field: 'metadata' } as const;
import { followToEnd, waitForRun, withRunSignals } from './run-follow.service.js';
import { assertThread, getRun, RUN_NOT_FOUND, visibleRunIds } from './run-reads.service.js';
import { isTerminalStatus } from './run-stream.js';
import {
  RunBatchCreate,
  RunCancelQuery,
  RunCreate,
  RunsCancelRequest,
  type MultitaskStrategy,
  type RunKwargs,
  type RunStatus,
} from './runs.schemas.js';
import * as store from './runs.store.js';
import type { Run } from '../../../contracts/agent-server-api.js';

export type { Run };

type Json = Record<string, unknown>;

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
    const existing = await openJson(ctx.config, THREAD_METADATA, await selectThreadMetadata(ctx.db, threadId, deploymentId));
    if (existing && !matchesFilter(existing, filter)) throw AppError.notFound(threadNotFound(threadId));
  }

  // The request's headers reach the graph as on the reference server (over values sent under their
  // names); the caller's identity under custom auth too (and stays on the run), over anything else.
  const configurable: Json = { ...(body.config?.configurable ?? {}), ...ctx.configurableHeaders, ...authConfigurable(ctx) };
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
  // run, or a run queued on its thread (`enqueue`, the default; the thread created in the same statement
  // with `if_not_exists: create`), is created in one round trip with no transaction; other strategies
  // read the thread's runs in flight under its row lock first.
  const jobInsert = await ctx.deployment.queue.jobInsert(job);
  const inOneStatement = !!jobInsert && (temporary || (!stateless && strategy === 'enqueue'));
  const createsThread = !stateless && body.if_not_exists === 'create';
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
    // As stored: the values of the JSON keys encrypted at rest sealed (encryption/at-rest.ts).
    metadata: await sealJson(ctx.config, { model: 'run', field: 'metadata' }, metadata),
    kwargs: JSON.stringify(await sealJsonKeys(ctx.config, RUN_KWARGS, kwargs, RUN_KWARGS_SEALED)),
    strategy,
    jobId,
    stateful: !temporary,
    threadConfig: await sealJsonText(ctx.config, { model: 'thread', field: 'config' }, threadConfigOf(kwargs)),
  };
  // A thread the run creates (if_not_exists, or a kept stateless run's) takes its metadata, as stored:
  // in the run's statement or in the transaction's.
  const newThreadMetadata = createsThread || (stateless && !temporary) ? await sealJson(ctx.config, THREAD_METADATA, metadata) : undefined;
  /** Undefined when a run that creates its thread found it could not in one statement (the transaction's turn). */
  const insertRun = async (client: pg.Pool | pg.PoolClient): Promise<Run | undefined> => {
    const oneStatement = client === ctx.db.pool;
    const written = oneStatement && createsThread ? { ...newRun, newThreadMetadata } : newRun;
    const inserted = await store.insertRun(client, written, { jobInsert, notify: [wake, pending].filter((notice) => notice !== undefined) });
    if (!inserted) {
      // The id taken meanwhile or by another deployment's thread, or no such assistant: the transaction tells which.
      if (oneStatement && createsThread) return undefined;
      // No run row: no such assistant here, or (created in one statement) no such thread.
      if (!temporary && oneStatement) await assertThread(ctx, threadId);
      throw AppError.notFound(noAssistantFor(body.assistant_id));
    }
    if (jobInsert) {
      if (inserted.jobRows !== 1) {
        if (client === ctx.db.pool) await store.deleteRun(ctx.db, runId);
        throw new Error(`The job of run ${runId} was not enqueued`);
      }
      woken = wake !== undefined;
      announced = pending !== undefined;
      return createdRun(inserted);
    }
    await ctx.deployment.queue.send(client as pg.PoolClient, job);
    return createdRun(inserted);
  };
  // The row as written: what was sent (before sealing), and the times the database gave it.
  const createdRun = (inserted: { createdAt: Date; updatedAt: Date }): Run => ({
    runId,
    threadId,
    assistantId,
    status: 'pending',
    metadata,
    kwargs,
    multitaskStrategy: strategy,
    output: null,
    attempt: 0,
    cancelReason: null,
    createdAt: inserted.createdAt,
    updatedAt: inserted.updatedAt,
  });

  const createdInOneStatement = inOneStatement ? await insertRun(ctx.db.pool) : undefined;
  const { run, inflight } =
    createdInOneStatement
      ? { run: createdInOneStatement, inflight: [] as { id: string; status: RunStatus }[] }
      : await withTransaction(ctx.db, async (client) => {
          let inflight: { id: string; status: RunStatus }[] = [];
          if (!temporary) {
            // Locking the thread row serialises run creation per thread (what `reject` relies on).
            const threadInflight = await store.lockThreadRunsInFlight(client, threadId, deploymentId);
            if (!threadInflight) {
              if (!stateless && body.if_not_exists !== 'create') throw AppError.notFound(threadNotFound(threadId));
              // The id may already be a thread of another deployment (or one created at this instant): a conflict, not a 500.
              if (!(await insertEmptyThread(client, threadId, deploymentId, newThreadMetadata))) throw AppError.conflict(`Thread ${threadId} cannot be created: the id is taken.`);
            } else {
              inflight = threadInflight;
            }
            if (strategy === 'reject' && inflight.length) throw AppError.conflict(REJECTED);
          }
          return { run: (await insertRun(client))!, inflight };
        });

  if ((strategy === 'interrupt' || strategy === 'rollback') && inflight.length) {
    await cancelRunIds(ctx, inflight.map((r) => r.id), strategy, `multitask:${strategy}:${runId}`);
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

/** Deletes a finished or pending run and its stream. CONFLICT while it runs. */
export async function deleteRun(ctx: AuthorizedContext, threadId: string, runId: string): Promise<void> {
  const run = await getRun(ctx, threadId, runId, 'delete');
  if (run.status === 'running') throw AppError.conflict('Run is running; cancel it first');
  await store.deleteRunAndEvents(ctx.db, run.runId);
  if (run.status === 'pending') await ctx.events.publish('runs.stream', { runId: run.runId, status: 'interrupted' }, run.runId);
}

/**
 * Cancels runs by id, for `reason` (the run's `cancel_reason`: `user`, `taken:<run>`,
 * `multitask:<strategy>:<run>`, `disconnect`). Pending ones end at once (`interrupted`; deleted for
 * rollback); running ones are signalled to the runtime executing them (`runs.cancel`), which stops the graph.
 */
export async function cancelRunIds(ctx: AgentServerContext, runIds: string[], action: 'interrupt' | 'rollback', reason: string): Promise<void> {
  if (!runIds.length) return;
  const ended = await store.endPendingRuns(ctx.db, runIds, action, reason);
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
  if (query.reason === 'taken' && query.action !== 'interrupt') {
    throw new AppError('VALIDATION_FAILED', 'reason=taken cancels with action=interrupt only.', [{ loc: ['query', 'reason'], msg: 'only with action=interrupt', type: 'value_error' }]);
  }
  if (!isTerminalStatus(run.status)) await cancelRunIds(ctx, [run.runId], query.action, query.reason === 'taken' ? `taken:${await runningRunOf(ctx, threadId)}` : 'user');
  if (waiting) await waiting;
  return { waited: query.wait };
}

/** The thread's running run, which took a cancelled run's input (steering): `taken:<its id>`, or `taken:` when none runs. */
async function runningRunOf(ctx: AgentServerContext, threadId: string): Promise<string> {
  const [running] = await store.selectRunIds(ctx.db, ctx.deployment.deploymentId, { threadId, statuses: ['running'] });
  return running ?? '';
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
  await cancelRunIds(ctx, await visibleRunIds(ctx, ids, filter), action, 'user');
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
