// Runs whose runtime died, and stateless runs nobody can read any more. Each runtime holds a session
// advisory lock named after its worker id for as long as it lives; a `running` run whose worker's
// lock is free belongs to a dead process. It goes back to the queue, its job at the head of its
// thread's (the thread's later runs still wait for it), and whichever runtime claims it executes it
// again from the thread's latest checkpoint (executor.ts); its readers follow the new attempt on the
// same stream. A run whose runtime died AGENT_SERVER_RUN_MAX_ATTEMPTS times (3) (a graph that kills its process) is
// ended as `error` instead, so it cannot crash runtimes forever. Both sweeps are pg-boss schedules
// (agent-server/jobs/boss.ts); a runtime also recovers its deployment's runs once when it starts, so
// a restarted `serve` picks up where it died.
import type { PgBoss } from 'pg-boss';
import { runtimeLockKey } from '../../contracts/launcher-protocol.js';
import type { Deps } from '../../context.js';
import { runQueueName } from '../services/runs/run-queue-name.js';
import * as store from '../services/runs/runs.store.js';
import { requeueRunJob, type RunQueue } from '../services/runs/run-queue.js';
import { withTransaction } from '../../db.js';
import { newId } from '../../ids.js';
import { deleteRuntime, listRuntimeIds } from '../services/served-deployment/served-deployment.store.js';

// Rolls back a requeue whose job had ended meanwhile.
class JobNotActive extends Error {}

/**
 * Recovers every running run (of one deployment, or all) whose runtime's liveness lock is free: puts
 * it back in the queue (`pending`, its job retried) and wakes the deployment's runtimes, or, after
 * `runMaxAttempts` attempts (AGENT_SERVER_RUN_MAX_ATTEMPTS) (or without an active job to retry), ends it as `error`, completes its
 * job and wakes the runtimes of threads that have more runs waiting. Returns how many it recovered.
 */
export async function recoverOrphanedRuns(deps: Deps, boss: PgBoss, options: { deploymentId?: string; exceptWorkerId?: string } = {}): Promise<number> {
  const { db } = deps;
  const rows = await store.selectRunningRuns(db, options);
  if (!rows.length) return 0;
  const dead = new Set<string>();
  // Try-lock and unlock must happen on one session.
  const client = await db.pool.connect();
  try {
    for (const workerId of new Set(rows.map((row) => row.worker_id))) {
      const { rows: lock } = await client.query<{ free: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS free', [runtimeLockKey(workerId)]);
      if (lock[0]?.free) {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [runtimeLockKey(workerId)]);
        dead.add(workerId);
      }
    }
  } finally {
    client.release();
  }
  let recovered = 0;
  const maxAttempts = deps.config.runMaxAttempts;
  for (const row of rows.filter((r) => dead.has(r.worker_id))) {
    if (row.attempt < maxAttempts && row.job_id && (await requeueRun(deps, boss, row, row.job_id, `runtime ${row.worker_id} exited during attempt ${row.attempt}`))) {
      recovered++;
      continue;
    }
    const message =
      row.attempt >= maxAttempts
        ? `The runtime executing this run exited before it finished, on each of its ${row.attempt} attempts: given up`
        : 'The runtime executing this run exited before it finished';
    if (await failRunningRun(deps, boss, row, message)) recovered++;
  }
  return recovered;
}

/**
 * Ends a run left running by `row.worker_id` as `error` (a RuntimeError with `message`), completes its
 * job and wakes the runtimes of its thread's next run. Whether it did (false: it had ended meanwhile).
 */
export async function failRunningRun(deps: Deps, boss: PgBoss, row: store.RunningRun, message: string): Promise<boolean> {
  const { db, events, logger } = deps;
  const error = { error: 'RuntimeError', message };
  if (!(await store.failRunningRun(db, row.id, error))) return false;
  if (!row.temporary) await store.markThreadFailed(db, row.thread_id, error);
  if (row.job_id) await boss.complete(runQueueName(row.deployment_id), row.job_id).catch(() => undefined);
  await wakeIfThreadHasMore(deps, row.deployment_id, row.id);
  await events.publish('runs.stream', { runId: row.id, status: 'error' }, row.id);
  await events.publish('runs.status', { runId: row.id, threadId: row.thread_id, status: 'error' }, row.thread_id);
  logger.warn({ runId: row.id, workerId: row.worker_id, attempt: row.attempt }, 'ended a run whose runtime died');
  return true;
}

/**
 * Puts a run left running by `row.worker_id` back in the queue (`pending`, its job `jobId` retried at
 * the head of its thread's) and wakes the deployment's runtimes; `reason` is kept on the job. Whether
 * it did (false: the run had ended or been taken meanwhile, or its job was no longer active).
 */
export async function requeueRun(deps: Deps, boss: PgBoss, row: store.RunningRun, jobId: string, reason: string): Promise<boolean> {
  const requeued = await withTransaction(deps.db, async (client) => {
    if (!(await store.requeueRunningRun(client, row.id, row.worker_id))) return false;
    if (!(await requeueRunJob(boss, row.deployment_id, client, jobId, reason))) throw new JobNotActive();
    return true;
  }).catch((error: unknown) => {
    if (error instanceof JobNotActive) return false;
    throw error;
  });
  if (!requeued) return false;
  // Readers keep following: the run is not over, and its next attempt appends to the same stream.
  await deps.events.publish('runs.stream', { runId: row.id, status: 'pending' }, row.id);
  if (!row.temporary) await deps.events.publish('runs.status', { runId: row.id, threadId: row.thread_id, status: 'pending' }, row.thread_id);
  await deps.events.publish('runs.queued', { deploymentId: row.deployment_id }, row.deployment_id);
  deps.logger.warn({ runId: row.id, workerId: row.worker_id, attempt: row.attempt, reason }, 'put a run back in the queue');
  return true;
}

/** Forgets the recorded runtimes (of one deployment, or all) whose process died without removing its row. */
export async function pruneDeadRuntimes(deps: Deps, deploymentId?: string): Promise<void> {
  const ids = await listRuntimeIds(deps.db, deploymentId);
  if (!ids.length) return;
  const client = await deps.db.pool.connect();
  try {
    for (const id of ids) {
      const { rows: lock } = await client.query<{ free: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS free', [runtimeLockKey(id)]);
      if (!lock[0]?.free) continue;
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [runtimeLockKey(id)]);
      await deleteRuntime(deps.db, id);
    }
  } finally {
    client.release();
  }
}

/**
 * Wakes the deployment's runtimes when the run's thread has another run pending (its job was held
 * back by per-thread order until this one completed). Returns whether it did.
 */
export async function wakeIfThreadHasMore(deps: Deps, deploymentId: string, runId: string, origin?: string): Promise<boolean> {
  if (!(await store.threadHasAnotherPendingRun(deps.db, runId))) return false;
  await deps.events.publish('runs.queued', { deploymentId, origin }, deploymentId);
  return true;
}

/**
 * Enqueues the deployment's pending runs that have no job: runs an earlier version kept in the
 * platform's database come here without theirs when the platform moves a deployment's rows into its
 * own database (platform/services/deployments/shared-agent-rows.ts). Each gets its job as its
 * creation would have given it (due when its old job was, `kwargs.start_after`), in its own
 * transaction with the run's row, oldest first (a thread's runs keep their order), and the
 * deployment's runtimes are woken. Returns how many.
 */
export async function enqueueRunsWithoutJob(deps: Deps, queue: RunQueue): Promise<number> {
  const runs = await store.selectPendingRunsWithoutJob(deps.db, queue.deploymentId);
  let enqueued = 0;
  for (const run of runs) {
    const jobId = newId();
    const claimed = await withTransaction(deps.db, async (client) => {
      if (!(await store.claimRunForJob(client, run.id, jobId))) return false;
      const startAfterSeconds = run.due_in_seconds && run.due_in_seconds > 0 ? run.due_in_seconds : undefined;
      await queue.send(client, { runId: run.id, threadId: run.thread_id, stateful: !run.temporary, jobId, startAfterSeconds });
      return true;
    });
    if (claimed) enqueued++;
  }
  if (enqueued) {
    await deps.events.publish('runs.queued', { deploymentId: queue.deploymentId }, queue.deploymentId);
    deps.logger.info({ deploymentId: queue.deploymentId, runs: enqueued }, 'enqueued pending runs that had no job (moved from the platform\'s database)');
  }
  return enqueued;
}

/**
 * Stateless runs that kept no thread are only readable while their callers wait; an hour later
 * their rows and stream events are dropped.
 */
export async function pruneStatelessRuns(deps: Deps): Promise<void> {
  await store.deleteEndedStatelessRuns(deps.db);
}
