// The platform's queues and their work (usage folds, exports, trace retention and partitions, the
// control plane's pipeline and ref watch, its event payloads and the records of agent servers whose
// launcher died), on the platform's database: an agent server's are its own, on its own database
// (agent-server/jobs/boss.ts), and it never loads these.
import type { PgBoss } from 'pg-boss';
import type { Deps } from '../../context.js';
import { REVISION_BUILD_QUEUE, REVISION_DEPLOY_QUEUE } from '../services/deployments/revisions.service.js';
import { pruneDeadAgentServers } from '../services/deployments/deployments.service.js';
import { declareQueues, EVENTS_PRUNE_QUEUE, type QueueDefinition, startJobQueue, workNotified } from '../../queues.js';
import { EXPORT_RUN_QUEUE, workExports } from './export-run.job.js';
import { workRevisionPipeline } from './revision-pipeline.job.js';
import { watchPushedRefs } from './revisions-watch.job.js';
import { createTracePartitionsAhead } from './traces-partitions.job.js';
import { deleteExpiredTraceRuns } from './traces-retention.job.js';
import { foldUsage } from './usage-fold.job.js';

/** The platform's fixed-name queues, with their options (see agent-server/jobs/boss.ts for `notify`). */
const PLATFORM_QUEUES = {
  eventsPrune: EVENTS_PRUNE_QUEUE,
  agentServersSweep: {
    name: 'deployments.agent-servers-sweep',
    notify: true,
    // Forgets agent servers whose launcher died; one sweep at a time.
    policy: 'singleton',
    retryLimit: 0,
    expireInSeconds: 120,
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
    // A retried run (no NOTIFY) wakes its worker when its retry delay is over (workNotified).
    notify: true,
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

/** The platform's recurring jobs, worked by the worker role. */
const PLATFORM_SCHEDULES: { queue: string; cron: string }[] = [
  { queue: PLATFORM_QUEUES.eventsPrune.name, cron: '*/10 * * * *' },
  { queue: PLATFORM_QUEUES.agentServersSweep.name, cron: '* * * * *' },
  // Every minute (cron's finest grain): the unfolded tail a usage read adds stays a minute of deltas.
  { queue: PLATFORM_QUEUES.usageFold.name, cron: '* * * * *' },
  // Retention is in days; hourly keeps each pass small.
  { queue: PLATFORM_QUEUES.tracesRetention.name, cron: '17 * * * *' },
  // Partitions are weeks, created four weeks ahead: daily is plenty, hourly heals a missed day sooner.
  { queue: PLATFORM_QUEUES.tracesPartitions.name, cron: '43 * * * *' },
  { queue: PLATFORM_QUEUES.revisionsWatch.name, cron: '* * * * *' },
];

/**
 * A platform process's job queue, on the platform's database: the platform's queues declared and, with
 * `work` (the worker role), worked with their schedules.
 */
export async function startPlatformJobs(deps: Deps, options: { work: boolean }): Promise<PgBoss> {
  const boss = await startJobQueue(deps, { work: options.work, install: true });
  await forgetEarlierAgentServerQueues(boss);
  await workPlatformJobs(deps, boss, options);
  return boss;
}

/**
 * The agent server's queues an earlier version kept in the platform's job queue, beside the
 * platform's own, for the local deployments a platform process hosted: their run queues
 * (`runs.execute.<id>`), their crons' ticks and the agent server's sweeps. No platform process works
 * them any more: every agent server has its own, on its own database, where the platform moves those
 * deployments' runs and crons (shared-agent-rows.ts), and where they get their jobs and schedules again.
 */
const EARLIER_AGENT_SERVER_QUEUES = new Set(['runs.sweep', 'runs.prune-stateless', 'store.sweep', 'threads.sweep', 'crons.fire']);

async function forgetEarlierAgentServerQueues(boss: PgBoss): Promise<void> {
  for (const { name } of await boss.getQueues()) {
    if (!EARLIER_AGENT_SERVER_QUEUES.has(name) && !name.startsWith('runs.execute.')) continue;
    for (const schedule of await boss.getSchedules(name)) await boss.unschedule(name, schedule.key);
    await boss.deleteQueue(name);
  }
}

/**
 * Declares the platform's queues on a process's started pg-boss and, with `work` (the worker role),
 * works them and runs their schedules.
 */
async function workPlatformJobs(deps: Deps, boss: PgBoss, options: { work: boolean; install?: boolean }): Promise<void> {
  if (options.install ?? true) await declareQueues(boss, Object.values(PLATFORM_QUEUES));
  if (!options.work) return;
  await workNotified(boss, PLATFORM_QUEUES.eventsPrune, async () => ({ deleted: await deps.events.prunePayloads() }));
  await workNotified(boss, PLATFORM_QUEUES.agentServersSweep, async () => ({ pruned: await pruneDeadAgentServers(deps) }));
  await workNotified(boss, PLATFORM_QUEUES.usageFold, async () => foldUsage(deps));
  await workExports(deps, boss);
  await workNotified(boss, PLATFORM_QUEUES.tracesRetention, async () => deleteExpiredTraceRuns(deps));
  await workNotified(boss, PLATFORM_QUEUES.tracesPartitions, async () => createTracePartitionsAhead(deps));
  // The control plane's pipeline; the runtimes it launches live as long as this job queue.
  if (deps.config.controlPlaneWorker) {
    const deployedRuntimes = await workRevisionPipeline(deps, boss);
    deps.deployedRuntimes = deployedRuntimes;
    await workNotified(boss, PLATFORM_QUEUES.revisionsWatch, async () => watchPushedRefs(deps));
    boss.once('stopped', () => void deployedRuntimes.stop());
  }
  for (const { queue, cron } of PLATFORM_SCHEDULES) await boss.schedule(queue, cron);
  // A platform that was down longer than the partitions made ahead catches up now, not at the next tick.
  await boss.send(PLATFORM_QUEUES.tracesPartitions.name, {});
}
