// Executes one run: claims its row, runs the graph with the deployment's checkpointer and store,
// appends every stream event, then records the outcome on the run and its thread. Cancellation comes
// in as an AbortSignal (from `runs.cancel`); the outcome is always written, so no run stays `running`.
import { resolvedTargetProblem } from '../../limits/outbound-url.js';
import { Command } from '@langchain/langgraph';
import type { Job } from 'pg-boss';
import type { RunJob } from '../services/runs/run-queue.js';
import { RunEventWriter } from '../services/runs/run-stream.js';
import type { RunKwargs, RunStatus } from '../services/runs/runs.schemas.js';
import type { RunTracer } from './agent-run-tracer.js';

export type { RunTracer };
import * as store from '../services/runs/runs.store.js';
import type { ClaimedRun, JobCompletion, RunRow } from '../services/runs/runs.store.js';
import { deleteCheckpointsAfter, latestCheckpointId, runResumePoint } from '../services/threads/checkpoints.store.js';
import { refreshThreadCache } from './graph-reads.js';
import { RELAXED_COMMIT_KEY } from './run-checkpointer.js';
import type { RuntimeContext } from './runtime-context.js';
import { serializeError, serializeJson } from '../../serialize.js';
import { openJson, openJsonKeys, sealJsonText } from '../services/encryption/at-rest.js';
import { RUN_KWARGS, RUN_KWARGS_SEALED } from '../services/runs/runs.schemas.js';
import { type StreamMode, streamGraphRun } from './stream-modes.js';

type Json = Record<string, unknown>;


/**
 * Why a run is stopped: cancelled (`interrupt`, `rollback`); its runtime stopping, as the deployment
 * stops (`shutdown`: the run ends as error) or as another runtime takes the deployment over
 * (`hand-over`: the run's events so far are stored, and its runtime puts it back in the queue for the
 * other to execute again); or `taken`: its runtime lost its liveness lock for a while (a database
 * outage) and a sweep gave the run to another attempt meanwhile, which this one leaves everything to.
 */
export type CancelReason = 'interrupt' | 'rollback' | 'shutdown' | 'hand-over' | 'taken';

export type ExecuteOptions = {
  workerId: string;
  /** Aborted with a CancelReason to stop the run. */
  signal: AbortSignal;
  tracer?: RunTracer;
  /** The thread's latest checkpoint before the run, when the caller already read it (null: none). */
  startCheckpoint?: string | null;
  /**
   * The run's queue job, for a stateless run: completed by the statement that stores the outcome
   * (one round trip less per run). The result says whether it was; if not, the caller completes it.
   */
  completeJob?: JobCompletion;
};

export type { ClaimedRun } from '../services/runs/runs.store.js';

/**
 * The claim's NOTIFYs: each run's `metadata` stream event (first of this attempt), and for runs on a
 * kept thread the `running` status to the thread's streams and status readers.
 */
function claimNotifications(ctx: RuntimeContext): string[] {
  const kept = `NOT coalesce((claimed.kwargs->>'temporary')::boolean, false)`;
  // The event itself only with run data on the event bus (config runDataOnEventBus); else readers read it.
  const metadataEvent = ctx.config.runDataOnEventBus ? `, 'events', json_build_array(json_build_object('seq', metadata.seq, 'event', 'metadata', 'data', metadata.data))` : '';
  return [
    ctx.events.notifySql('runs.stream', 'claimed.id', `json_build_object('runId', claimed.id, 'lastSeq', metadata.seq${metadataEvent})`),
    // Streams of a kept thread learn here that its run started.
    `CASE WHEN ${kept} THEN ${ctx.events.notifySql('runs.stream', 'claimed.id', `json_build_object('runId', claimed.id, 'status', 'running')`)}::text END`,
    `CASE WHEN ${kept} THEN ${ctx.events.notifySql('runs.status', 'claimed.thread_id', `json_build_object('runId', claimed.id, 'threadId', claimed.thread_id, 'status', 'running')`)}::text END`,
  ];
}

/**
 * Claims pending runs (pending → running) and reads each one's assistant's active version in the same
 * statement, which also appends each run's `metadata` stream event and sends the claim's NOTIFYs.
 * Runs missing from the result were cancelled, deleted or taken by another runtime.
 */
async function claimRuns(ctx: RuntimeContext, runIds: string[], workerId: string): Promise<Map<string, ClaimedRun>> {
  const rows = await store.claimRuns(ctx.db, runIds, workerId, claimNotifications(ctx));
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * Fetches up to `batchSize` jobs of the deployment's run queue and claims their runs: one statement
 * when pg-boss's fetch has the shape that allows it (RunQueue.fetchStatement), else a fetch and a
 * claim. A job comes back without `claimed` when its run was cancelled, deleted or taken meanwhile.
 */
export async function fetchAndClaimRuns(ctx: RuntimeContext, batchSize: number, workerId: string): Promise<{ job: Pick<Job<RunJob>, 'id' | 'data'>; claimed?: ClaimedRun }[]> {
  const { queue } = ctx.deployment;
  const fetch = await queue.fetchStatement(batchSize);
  if (fetch) return store.fetchAndClaimRuns(ctx.db, fetch, workerId, claimNotifications(ctx));
  const jobs = await queue.boss.fetch<RunJob>(queue.name, { batchSize });
  if (!jobs.length) return [];
  const claimed = await claimRuns(ctx, jobs.map((job) => job.data.runId), workerId);
  return jobs.map((job) => ({ job, claimed: claimed.get(job.data.runId) }));
}

function graphInput(kwargs: RunKwargs): unknown {
  if (kwargs.command) {
    const { resume, update, goto } = kwargs.command;
    return new Command({ resume, update: update as never, goto: goto as never });
  }
  return kwargs.input ?? null;
}

/** Runs a claimed run to its end and records the outcome. Never throws for graph failures. */
export async function executeRun(ctx: RuntimeContext, claimed: ClaimedRun, options: ExecuteOptions): Promise<{ status: RunStatus | 'deleted' | 'taken' | 'handed-over'; jobCompleted: boolean }> {
  // The run's and its assistant's JSON as given (opened, when encrypted at rest).
  const row: ClaimedRun = {
    ...claimed,
    kwargs: await openJsonKeys(ctx.config, RUN_KWARGS, claimed.kwargs, RUN_KWARGS_SEALED),
    metadata: await openJson(ctx.config, { model: 'run', field: 'metadata' }, claimed.metadata),
    assistant: claimed.assistant && {
      ...claimed.assistant,
      config: await openJson(ctx.config, { model: 'assistant', field: 'config' }, claimed.assistant.config),
      context: await openJson(ctx.config, { model: 'assistant', field: 'context' }, claimed.assistant.context),
    },
  };
  const runId = row.id;
  const threadId = row.thread_id;
  const kwargs = row.kwargs;
  const publishStatus = async (status: string, output?: string) => {
    await ctx.events.publish('runs.stream', { runId, status, output }, runId);
    if (!kwargs.temporary) await ctx.events.publish('runs.status', { runId, threadId, status }, threadId);
  };
  // Thread streams learned that the run started from the claim.

  // The claim appended the `metadata` event.
  const writer = new RunEventWriter(ctx, runId, Number(row.metadata_seq));
  const emit = kwargs.outcome_only ? () => undefined : (event: string, data: unknown) => writer.push(event, serializeJson(data));

  let status: RunStatus = 'success';
  let output: unknown = null;
  let failure: unknown;
  let graphId = '';
  let tracing: ReturnType<RunTracer>;
  // Where the thread stood before this run, for a rollback (kept in memory: a rollback of a running
  // run is carried out by the runtime executing it).
  let startCheckpoint: string | null = null;
  try {
    if (!kwargs.temporary) startCheckpoint = options.startCheckpoint !== undefined ? options.startCheckpoint : await latestCheckpointId(ctx.deployment.persistence.pool, threadId);
    // Executed again after its runtime died (recovery.ts): when the thread's latest checkpoint is this
    // run's, LangGraph resumes from it with no input (the step that was cut short runs again; the
    // writes of its tasks that had finished are kept); otherwise the run starts over with its input.
    // A stateless run keeps no checkpoint and always starts over.
    let resume = false;
    if (row.attempt > 1 && !kwargs.temporary) {
      const point = await runResumePoint(ctx.deployment.persistence.pool, threadId, runId);
      resume = point.latestByRun;
      startCheckpoint = point.before;
    }
    const assistant = row.assistant;
    if (!assistant) throw new Error(`Assistant ${row.assistant_id} no longer exists`);
    graphId = assistant.graph_id;
    const assistantConfig = assistant.config as { configurable?: Json; tags?: string[]; recursion_limit?: number };
    // A resumed run goes on from the latest checkpoint, not from the one it was asked to start from.
    const { checkpoint_id: _id, checkpoint_ns: _ns, checkpoint_map: _map, ...resumedConfigurable } = kwargs.config.configurable ?? {};
    const configurable: Json = {
      ...(assistantConfig.configurable ?? {}),
      ...(resume ? resumedConfigurable : (kwargs.config.configurable ?? {})),
      thread_id: threadId,
      run_id: runId,
      assistant_id: row.assistant_id,
      graph_id: graphId,
      // Its checkpoints' commits need not wait for the disk (run-checkpointer.ts), unless it asked for durability sync.
      ...(kwargs.durability === 'sync' ? {} : { [RELAXED_COMMIT_KEY]: true }),
    };
    const config = { configurable, tags: kwargs.config.tags ?? assistantConfig.tags, recursionLimit: kwargs.config.recursion_limit ?? assistantConfig.recursion_limit };
    const context = { ...(assistant.context ?? {}), ...(kwargs.context ?? {}) };
    const graph = await ctx.deployment.graphs.resolve(graphId, config, { accessContext: 'threads.create_run', executionRuntime: { context } }, { stateless: kwargs.temporary });
    tracing = options.tracer?.({ runId, threadId, assistantId: row.assistant_id, graphId, deploymentId: ctx.deployment.deploymentId });
    const events = streamGraphRun(graph, resume ? null : graphInput(kwargs), {
      runId,
      modes: kwargs.stream_mode as StreamMode[],
      subgraphs: kwargs.subgraphs,
      protocol: kwargs.protocol,
      signal: options.signal,
      onValues: (values) => {
        output = values;
      },
      config: {
        ...config,
        context,
        metadata: { ...row.metadata, run_id: runId, thread_id: threadId, assistant_id: row.assistant_id, graph_id: graphId, run_attempt: row.attempt },
        interruptBefore: kwargs.interrupt_before ?? undefined,
        interruptAfter: kwargs.interrupt_after ?? undefined,
        durability: kwargs.durability ?? undefined,
        ...(tracing ? { callbacks: tracing.callbacks } : {}),
      },
    });
    for await (const { event, data } of events) emit(event, data);
  } catch (error) {
    if (options.signal.aborted) {
      status = 'interrupted';
    } else {
      status = 'error';
      failure = error;
      emit('error', serializeError(error));
      ctx.logger.warn({ err: error, runId }, 'run failed');
    }
  }
  if (options.signal.aborted && status === 'success') status = 'interrupted';
  const eventsLost = (error: unknown) => ctx.logger.error({ err: error, runId }, 'could not store run events');
  // The trace is queued (not stored: the runtime's batcher writes it shortly) before the run is
  // reported done; a full batcher makes the run wait for room rather than lose the trace.
  await Promise.resolve(tracing?.onEnd?.({ status, error: failure })).catch((error: unknown) =>
    ctx.logger.warn({ err: error, runId }, 'could not store the run’s trace'),
  );

  const reason = options.signal.reason as CancelReason | undefined;
  // The run, its stream and its job are another attempt's now: nothing of this one is written.
  if (options.signal.aborted && reason === 'taken') {
    ctx.logger.warn({ runId }, 'stopped a run that was given to another attempt while this runtime was away from the database');
    return { status: 'taken', jobCompleted: false };
  }
  // Cut short by its runtime handing the deployment over: not ended, but put back in the queue
  // (runtime.ts) to be executed again from the checkpoints it wrote; its stream goes on after the
  // events stored here.
  if (status === 'interrupted' && reason === 'hand-over') {
    await writer.flush().catch(eventsLost);
    return { status: 'handed-over', jobCompleted: false };
  }
  let resultJson: string | undefined;
  // A small result rides on the final signal, with run data on the event bus; else readers read the row.
  const shown = (json: string | undefined) => (ctx.config.runDataOnEventBus && json && json.length < 4000 ? json : undefined);
  let published = false;
  let jobCompleted = false;
  if (status === 'interrupted' && reason === 'rollback') {
    // Rollback: the run never happened. Remove it, its events and the checkpoints it wrote.
    await writer.flush().catch(eventsLost);
    await store.deleteRunAndEvents(ctx.db, runId);
    if (!kwargs.temporary) await deleteCheckpointsAfter(ctx.deployment.persistence.pool, threadId, startCheckpoint);
  } else {
    if (status === 'interrupted' && reason === 'shutdown') {
      status = 'error';
      failure = new Error('The runtime shut down during the run');
    }
    const result = failure ? { __error__: serializeError(failure) } : output;
    resultJson = serializeJson(result);
    // Stored sealed when encryption at rest is on; readers are told the plain one (shown).
    const storedJson = resultJson === undefined ? undefined : await sealJsonText(ctx.config, { model: 'run', field: 'output' }, resultJson);
    const outcome = { status, output: storedJson! };
    const recordOutcome = () => store.updateRunOutcome(ctx.db, runId, status, storedJson);
    // The stream's last events are stored with the outcome.
    if (kwargs.temporary) {
      // No thread to update first: record the outcome and tell the readers in the same write.
      const final = { status, output: shown(resultJson) };
      await writer.finish(outcome, final, options.completeJob).then(
        () => (jobCompleted = options.completeJob !== undefined),
        async (error: unknown) => {
          eventsLost(error);
          await recordOutcome();
          await ctx.events.publish('runs.stream', { runId, ...final }, runId);
        },
      );
      published = true;
    } else {
      await writer.finish(outcome).catch(async (error: unknown) => {
        eventsLost(error);
        await recordOutcome();
      });
    }
  }
  const shownOutput = shown(resultJson);
  if (!kwargs.temporary) {
    // The statement that shows the run's end on its thread also announces it (unless a payload is too
    // large to go inline: then it is published after).
    const stream = ctx.events.notifyArguments('runs.stream', { runId, status, output: shownOutput }, runId);
    const thread = ctx.events.notifyArguments('runs.status', { runId, threadId, status }, threadId);
    const notify = !published && stream && thread ? [stream, thread] : [];
    const updated = await refreshThreadCache(ctx, threadId, { error: status === 'error' ? failure : undefined, notify }).catch((error: unknown) => {
      ctx.logger.error({ err: error, runId }, 'could not update the thread after a run');
      return false;
    });
    if (updated && notify.length) published = true;
  }
  if (!published) await publishStatus(status, shownOutput);
  if (kwargs.webhook && !(status === 'interrupted' && reason === 'rollback')) {
    void sendWebhook(ctx, kwargs.webhook, { ...row, status, kwargs, values: output, error: failure ? serializeError(failure).message : undefined });
  }
  return { status: status === 'interrupted' && reason === 'rollback' ? 'deleted' : status, jobCompleted };
}

/** POSTs the finished run to its webhook: 3 attempts, 10 s each, backing off; failures are logged. */
async function sendWebhook(ctx: RuntimeContext, url: string, run: RunRow & { values: unknown; error?: string }) {
  const body = serializeJson({
    run_id: run.id,
    thread_id: run.thread_id,
    assistant_id: run.assistant_id,
    status: run.status,
    metadata: run.metadata,
    kwargs: run.kwargs,
    multitask_strategy: run.multitask_strategy,
    created_at: run.created_at,
    values: run.values,
    ...(run.error ? { error: run.error } : {}),
    webhook_sent_at: new Date().toISOString(),
  });
  const relative = url.startsWith('/');
  const { loopback } = ctx.deployment;
  if (relative && !loopback) {
    ctx.logger.warn({ runId: run.id, url }, 'webhook not sent: a path names a route of the project’s http.app, and it has none');
    return;
  }
  // Checked again when sending: the name may resolve somewhere else than when the run was created.
  const problem = relative || ctx.config.webhookAllowPrivate ? undefined : await resolvedTargetProblem(url);
  if (problem) {
    ctx.logger.warn({ runId: run.id, url, problem }, 'webhook not sent: target refused');
    return;
  }
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) };
      const response = relative ? await loopback!(url, init) : await fetch(url, init);
      if (response.ok) return;
      if (response.status < 500 && response.status !== 429) break;
    } catch {
      // network failure: retried below
    }
    await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
  }
  ctx.logger.warn({ runId: run.id, url }, 'webhook delivery failed');
}
