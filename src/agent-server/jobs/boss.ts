// pg-boss: the job queue on the agent server's own database (schema `pgboss`). Its queues and
// schedules (runs, crons, store and thread sweeps, event pruning: what every agent server works on its
// own database) are declared here with explicit options; the platform's own (usage, exports, traces,
// the control plane's pipeline) are in platform/jobs/platform-jobs.ts, on the platform's database,
// which an agent server never loads. Queues are created at start-up, and a process that works them
// runs the cron clock. Job payloads carry ids only; the rows they point at hold the state.
import { PgBoss } from 'pg-boss';
import type { Deps } from '../../context.js';
import { pruneEventPayloads } from './events-prune.job.js';
import { pruneIdleBuckets } from '../services/rate-limits/rate-limits.store.js';
import { pruneStatelessRunsJob, sweepOrphanedRunsJob } from './runs-sweep.job.js';
import { sweepStoreJob } from './store-sweep.job.js';
import { CRON_FIRE_QUEUE } from '../services/crons/cron-schedule.js';
import { fireCronJob } from './cron-fire.job.js';
import { sweepExpiredThreads } from './threads-sweep.job.js';
import { declareQueues, EVENTS_PRUNE_QUEUE, type QueueDefinition, startJobQueue, workNotified } from '../../queues.js';

/**
 * The agent server's fixed-name queues, with their options.
 *
 * `notify`: sending a job (or a schedule's tick) wakes the worker role's workers at once through
 * pg-boss's LISTEN/NOTIFY, and they poll only as a slow backstop (pg-boss's 30 s) instead of every
 * 2 s each, which was most of an idle installation's statements. A retry is announced by no NOTIFY:
 * `workNotified` wakes the worker when a failed job's retry delay is over. Only a job that expired
 * (its worker died) waits for the backstop, at most 30 s more.
 */
export const QUEUES = {
  eventsPrune: EVENTS_PRUNE_QUEUE,
  runsSweep: {
    name: 'runs.sweep',
    notify: true,
    // Ends runs whose runtime died; one sweep at a time.
    policy: 'singleton',
    retryLimit: 0,
    expireInSeconds: 120,
  },
  runsPruneStateless: {
    name: 'runs.prune-stateless',
    notify: true,
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 60,
    expireInSeconds: 300,
  },
  cronsFire: {
    name: CRON_FIRE_QUEUE,
    notify: true,
    // Each cron's own schedule (keyed by the cron id, see agent-server/services/crons/cron-schedule.ts) sends its
    // ticks here. A failed tick is not retried: the next tick is the next run.
    policy: 'standard',
    retryLimit: 0,
    expireInSeconds: 120,
  },
  storeSweep: {
    name: 'store.sweep',
    notify: true,
    // Deletes expired store items (reads skip them already); one sweep at a time.
    policy: 'singleton',
    retryLimit: 1,
    retryDelay: 60,
    expireInSeconds: 300,
  },
  threadsSweep: {
    name: 'threads.sweep',
    notify: true,
    // Deletes threads whose TTL ran out; one sweep at a time.
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 60,
    expireInSeconds: 600,
  },
} satisfies Record<string, QueueDefinition>;

/** Recurring jobs of the agent server. */
const SCHEDULES: { queue: string; cron: string }[] = [
  { queue: QUEUES.eventsPrune.name, cron: '*/10 * * * *' },
  // A runtime recovers its own deployment's runs when it starts; this catches the ones whose
  // runtime is not restarted.
  { queue: QUEUES.runsSweep.name, cron: '* * * * *' },
  { queue: QUEUES.runsPruneStateless.name, cron: '*/10 * * * *' },
  // Every minute, as threads.sweep: each deployment's own sweep_interval_minutes paces its deletes.
  { queue: QUEUES.storeSweep.name, cron: '* * * * *' },
  // Every minute: a TTL is in minutes.
  { queue: QUEUES.threadsSweep.name, cron: '* * * * *' },
];

/**
 * Starts this process's pg-boss on the agent server's database and creates its queues. `work`: work
 * them (handlers, schedules, cron clock). `maintain`: queue maintenance (expiry, deletion), done by a
 * process that works them; a runtime's worker thread leaves it to its process.
 */
export async function startBoss(
  deps: Deps,
  options: {
    work: boolean;
    maintain?: boolean;
    /** Installs or migrates pg-boss's schema and declares the queues (default). */
    install?: boolean;
  },
): Promise<PgBoss> {
  const install = options.install ?? true;
  const boss = await startJobQueue(deps, { ...options, install });
  if (install) await declareQueues(boss, Object.values(QUEUES));
  if (options.work) {
    // Every ten minutes: event payloads nobody reads any more, and rate-limit buckets full again.
    await workNotified(boss, QUEUES.eventsPrune, async () => ({ ...(await pruneEventPayloads(deps)), idleBuckets: await pruneIdleBuckets(deps.db) }));
    await workNotified(boss, QUEUES.runsSweep, async () => sweepOrphanedRunsJob(deps, boss));
    await workNotified(boss, QUEUES.runsPruneStateless, async () => pruneStatelessRunsJob(deps));
    await workNotified(boss, QUEUES.storeSweep, async () => sweepStoreJob(deps));
    await workNotified(boss, QUEUES.cronsFire, async (jobs) => fireCronJob(deps, jobs));
    await workNotified(boss, QUEUES.threadsSweep, async () => sweepExpiredThreads(deps));
    for (const { queue, cron } of SCHEDULES) await boss.schedule(queue, cron);
  }
  return boss;
}
