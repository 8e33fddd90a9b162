// Ground for everything that sends to or reads pg-boss's queues (services, workers, runtimes): its
// schema, its connection options, the per-deployment run queue's options and the finished-job
// retention every queue gets, and how a fixed queue is declared and worked. The fixed queues, their
// handlers and schedules are declared in agent-server/jobs/boss.ts (the agent server's) and
// platform/jobs/platform-jobs.ts (the platform's).
import type { ConstructorOptions, Job, PgBoss, Queue } from 'pg-boss';
import { PreparingClient } from './database/prepared-statements.js';

/** The PostgreSQL schema pg-boss keeps its tables in (stores that delete jobs with their rows name it). */
export const BOSS_SCHEMA = 'pgboss';

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

// Every queue keeps finished jobs for the configured time (AGENT_PLATFORM_JOB_RETENTION_SECONDS): the
// rows they point at hold the state, so a finished job is only history. Set on each queue, whose
// option pg-boss copies into each job it inserts; recorded per job queue object so a deployment's
// run queue, created when first used, gets it too.
const jobRetentionSeconds = new WeakMap<PgBoss, number>();

/** Records the finished-job retention of a job queue object's queues (its process's configuration). */
export const rememberJobRetention = (boss: PgBoss, seconds: number) => void jobRetentionSeconds.set(boss, seconds);

/** The finished-job retention of every queue of this job queue object (pg-boss `deleteAfterSeconds`). */
export const finishedJobRetention = (boss: PgBoss): Pick<Queue, 'deleteAfterSeconds'> => ({
  deleteAfterSeconds: jobRetentionSeconds.get(boss) ?? 3600,
});

/**
 * Each deployment's run queue, `runs.execute.<deployment id>` (created when first used). `key_strict_fifo`
 * keyed by thread id gives per-thread order (a thread's runs execute one at a time, in arrival order)
 * while other threads run in parallel.
 */
export const RUN_QUEUE_OPTIONS: Omit<Queue, 'name'> = {
  policy: 'key_strict_fifo',
  // A failed job would hold back its thread's later runs; the handler never fails a job, and a runtime
  // that dies mid-run is detected (and its job completed) by the `runs.sweep` schedule.
  retryLimit: 0,
  expireInSeconds: 24 * 3600,
};

export type QueueDefinition = Omit<Queue, 'name'> & { name: string };

/** Creates (or brings to their options) queues: what sends to them fails on a queue that does not exist. */
export async function declareQueues(boss: PgBoss, queues: QueueDefinition[]): Promise<void> {
  for (const { name, ...queueOptions } of queues) {
    await boss.createQueue(name, { ...queueOptions, ...finishedJobRetention(boss) });
    // createQueue leaves an existing queue as it was: a changed setting is applied here.
    await boss.updateQueue(name, { ...finishedJobRetention(boss), notify: queueOptions.notify ?? false });
  }
}

// A little after the retry is due, so the fetch finds it (the delay counts from pg-boss's write of
// the failure, just after the handler throws).
const RETRY_WAKE_MARGIN_MS = 500;

/**
 * Works a `notify` queue (see agent-server/jobs/boss.ts QUEUES): NOTIFY wakes its worker for new jobs; a job whose handler
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
