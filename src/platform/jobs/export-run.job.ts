// Bulk export jobs: `exports.run` executes one export run (a UTC day); the dispatcher starts waiting
// runs as capacity frees (limits per export and per workspace, across every worker); the sweep spawns
// scheduled windows, times out exports and hands runs of dead workers to live ones.
import type { PgBoss } from 'pg-boss';
import { z } from 'zod';
import type { Deps } from '../../context.js';
import { executeExportRun } from '../services/exports/export-runner.js';
import { spawnScheduledExports } from '../services/exports/exports.service.js';
import * as store from '../services/exports/exports.store.js';
import { workNotified } from '../../queues.js';

export const EXPORT_RUN_QUEUE = 'exports.run';
const ExportRunJob = z.object({ runId: z.uuid() });

/** Sends one job per run; a run already queued is not queued twice (the queue is `short` by run id). */
async function sendRunJobs(deps: Deps, boss: PgBoss, runIds: string[]) {
  const limits = deps.config.exports;
  for (const runId of runIds) {
    await boss.send(
      EXPORT_RUN_QUEUE,
      { runId },
      {
        singletonKey: runId,
        retryLimit: limits.retries,
        retryDelay: limits.retryDelaySeconds,
        retryBackoff: false,
        // A backstop only: the runner stops itself at the run timeout, and a dead worker's run is
        // handed over by the sweep when its lease lapses.
        expireInSeconds: Math.ceil(limits.runTimeoutSeconds) + 60,
      },
    );
  }
}

/** Starts the runs that fit within the limits now. */
async function dispatchExportRuns(deps: Deps, boss: PgBoss): Promise<void> {
  const claimed = await store.claimRunsToStart(deps.db.pool, deps.config.exports);
  await sendRunJobs(deps, boss, claimed);
}

/** Periodic: spawn due scheduled windows, time out exports, re-queue runs whose worker died, dispatch. */
async function sweepExports(deps: Deps, boss: PgBoss, now = new Date()): Promise<void> {
  const limits = deps.config.exports;
  for (const exportId of await store.timeOutExports(deps.db.pool, limits.exportTimeoutSeconds)) {
    await deps.events.publish('exports.progress', { exportId }, exportId);
  }
  await spawnScheduledExports(deps, now);
  await sendRunJobs(deps, boss, await store.findAbandonedRuns(deps.db.pool, limits.leaseSeconds));
  await dispatchExportRuns(deps, boss);
}

/** The worker role's part of bulk export: run handler, dispatcher wake-ups and the sweep timer. */
export async function workExports(deps: Deps, boss: PgBoss): Promise<void> {
  const limits = deps.config.exports;
  // Woken by NOTIFY, not polled: its workers' every-2-seconds fetches were most of an idle platform's statements.
  const queue = { name: EXPORT_RUN_QUEUE, notify: true };
  const retries = { limit: limits.retries, delaySeconds: limits.retryDelaySeconds };
  await workNotified<{ runId: string }>(boss, queue, async ([job]) => {
    const { runId } = ExportRunJob.parse(job!.data);
    try {
      await executeExportRun(deps, runId, job!.id);
    } finally {
      // A finished (or failed) run frees a slot for a waiting one.
      await dispatchExportRuns(deps, boss).catch((error: unknown) => deps.logger.error({ err: error }, 'export dispatch failed'));
    }
  }, { localConcurrency: limits.workerConcurrency, batchSize: 1, retries });

  const stop = new AbortController();
  let sweeping: Promise<void> | undefined;
  const sweep = () => {
    sweeping ??= sweepExports(deps, boss)
      .catch((error: unknown) => deps.logger.error({ err: error }, 'export sweep failed'))
      .finally(() => (sweeping = undefined));
    return sweeping;
  };
  // Created exports wake the dispatcher at once; the timer is the backstop for a missed notification.
  const wakeups = deps.events.subscribe('exports.dispatch', { signal: stop.signal });
  void (async () => {
    for await (const _ of wakeups) await dispatchExportRuns(deps, boss).catch((error: unknown) => deps.logger.error({ err: error }, 'export dispatch failed'));
  })();
  const timer = setInterval(sweep, limits.sweepSeconds * 1000);
  boss.once('stopped', () => {
    clearInterval(timer);
    stop.abort();
  });
  await sweep();
}
