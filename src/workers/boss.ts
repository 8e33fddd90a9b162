// pg-boss: the job queue on the same PostgreSQL (schema `pgboss`). Queues are declared here with
// explicit options, created at start-up, and worked by the `worker` role. Job payloads carry ids only;
// the rows they point at hold the state.
import { type ConstructorOptions, PgBoss, type Queue } from 'pg-boss';
import { PreparingClient } from '../database/prepared-statements.js';
import type { Deps } from '../services/context.js';
import { pruneEventPayloads } from './events-prune.job.js';
import { EXPORT_RUN_QUEUE, workExports } from './export-run.job.js';

export const BOSS_SCHEMA = 'pgboss';

type QueueDefinition = Omit<Queue, 'name'> & { name: string };

/** Every queue the platform uses, with its options. Areas add their queues here. */
export const QUEUES = {
  eventsPrune: {
    name: 'events.prune',
    // One prune at a time is enough; duplicates while one waits are dropped.
    policy: 'singleton',
    retryLimit: 2,
    retryDelay: 60,
    expireInSeconds: 300,
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
} satisfies Record<string, QueueDefinition>;

export type Boss = PgBoss;

/**
 * Connection options of every PgBoss of the platform: its pool names pg-boss's recurring statements
 * (fetch, complete, send) as prepared statements, like the platform's own pool (pg-boss hands its
 * options to pg.Pool, which takes the client class).
 */
export const bossConnection = (url: string): ConstructorOptions => ({
  connectionString: url,
  schema: BOSS_SCHEMA,
  ...({ Client: PreparingClient } as object),
});

/** Starts pg-boss and creates the queues. `work` registers handlers (the worker role). */
export async function startBoss(deps: Deps, options: { work: boolean }): Promise<PgBoss> {
  const boss = new PgBoss({
    ...bossConnection(deps.db.url),
    application_name: 'agent-platform-jobs',
    max: 4,
    // Only the worker role maintains queues and runs the cron clock.
    supervise: options.work,
    schedule: options.work,
    useListenNotify: options.work,
  });
  boss.on('error', (error: unknown) => deps.logger.error({ err: error }, 'job queue error'));
  await boss.start();
  for (const { name, ...queueOptions } of Object.values(QUEUES) as QueueDefinition[]) {
    await boss.createQueue(name, queueOptions);
  }
  if (options.work) {
    await boss.work(QUEUES.eventsPrune.name, async () => pruneEventPayloads(deps));
    await boss.schedule(QUEUES.eventsPrune.name, '*/10 * * * *');
    await workExports(deps, boss);
  }
  return boss;
}
