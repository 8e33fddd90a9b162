// pg-boss: the job queue on the same PostgreSQL (schema `pgboss`). Every queue and schedule of the
// platform is declared here with explicit options; queues are created at start-up, and the `worker`
// role works the jobs and runs the cron clock. Job payloads carry ids only; the rows they point at
// hold the state.
import { type Job, PgBoss, type Queue } from 'pg-boss';
import type { Deps } from '../services/context.js';
import { pruneEventPayloads } from './events-prune.job.js';
import { foldUsage } from './usage-fold.job.js';
import { EXPORT_RUN_QUEUE, workExports } from './export-run.job.js';
import { pruneStatelessRunsJob, sweepOrphanedRunsJob } from './runs-sweep.job.js';
import { sweepStoreJob } from './store-sweep.job.js';
import { CRON_FIRE_QUEUE } from '../services/crons/cron-schedule.js';
import { fireCronJob } from './cron-fire.job.js';
import { sweepExpiredThreads } from './threads-sweep.job.js';
import { deleteExpiredTraceRuns } from './traces-retention.job.js';
import { createTracePartitionsAhead } from './traces-partitions.job.js';
import { REVISION_BUILD_QUEUE, REVISION_DEPLOY_QUEUE } from '../services/deployments/revisions.service.js';
import { workRevisionPipeline } from './revision-pipeline.job.js';
import { watchPushedRefs } from './revisions-watch.job.js';

import { bossConnection, finishedJobRetention, rememberJobRetention } from '../queues.js';

type QueueDefinition = Omit<Queue, 'name'> & { name: string };

/**
 * Every fixed-name queue the platform uses, with its options. Areas add their queues here.
 *
 * `notify`: sending a job (or a schedule's tick) wakes the worker role's workers at once through
 * pg-boss's LISTEN/NOTIFY, and they poll only as a slow backstop (pg-boss's 30 s) instead of every
 * 2 s each, which was most of an idle installation's statements. A retry is announced by no NOTIFY:
 * `workNotified` wakes the worker when a failed job's retry delay is over. Only a job that expired
 * (its worker died) waits for the backstop, at most 30 s more.
 */
export const QUEUES = {
  eventsPrune: {
    name: 'events.prune',
    notify: true,
    // One prune at a time is enough; duplicates while one waits are dropped.
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 60,
    expireInSeconds: 300,
  },
  usageFold: {
    name: 'usage.fold',
    notify: true,
    // Folds serialise on an advisory lock anyway; a fold queued behind a running one adds nothing.
    policy: 'singleton',
    retryLimit: 3,
    retryDelay: 30,
    expireInSeconds: 600,
  },
  exportRun: {
    name: EXPORT_RUN_QUEUE,
    // At most one job per run waiting (singletonKey = run id): re-sending a run already queued is a
    // no-op. Not one active per run: a dead worker's job stays active until it expires, and the
    // sweep hands its run to a new job before that (the run's lease decides who executes).
    // Retry limit and delay are set per job from the configuration.
    policy: 'short',
    // No `notify`: with it, workers poll only as a slow backstop, and a retried run (no NOTIFY)
    // waited for that backstop rather than its retry delay.
  },
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
    // Each cron's own schedule (keyed by the cron id, see services/crons/cron-schedule.ts) sends its
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
  tracesRetention: {
    name: 'traces.retention',
    notify: true,
    // Deletes trace runs past their workspace's retention; one pass at a time.
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 300,
    expireInSeconds: 3600,
  },
  tracesPartitions: {
    name: 'traces.partitions',
    notify: true,
    // Creates trace_runs's week partitions ahead; one pass at a time.
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 300,
    expireInSeconds: 600,
  },
  revisionBuild: {
    name: REVISION_BUILD_QUEUE,
    notify: true,
    // One job per revision (singletonKey = revision id). Not retried: a failed build is BUILD_FAILED
    // with its reason in the log; a worker that died mid-build leaves the job to expire, and the
    // expired job's retry finds the revision BUILDING and fails it as interrupted.
    policy: 'short',
    retryLimit: 1,
    retryDelay: 5,
    expireInSeconds: 30 * 60,
  },
  revisionsWatch: {
    name: 'revisions.watch-refs',
    notify: true,
    // build_on_push: one sweep over the watched refs at a time.
    policy: 'singleton',
    retryLimit: 0,
    expireInSeconds: 600,
  },
  revisionDeploy: {
    name: REVISION_DEPLOY_QUEUE,
    notify: true,
    policy: 'short',
    retryLimit: 0,
    expireInSeconds: 10 * 60,
  },
} satisfies Record<string, QueueDefinition>;

/** The queues a deployed agent server works on its own database (startBoss `work: 'agent-server'`). */
const AGENT_SERVER_QUEUES = new Set<string>([
  QUEUES.eventsPrune.name,
  QUEUES.runsSweep.name,
  QUEUES.runsPruneStateless.name,
  QUEUES.storeSweep.name,
  QUEUES.cronsFire.name,
  QUEUES.threadsSweep.name,
]);

/** Recurring jobs, worked by the worker role. */
const SCHEDULES: { queue: string; cron: string }[] = [
  { queue: QUEUES.eventsPrune.name, cron: '*/10 * * * *' },
  // A runtime recovers its own deployment's runs when it starts; this catches the ones whose
  // runtime is not restarted.
  { queue: QUEUES.runsSweep.name, cron: '* * * * *' },
  { queue: QUEUES.runsPruneStateless.name, cron: '*/10 * * * *' },
  // Every minute (cron's finest grain): the unfolded tail a usage read adds stays a minute of deltas.
  { queue: QUEUES.usageFold.name, cron: '* * * * *' },
  // Every minute, as threads.sweep: each deployment's own sweep_interval_minutes paces its deletes.
  { queue: QUEUES.storeSweep.name, cron: '* * * * *' },
  // Every minute: a TTL is in minutes.
  { queue: QUEUES.threadsSweep.name, cron: '* * * * *' },
  // Retention is in days; hourly keeps each pass small.
  { queue: QUEUES.tracesRetention.name, cron: '17 * * * *' },
  // Partitions are weeks, created four weeks ahead: daily is plenty, hourly heals a missed day sooner.
  { queue: QUEUES.tracesPartitions.name, cron: '43 * * * *' },
  { queue: QUEUES.revisionsWatch.name, cron: '* * * * *' },
];

/**
 * Starts this process's pg-boss and creates the queues. `work`: the worker role (handlers, schedules,
 * cron clock). `maintain`: queue maintenance (expiry, deletion), done by a worker or a runtime process;
 * a runtime's worker thread leaves it to its process.
 */
export async function startBoss(
  deps: Deps,
  options: {
    /** `agent-server`: only a deployed agent server's own queues (runs, crons, store and thread sweeps). */
    work: boolean | 'agent-server';
    maintain?: boolean;
    applicationName?: string;
    /** Installs or migrates pg-boss's schema and declares the queues (default); a deployed runtime's login may not. */
    install?: boolean;
  },
): Promise<PgBoss> {
  const install = options.install ?? true;
  const boss = new PgBoss({
    ...bossConnection(deps.db.url),
    application_name: options.applicationName ?? 'agent-platform-jobs',
    max: deps.config.jobsPoolSize,
    supervise: options.maintain ?? Boolean(options.work),
    // pg-boss deletes a queue's finished jobs at most once per maintenance interval (a day by default),
    // which would keep a day of jobs whatever the retention: as often as the retention, within 1–60 min.
    maintenanceIntervalSeconds: Math.max(60, Math.min(3600, deps.config.jobRetentionSeconds || 3600)),
    schedule: Boolean(options.work),
    // The cron clock's pass, and the polling of the queue it hands due ticks to (5 s in pg-boss),
    // which would otherwise add its own delay to a shortened pass.
    cronMonitorIntervalSeconds: deps.config.cronClockSeconds,
    cronWorkerIntervalSeconds: Math.min(5, deps.config.cronClockSeconds),
    // Runtimes are woken by the platform's own `runs.queued` event (see runtime.ts), not pg-boss's.
    useListenNotify: Boolean(options.work),
    migrate: install,
  });
  boss.on('error', (error: unknown) => deps.logger.error({ err: error }, 'job queue error'));
  rememberJobRetention(boss, deps.config.jobRetentionSeconds);
  await boss.start();
  for (const { name, ...queueOptions } of install ? (Object.values(QUEUES) as QueueDefinition[]) : []) {
    await boss.createQueue(name, { ...queueOptions, ...finishedJobRetention(boss) });
    // createQueue leaves an existing queue as it was: a changed setting is applied here.
    await boss.updateQueue(name, { ...finishedJobRetention(boss), notify: queueOptions.notify ?? false });
  }
  if (options.work) {
    // The agent server's own upkeep, on whichever database it runs (a deployed agent server's own).
    await workNotified(boss, QUEUES.eventsPrune, async () => pruneEventPayloads(deps));
    await workNotified(boss, QUEUES.runsSweep, async () => sweepOrphanedRunsJob(deps, boss));
    await workNotified(boss, QUEUES.runsPruneStateless, async () => pruneStatelessRunsJob(deps));
    await workNotified(boss, QUEUES.storeSweep, async () => sweepStoreJob(deps));
    await workNotified(boss, QUEUES.cronsFire, async (jobs) => fireCronJob(deps, jobs));
    await workNotified(boss, QUEUES.threadsSweep, async () => sweepExpiredThreads(deps));
  }
  if (options.work === true) {
    await workNotified(boss, QUEUES.usageFold, async () => foldUsage(deps));
    await workExports(deps, boss);
    await workNotified(boss, QUEUES.tracesRetention, async () => deleteExpiredTraceRuns(deps));
    await workNotified(boss, QUEUES.tracesPartitions, async () => createTracePartitionsAhead(deps));
    // The control plane's pipeline; the runtimes it launches live as long as this job queue.
    if (deps.config.controlPlaneWorker) {
      const deployedRuntimes = await workRevisionPipeline(deps, boss);
      deps.deployedRuntimes = deployedRuntimes;
      await workNotified(boss, QUEUES.revisionsWatch, async () => watchPushedRefs(deps));
      boss.once('stopped', () => void deployedRuntimes.stop());
    }
  }
  if (options.work) {
    for (const { queue, cron } of SCHEDULES) if (options.work === true || AGENT_SERVER_QUEUES.has(queue)) await boss.schedule(queue, cron);
    // A platform that was down longer than the partitions made ahead catches up now, not at the next tick.
    if (options.work === true) await boss.send(QUEUES.tracesPartitions.name, {});
  }
  return boss;
}

// A little after the retry is due, so the fetch finds it (the delay counts from pg-boss's write of
// the failure, just after the handler throws).
const RETRY_WAKE_MARGIN_MS = 500;

/**
 * Works a `notify` queue (see QUEUES): NOTIFY wakes its worker for new jobs; a job whose handler
 * throws and that the queue retries wakes it again once the queue's retry delay is over, as its
 * polling did before.
 */
export async function workNotified<T extends object>(boss: PgBoss, queue: QueueDefinition, handler: (jobs: Job<T>[]) => Promise<unknown>): Promise<string> {
  let workerId = '';
  workerId = await boss.work<T>(queue.name, async (jobs) => {
    try {
      return await handler(jobs);
    } catch (error) {
      if (queue.retryLimit) setTimeout(() => boss.notifyWorker(workerId), (queue.retryDelay ?? 0) * 1000 + RETRY_WAKE_MARGIN_MS).unref();
      throw error;
    }
  });
  return workerId;
}
