// Ground for everything that sends to or reads pg-boss's queues (services, workers, runtimes): its
// schema, its connection options, the per-deployment run queue's options and the finished-job
// retention every queue gets, and how a fixed queue is declared and worked. The fixed queues, their
// handlers and schedules are declared in agent-server/jobs/boss.ts (the agent server's) and
// platform/jobs/platform-jobs.ts (the platform's).
import { type ConstructorOptions, type Db, type Job, PgBoss, type Queue } from 'pg-boss';
import type { Deps } from './context.js';
import { PreparingClient } from './database/prepared-statements.js';
import { createPool, POOL_IDLE_TIMEOUT_MS } from './database/pool.js';

/** The PostgreSQL schema pg-boss keeps its tables in (stores that delete jobs with their rows name it). */
export const BOSS_SCHEMA = 'pgboss';

export type Boss = PgBoss;

/** pg-boss's queue of due cron ticks, from its clock to the worker that sends them. */
const CRON_HANDOFF_QUEUE = '__pgboss__send-it';

/**
 * Connection options of a PgBoss with a pool of its own (the one that installs pg-boss's schema in a
 * deployment database's template; those startJobQueue starts use their process's pool): its pool
 * names pg-boss's recurring statements as prepared statements, like the platform's own pool (pg-boss
 * hands its options to pg.Pool, which takes the client class).
 */
export const bossConnection = (url: string): ConstructorOptions => ({
  connectionString: url,
  schema: BOSS_SCHEMA,
  // Kept, as the platform's own pools keep theirs (database/pool.ts).
  ...({ Client: PreparingClient, idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS } as object),
});

/**
 * Starts a pg-boss on the process's database (the platform's, or an agent server's own), as every
 * process of either tree starts it: its connection, finished-job retention and cron clock from the
 * configuration. `work`: it runs schedules and the cron clock and hears pg-boss's notifications;
 * `maintain`: queue maintenance (expiry, deletion), by default where it works; `install`: installs or
 * migrates pg-boss's schema. The queues are its tree's to declare.
 *
 * It listens on the event bus's connection (a listener of its own was one more PostgreSQL backend per
 * process, and a statement every 10 s to check it). Its statements keep a pool of their own, one
 * connection where it only fetches and completes jobs, two where it works them: services call it
 * while they hold a connection of the process's pool in a transaction (a cron's schedule as its row
 * changes, a run queue's creation), and on that pool they deadlocked once every connection waited
 * for a row such a transaction had locked (crons.test.ts). Its connections keep generic plans: left to
 * choose, PostgreSQL planned pg-boss's job completion again at every call (about 200 µs of a durable
 * run's PostgreSQL CPU, more than executing it), and its statements find rows by queue, id and state,
 * which one plan serves.
 */
export async function startJobQueue(
  deps: Pick<Deps, 'db' | 'events' | 'config' | 'logger'>,
  options: { work: boolean; maintain?: boolean; install: boolean },
): Promise<PgBoss> {
  const pool = createPool({ connectionString: deps.db.url, max: options.work ? 2 : 1, application_name: 'agent-platform-jobs', Client: PreparingClient, options: '-c plan_cache_mode=force_generic_plan' });
  const db: Db = {
    executeSql: (text, values) => pool.query(text, values),
    // pg-boss falls back to polling when this rejects (a bus that does not listen).
    listen: (channel, notified, listening) => deps.events.listenAlso(channel, notified, listening),
  };
  const boss = new PgBoss({
    db,
    schema: BOSS_SCHEMA,
    supervise: options.maintain ?? options.work,
    // pg-boss deletes a queue's finished jobs at most once per maintenance interval (a day by default),
    // which would keep a day of jobs whatever the retention: as often as the retention, within 1–60 min.
    maintenanceIntervalSeconds: Math.max(60, Math.min(3600, deps.config.jobRetentionSeconds || 3600)),
    schedule: options.work,
    // The cron clock's pass, and the polling of the queue it hands due ticks to (5 s in pg-boss),
    // which would otherwise add its own delay to a shortened pass.
    cronMonitorIntervalSeconds: deps.config.cronClockSeconds,
    cronWorkerIntervalSeconds: Math.min(5, deps.config.cronClockSeconds),
    // Runtimes are woken by the agent server's own `runs.queued` event (agent-server/runtime/runtime.ts), not pg-boss's.
    useListenNotify: options.work,
    // The pass that unblocks jobs whose dependencies completed (pg-boss flows), two statements every
    // 5 s by default on an idle database: no job here has dependencies.
    flowIntervalSeconds: 300,
    migrate: options.install,
  });
  boss.on('error', (error: unknown) => deps.logger.error({ err: error }, 'job queue error'));
  boss.once('stopped', () => void pool.end().catch(() => undefined));
  rememberJobRetention(boss, deps.config.jobRetentionSeconds);
  await boss.start().catch(async (error: unknown) => {
    await pool.end().catch(() => undefined);
    throw error;
  });
  // The cron clock hands due ticks to a queue of pg-boss's own, whose worker polls it every
  // cronWorkerIntervalSeconds; with `notify` the hand-off wakes it and the poll is a 30 s backstop.
  if (options.work) await boss.updateQueue(CRON_HANDOFF_QUEUE, { notify: true });
  return boss;
}

// Every queue keeps finished jobs for the configured time (AGENT_PLATFORM_JOB_RETENTION_SECONDS): the
// rows they point at hold the state, so a finished job is only history. Set on each queue, whose
// option pg-boss copies into each job it inserts; recorded per job queue object so a deployment's
// run queue, created when first used, gets it too.
const jobRetentionSeconds = new WeakMap<PgBoss, number>();

/** Records the finished-job retention of a job queue object's queues (its process's configuration). */
const rememberJobRetention = (boss: PgBoss, seconds: number) => void jobRetentionSeconds.set(boss, seconds);

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
  // that dies mid-run is detected by the `runs.sweep` schedule, which retries its job (the run is
  // executed again) or, after the run's last attempt, completes it (agent-server/runtime/recovery.ts).
  retryLimit: 0,
  expireInSeconds: 24 * 3600,
};

export type QueueDefinition = Omit<Queue, 'name'> & { name: string };

/**
 * The pruning of the event bus's large payloads (EventBus.prunePayloads), a queue of each database's
 * own: the platform's jobs and every agent server's declare it on theirs.
 */
export const EVENTS_PRUNE_QUEUE: QueueDefinition = {
  name: 'events.prune',
  notify: true,
  // One prune at a time is enough; duplicates while one waits are dropped.
  policy: 'singleton',
  retryLimit: 2,
  retryDelay: 60,
  expireInSeconds: 300,
};

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
const RETRY_WAKE_MARGINS_MS = [500, 5_000, 30_000];

const NOTIFIED_BACKSTOP_SECONDS = 300;

/**
 * Works a `notify` queue (see agent-server/jobs/boss.ts QUEUES): NOTIFY wakes its worker for new jobs; a job whose handler
 * throws and that the queue retries wakes it again once the queue's retry delay is over, as its
 * polling did before. `options`: the worker's (concurrency, batch), and the retries of a queue whose
 * jobs set their own (`retryLimit`, `retryDelay` as sent).
 */
export async function workNotified<T extends object>(
  boss: PgBoss,
  queue: QueueDefinition,
  handler: (jobs: Job<T>[]) => Promise<unknown>,
  options: { localConcurrency?: number; batchSize?: number; retries?: { limit: number; delaySeconds: number } } = {},
): Promise<string> {
  const { retries = { limit: queue.retryLimit ?? 0, delaySeconds: queue.retryDelay ?? 0 }, ...work } = options;
  let workerId = '';
  // The poll that backs NOTIFY up, 30 s by default: a fetch per worker per interval on an idle
  // database. NOTIFY wakes the worker for a new job, pg-boss wakes every worker when its listener
  // connects again (what was notified meanwhile was missed), and a retry wakes it below; the poll is
  // left for a job that expired and is retried, whose worker died.
  workerId = await boss.work<T>(queue.name, { notifyPollingIntervalSeconds: NOTIFIED_BACKSTOP_SECONDS, ...work }, async (jobs) => {
    try {
      return await handler(jobs);
    } catch (error) {
      // Again later: on a loaded machine pg-boss may record the failure (and the retry's due time) after the first wake-up.
      if (retries.limit) for (const margin of RETRY_WAKE_MARGINS_MS) setTimeout(() => boss.notifyWorker(workerId), retries.delaySeconds * 1000 + margin).unref();
      throw error;
    }
  });
  return workerId;
}
