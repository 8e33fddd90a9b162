// The runtime role for one deployment: works the deployment's run queue and listens for cancellations.
// It holds a session advisory lock named after its worker id for as long as it lives, so runs it
// leaves `running` when it dies are recognised and executed again (agent-server/runtime/recovery.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from 'pg-boss';
import { isDatabaseUnreachable } from '../../errors.js';
import { newId } from '../../ids.js';
import { type RunJob, wakeWhenDue } from '../services/runs/run-queue.js';
import { failUnendedRun, selectRunsNotRunningBy } from '../services/runs/runs.store.js';
import { type CancelReason, type ClaimedRun, executeRun, fetchAndClaimRuns, type RunTracer } from './executor.js';
import { storedEncryptionContext, withEncryptionContext } from '../services/encryption/at-rest.js';
import { runtimeLockKey } from '../../contracts/launcher-protocol.js';
import { enqueueRunsWithoutJob, failRunningRun, pruneDeadRuntimes, recoverOrphanedRuns, requeueRun, wakeIfThreadHasMore as wakeThreadRuntimes } from './recovery.js';
import type { RuntimeContext } from './runtime-context.js';

export type Runtime = {
  workerId: string;
  /**
   * Takes no more runs, lets those in progress finish for a while (drainMs), stops the rest and lets
   * go of its liveness lock. The rest end as errors, or, given `handOver` (another runtime takes the
   * deployment over), go back to the queue for it to execute again.
   */
  stop(options?: { handOver?: boolean }): Promise<void>;
};

// Runs are fetched when woken (their creation, `runs.queued`, a thread's next run after the last one
// ends, recovery, a delayed run's timer, the event bus listening again after its connection was lost);
// a backstop poll catches what these miss. While runs come and go it polls every second: measured with
// 5 s (loaded machine), three runs enqueued on one thread took about 1.4 s instead of 0.8 s, so some
// hand-off still waits for it. Once nothing has run for BUSY_FOR_MS no hand-off is pending, and an idle
// runtime polls every IDLE_BACKSTOP_POLL_MS: a statement a second per deployment was most of what an
// idle agent server did.
const BACKSTOP_POLL_MS = 1_000;
const BUSY_FOR_MS = 30_000;
const IDLE_BACKSTOP_POLL_MS = 30_000;

/**
 * Starts executing the deployment's runs in this process. `livenessRetaken` runs when its liveness
 * lock was taken again after a database outage (what a sweep removed meanwhile, seeing it free, goes back).
 */
export async function startRuntime(
  ctx: RuntimeContext,
  options: { concurrency: number; drainMs: number; tracer?: RunTracer; livenessRetaken?: () => Promise<void> },
): Promise<Runtime> {
  const workerId = newId();
  const { queue } = ctx.deployment;
  const active = new Map<string, AbortController>();
  const stop = new AbortController();

  // The liveness lock lives on the event bus's connection, which the runtime needs anyway: if this
  // process dies, PostgreSQL drops it. While it was lost (a database outage) a sweep may have seen it
  // free and put this runtime's runs back in the queue: once it is taken again, the runs no longer
  // this runtime's are stopped, writing nothing.
  const liveness = await ctx.events.holdLock(runtimeLockKey(workerId), async () => {
    await options.livenessRetaken?.();
    for (const runId of await selectRunsNotRunningBy(ctx.db, [...active.keys()], workerId)) active.get(runId)?.abort('taken' satisfies CancelReason);
  });

  // Runs are fetched and claimed in one statement, so a run is registered in `active` only once its
  // claim has committed: a cancel heard while a fetch is in flight is kept here and applied to the
  // run if that fetch claimed it (a run still pending when cancelled is ended by the canceller).
  const cancelledDuringFetch = new Map<string, CancelReason>();

  // `claimed` is the job's run, or undefined when it was cancelled, deleted or taken meanwhile.
  const handle = async (job: Pick<Job<RunJob>, 'id' | 'data'>, controller: AbortController, row: ClaimedRun | undefined) => {
    const runId = job.data.runId;
    let stateless = false;
    let jobCompleted = false;
    try {
      // The thread's latest checkpoint (for a rollback), read by the claim.
      const startCheckpoint = row ? row.start_checkpoint : undefined;
      stateless = row?.kwargs.temporary ?? false;
      // A stateless run's job is completed with its outcome: no later run waits on it, unlike a kept
      // thread's, whose next run must not start before this one has also updated the thread.
      const completeJob = stateless ? await queue.completionUpdate(job.id).catch(() => undefined) : undefined;
      // In the encryption context the run was created in (stored with its kwargs), for what it seals.
      if (row) {
        const execute = () => executeRun(ctx, row, { workerId, signal: controller.signal, tracer: options.tracer, startCheckpoint, completeJob });
        const executed = await withEncryptionContext(storedEncryptionContext(row.kwargs), execute);
        // Its job is the attempt's that took the run over: completing it would let the thread's next run start.
        if (executed.status === 'taken') return;
        // Cut short by this runtime handing over: back in the queue (its job with it) for the runtime
        // taking over, or, when it cannot go back, ended as error as a runtime that died would leave it.
        if (executed.status === 'handed-over') {
          const running = { ...row, worker_id: workerId, job_id: job.id, temporary: stateless };
          const reason = `runtime ${workerId} handed over during attempt ${row.attempt}`;
          if (await requeueRun(ctx, queue.boss, running, job.id, reason)) return;
          await failRunningRun(ctx, queue.boss, running, 'The runtime executing this run stopped before it finished');
          return;
        }
        jobCompleted = executed.jobCompleted;
      }
    } catch (error) {
      // Never fail the job: a failed job would hold back the thread's later runs. A run that failed
      // before its outcome was written, with its job about to complete, ends too rather than wait forever.
      ctx.logger.error({ err: error, runId }, 'run execution failed');
      await onceDatabaseAnswers(ctx, stop.signal, 'could not end a failed run', () => failUnendedRun(ctx.db, runId));
      await ctx.events.publish('runs.stream', { runId, status: 'error' }, runId).catch(() => undefined);
    } finally {
      if (active.get(runId) === controller) active.delete(runId);
      lastBusy = Date.now();
    }
    // key_strict_fifo releases the thread's next job only once this one completes.
    if (!jobCompleted) await onceDatabaseAnswers(ctx, stop.signal, 'could not complete a run job', () => queue.complete(job.id));
    // Without the database (an outage) the backstop poll finds the thread's next run once it is back.
    if (!stateless) await wakeIfThreadHasMore(runId).catch((error: unknown) => ctx.logger.warn({ err: error, runId }, "could not look for the thread's next run"));
  };

  const start = (fetched: Awaited<ReturnType<typeof fetchAndClaimRuns>>) => {
    for (const { job, claimed } of fetched) {
      const controller = new AbortController();
      // Claimed again while an execution of it is still going here: a sweep put it back in the queue
      // while this runtime was away from the database (its liveness lock lost), and that execution is
      // the old attempt's.
      if (claimed) active.get(job.data.runId)?.abort('taken' satisfies CancelReason);
      if (claimed || !active.has(job.data.runId)) active.set(job.data.runId, controller);
      const cancelled = cancelledDuringFetch.get(job.data.runId);
      if (cancelled) controller.abort(cancelled);
      running++;
      void handle(job, controller, claimed).finally(() => {
        running--;
        if (mayHaveJobs) void pump();
      });
    }
  };

  const wakeIfThreadHasMore = async (runId: string) => {
    // This runtime is woken in-process; the others hear `runs.queued`.
    if (await wakeThreadRuntimes(ctx, ctx.deployment.deploymentId, runId, queue.origin)) wake();
  };

  // One dispatcher per process instead of pg-boss workers: pg-boss wakes every local worker on each
  // job (one fetch query per worker per run), while this fetches only the free slots' worth of jobs,
  // and only when jobs may be waiting: after a wake-up (a run created here, a `runs.queued` NOTIFY
  // from elsewhere, a delayed run falling due, the backstop poll) or when the last fetch filled every
  // free slot.
  let running = 0;
  // Stopping: no more runs are taken; those in progress may finish (stop()).
  let draining = false;
  let fetching: Promise<void> | undefined;
  let mayHaveJobs = true;
  // When a run last ended or a fetch found or failed, and when the last fetch began: the backstop's pace.
  let lastBusy = Date.now();
  let lastFetch = 0;
  const pump = (): Promise<void> => {
    // The fetch in flight loops again if a wake-up came meanwhile.
    fetching ??= fetchJobs().finally(() => (fetching = undefined));
    return fetching;
  };
  const fetchJobs = async (): Promise<void> => {
    try {
      while (mayHaveJobs && running < options.concurrency && !stop.signal.aborted && !draining) {
        mayHaveJobs = false;
        const wanted = options.concurrency - running;
        cancelledDuringFetch.clear();
        lastFetch = Date.now();
        const fetched = await fetchAndClaimRuns(ctx, wanted, workerId);
        if (fetched.length) {
          lastBusy = Date.now();
          start(fetched);
        }
        cancelledDuringFetch.clear();
        if (fetched.length >= wanted) mayHaveJobs = true;
      }
    } catch (error) {
      mayHaveJobs = true;
      lastBusy = Date.now();
      ctx.logger.warn({ err: error }, 'could not fetch runs');
    }
  };
  const wake = () => {
    mayHaveJobs = true;
    void pump();
  };

  void (async () => {
    for await (const { runId, action } of ctx.events.subscribe('runs.cancel', { signal: stop.signal })) {
      const controller = active.get(runId);
      if (controller) controller.abort(action satisfies CancelReason);
      else if (fetching) cancelledDuringFetch.set(runId, action);
    }
  })();
  await queue.ensure();
  void (async () => {
    // `resync`: when the bus listens again after losing its connection, what was published meanwhile
    // was not heard; a fetch finds it.
    const resync = { deploymentId: ctx.deployment.deploymentId };
    for await (const { origin, afterSeconds } of ctx.events.subscribe('runs.queued', { key: ctx.deployment.deploymentId, signal: stop.signal, resync })) {
      // Runs created through this queue object woke this runtime in-process already.
      if (origin !== queue.origin) wakeWhenDue(wake, afterSeconds);
    }
  })();
  queue.onLocalWake(wake);
  const poll = setInterval(() => {
    const now = Date.now();
    if (running > 0 || now - lastBusy < BUSY_FOR_MS || now - lastFetch >= IDLE_BACKSTOP_POLL_MS) wake();
  }, BACKSTOP_POLL_MS);
  poll.unref();
  wake();

  // Runs left `running` by a dead runtime of this deployment are recovered now; later ones by the
  // `runs.sweep` schedule (agent-server/jobs/boss.ts). Pending runs moved here without their jobs get them.
  await recoverOrphanedRuns(ctx, queue.boss, { deploymentId: ctx.deployment.deploymentId, exceptWorkerId: workerId });
  await enqueueRunsWithoutJob(ctx, queue);
  await pruneDeadRuntimes(ctx, ctx.deployment.deploymentId);

  return {
    workerId,
    async stop(stopOptions = {}) {
      clearInterval(poll);
      queue.onLocalWake(undefined);
      draining = true;
      // A fetch in flight may still hand this runtime jobs: they start, and are waited for, before
      // the deployment's persistence closes (a run started after would find its pool ended).
      await fetching;
      // Runs in progress finish, for a while (a rolling replacement drains its runtimes rather than
      // cut their runs short; the runs queued meanwhile wait for the runtime that takes over); then
      // the rest end as errors, their threads free for the next run, or are handed over.
      for (let waited = 0; running > 0 && waited < options.drainMs; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      stop.abort();
      const reason: CancelReason = stopOptions.handOver ? 'hand-over' : 'shutdown';
      for (const controller of active.values()) controller.abort(reason);
      for (let waited = 0; running > 0 && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      await liveness.release();
    },
  };
}

// Between two attempts at a write the database refused for being away.
const RETRY_DELAYS_MS = [250, 500, 1000, 2000];

/**
 * Runs `write`, again while it fails because the database is away (an outage), until it is done or
 * the runtime stops; any other failure is logged (`failure`) and given up. For the writes that end a
 * run: a run left `running`, or its job active, would hold back its thread's later runs for as long
 * as this runtime lives, since its liveness lock, taken again after the outage, says it is alive.
 */
async function onceDatabaseAnswers(ctx: RuntimeContext, stopped: AbortSignal, failure: string, write: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await write();
      return;
    } catch (error) {
      if (!isDatabaseUnreachable(error) || stopped.aborted) return ctx.logger.warn({ err: error }, failure);
      await sleep(RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]);
    }
  }
}
