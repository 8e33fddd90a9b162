// The runtime role for one deployment: works the deployment's run queue, listens for cancellations,
// and sweeps for runs whose runtime died. Each runtime process holds a session advisory lock named
// after its worker id for as long as it lives; a `running` run whose worker's lock is free belongs to
// a dead process and is ended as `error` (its job completed, so the thread's next run can start).
import pg from 'pg';
import type { Job } from 'pg-boss';
import { newId } from '../../ids.js';
import type { AgentServerContext } from './deployment-scope.js';
import { type CancelReason, type ClaimedRun, claimRuns, executeRun, latestCheckpointId, type RunTracer } from './executor.js';
import type { RunJob } from './run-queue.js';

export type Runtime = { workerId: string; stop(): Promise<void>; sweep(): Promise<number> };

const lockKey = (workerId: string) => `agent-platform:runtime:${workerId}`;

/** Starts executing the deployment's runs in this process. */
export async function startRuntime(
  ctx: AgentServerContext,
  options: { concurrency: number; sweepIntervalMs?: number; tracer?: RunTracer },
): Promise<Runtime> {
  const workerId = newId();
  const { queue } = ctx.deployment;
  const active = new Map<string, AbortController>();
  const stop = new AbortController();

  // The liveness lock lives on its own connection: if this process dies, PostgreSQL drops it.
  const lockClient = new pg.Client({ connectionString: ctx.db.url, application_name: 'agent-platform-runtime' });
  lockClient.on('error', () => undefined);
  await lockClient.connect();
  await lockClient.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey(workerId)]);

  void (async () => {
    for await (const { runId, action } of ctx.events.subscribe('runs.cancel', { signal: stop.signal })) {
      active.get(runId)?.abort(action satisfies CancelReason);
    }
  })();

  // Each fetched batch of jobs is claimed in one statement; `claimed` resolves to the job's run (or
  // undefined when it was cancelled, deleted or taken meanwhile). The job's AbortController is
  // registered before the claim, so a cancel sent right after the claim commits is not missed.
  const handle = async (job: Job<RunJob>, controller: AbortController, claimed: Promise<ClaimedRun | undefined>) => {
    const runId = job.data.runId;
    let stateless = false;
    try {
      // The thread's latest checkpoint (for a rollback) is read alongside the claim: the thread's
      // previous run has finished (per-thread order), so nothing can move it in between.
      const [row, startCheckpoint] = await Promise.all([claimed, job.data.threadId ? latestCheckpointId(ctx, job.data.threadId) : Promise.resolve(undefined)]);
      stateless = row?.kwargs.temporary ?? false;
      if (row) await executeRun(ctx, row, { workerId, signal: controller.signal, tracer: options.tracer, startCheckpoint });
    } catch (error) {
      // Never fail the job: a failed job would hold back the thread's later runs. A run whose claim
      // failed is still pending, with its job about to complete: it ends too rather than wait forever.
      ctx.logger.error({ err: error, runId }, 'run execution failed');
      await ctx.db.pool
        .query(`UPDATE agent_runs SET status = 'error', updated_at = now(), ended_at = now() WHERE id = $1 AND status IN ('pending', 'running')`, [runId])
        .catch(() => undefined);
      await ctx.events.publish('runs.stream', { runId, status: 'error' }, runId).catch(() => undefined);
    } finally {
      active.delete(runId);
    }
    // key_strict_fifo releases the thread's next job only once this one completes.
    await queue.complete(job.id).catch((error: unknown) => ctx.logger.warn({ err: error, runId }, 'could not complete a run job'));
    if (!stateless) await wakeIfThreadHasMore(runId);
  };

  const start = (jobs: Job<RunJob>[]) => {
    const controllers = jobs.map((job) => {
      const controller = new AbortController();
      active.set(job.data.runId, controller);
      return controller;
    });
    const claims = claimRuns(ctx, jobs.map((job) => job.data.runId), workerId);
    jobs.forEach((job, i) => {
      running++;
      void handle(job, controllers[i]!, claims.then((rows) => rows.get(job.data.runId))).finally(() => {
        running--;
        if (mayHaveJobs) void pump();
      });
    });
  };

  const wakeIfThreadHasMore = async (runId: string) => {
    const { rows } = await ctx.db.pool.query<{ waiting: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM agent_runs n JOIN agent_runs r ON r.thread_id = n.thread_id
         WHERE r.id = $1 AND n.status = 'pending' AND n.id <> r.id) AS waiting`,
      [runId],
    );
    if (rows[0]?.waiting) {
      wake();
      await ctx.events.publish('runs.queued', { deploymentId: ctx.deployment.deploymentId, origin: queue.origin }, ctx.deployment.deploymentId);
    }
  };

  // One dispatcher per process instead of pg-boss workers: pg-boss wakes every local worker on each
  // job (one fetch query per worker per run), while this fetches only the free slots' worth of jobs,
  // and only when jobs may be waiting: after a wake-up (a run created here, a `runs.queued` NOTIFY
  // from elsewhere, the once-a-second backstop) or when the last fetch filled every free slot.
  let running = 0;
  let fetching = false;
  let mayHaveJobs = true;
  const pump = async (): Promise<void> => {
    if (fetching) return; // the fetch in flight loops again if a wake-up came meanwhile
    fetching = true;
    try {
      while (mayHaveJobs && running < options.concurrency && !stop.signal.aborted) {
        mayHaveJobs = false;
        const wanted = options.concurrency - running;
        const jobs = await queue.boss.fetch<RunJob>(queue.name, { batchSize: wanted });
        if (jobs.length) start(jobs);
        if (jobs.length >= wanted) mayHaveJobs = true;
      }
    } catch (error) {
      mayHaveJobs = true;
      ctx.logger.warn({ err: error }, 'could not fetch runs');
    } finally {
      fetching = false;
    }
  };
  const wake = () => {
    mayHaveJobs = true;
    void pump();
  };

  await queue.ensure();
  void (async () => {
    for await (const { origin } of ctx.events.subscribe('runs.queued', { key: ctx.deployment.deploymentId, signal: stop.signal })) {
      // Runs created through this queue object woke this runtime in-process already.
      if (origin !== queue.origin) wake();
    }
  })();
  queue.onLocalWake(wake);
  const poll = setInterval(wake, 1000);
  poll.unref();
  wake();

  const sweep = async (): Promise<number> => {
    const { rows } = await ctx.db.pool.query<{ id: string; thread_id: string; worker_id: string; job_id: string | null }>(
      `SELECT id, thread_id, worker_id, job_id FROM agent_runs WHERE deployment_id = $1 AND status = 'running' AND worker_id IS DISTINCT FROM $2`,
      [ctx.deployment.deploymentId, workerId],
    );
    const dead = new Set<string>();
    for (const workerIdOfRun of new Set(rows.map((row) => row.worker_id))) {
      const { rows: lock } = await lockClient.query<{ free: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS free', [lockKey(workerIdOfRun)]);
      if (lock[0]?.free) {
        await lockClient.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey(workerIdOfRun)]);
        dead.add(workerIdOfRun);
      }
    }
    let recovered = 0;
    for (const row of rows.filter((r) => dead.has(r.worker_id))) {
      const error = { __error__: { error: 'RuntimeError', message: 'The runtime executing this run exited before it finished' } };
      const { rowCount } = await ctx.db.pool.query(
        `UPDATE agent_runs SET status = 'error', output = $2, updated_at = now(), ended_at = now() WHERE id = $1 AND status = 'running'`,
        [row.id, JSON.stringify(error)],
      );
      if (!rowCount) continue;
      recovered++;
      await ctx.db.pool.query(
        `INSERT INTO run_events (run_id, seq, event, data)
         SELECT $1, coalesce(max(seq), 0) + 1, 'error', $2 FROM run_events WHERE run_id = $1`,
        [row.id, JSON.stringify(error.__error__)],
      );
      await ctx.db.pool.query(
        `UPDATE agent_threads t SET status = CASE WHEN EXISTS (SELECT 1 FROM agent_runs r WHERE r.thread_id = t.id AND r.status = 'pending') THEN 'busy' ELSE 'error' END,
           error = $2, updated_at = now() WHERE id = $1`,
        [row.thread_id, JSON.stringify(error.__error__)],
      );
      if (row.job_id) await queue.complete(row.job_id).catch(() => undefined);
      await wakeIfThreadHasMore(row.id);
      await ctx.events.publish('runs.stream', { runId: row.id, status: 'error' }, row.id);
      await ctx.events.publish('runs.status', { runId: row.id, threadId: row.thread_id, status: 'error' }, row.thread_id);
      ctx.logger.warn({ runId: row.id, workerId: row.worker_id }, 'ended a run whose runtime died');
    }
    return recovered;
  };

  // Stateless runs that kept no thread are only readable while their callers wait; an hour later
  // their rows and stream events are dropped.
  const pruneStateless = async () => {
    await ctx.db.pool.query(
      `WITH gone AS (DELETE FROM agent_runs WHERE deployment_id = $1 AND (kwargs->>'temporary')::boolean
         AND status IN ('success', 'error', 'timeout', 'interrupted') AND ended_at < now() - interval '1 hour' RETURNING id)
       DELETE FROM run_events WHERE run_id IN (SELECT id FROM gone)`,
      [ctx.deployment.deploymentId],
    );
  };
  const pruneTimer = setInterval(() => void pruneStateless().catch((error: unknown) => ctx.logger.warn({ err: error }, 'pruning stateless runs failed')), 600_000);
  pruneTimer.unref();

  await sweep();
  const timer = setInterval(() => void sweep().catch((error: unknown) => ctx.logger.warn({ err: error }, 'run recovery sweep failed')), options.sweepIntervalMs ?? 5000);
  timer.unref();

  return {
    workerId,
    sweep,
    async stop() {
      clearInterval(timer);
      clearInterval(poll);
      clearInterval(pruneTimer);
      queue.onLocalWake(undefined);
      stop.abort();
      for (const controller of active.values()) controller.abort('shutdown' satisfies CancelReason);
      for (let waited = 0; running > 0 && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      await lockClient.end().catch(() => undefined);
    },
  };
}
