// The run queue of one deployment, on pg-boss (options in queues.ts). Runtimes are woken by the
// `runs.queued` event rather than pg-boss's per-worker notify.
import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { Coalescer } from '../../../database/coalescer.js';
import { newId } from '../../../ids.js';
import { finishedJobRetention, RUN_QUEUE_OPTIONS } from '../../../queues.js';
import type { JobCompletion, JobFetch } from './runs.store.js';
import { runQueueName } from './run-queue-name.js';

/** Job payload: the run, and its thread when the run keeps state (the runtime reads its checkpoint). */
export type RunJob = { runId: string; threadId?: string };

// A delayed run's job is fetchable from `after_seconds` on by PostgreSQL's clock: a little later by ours.
const DUE_MARGIN_MS = 100;

/** Calls `wake` now, or when a run delayed by `afterSeconds` falls due. */
export function wakeWhenDue(wake: () => void, afterSeconds: number | undefined): void {
  if (afterSeconds) setTimeout(wake, afterSeconds * 1000 + DUE_MARGIN_MS).unref();
  else wake();
}

export class RunQueue {
  private ready: Promise<void> | undefined;

  constructor(
    readonly boss: PgBoss,
    readonly deploymentId: string,
    /** Names this queue object in `runs.queued` events, so its own runtime (woken locally) can skip them. */
    readonly origin: string = newId(),
  ) {}

  get name(): string {
    return runQueueName(this.deploymentId);
  }

  private localWaker: (() => void) | undefined;

  /** A runtime in this process registers here, so runs created here start without a NOTIFY round trip. */
  onLocalWake(waker: (() => void) | undefined): void {
    this.localWaker = waker;
  }

  /** Wakes this process's runtime, if it has one, now or when a delayed run falls due (other processes hear `runs.queued`). */
  wakeLocal(afterSeconds?: number): void {
    wakeWhenDue(() => this.localWaker?.(), afterSeconds);
  }

  // key_strict_fifo releases a thread's next job only once this one is completed, so completions are
  // written as soon as possible, but those that finish while one is being written share the next.
  private readonly completions = new Coalescer<string>(async (jobIds) => {
    await this.boss.complete(this.name, jobIds);
  });

  /** Marks a run's job done (batched with other runs' completions under load). */
  complete(jobId: string): Promise<void> {
    return this.completions.add(jobId);
  }

  private completion: Promise<string | undefined> | undefined;

  /**
   * pg-boss's completion of a job as a bare UPDATE (parameters `$1` queue name, `$2` job ids, `$3`
   * output), so the statement that records a run's outcome can complete its job too (see
   * writeStreamBatch). Captured once from `complete` without touching the database; undefined when
   * pg-boss's statement is not of the `WITH results AS (UPDATE … RETURNING id) SELECT …` shape a
   * CTE can hold: callers then use `complete`.
   */
  async completionUpdate(jobId: string): Promise<JobCompletion | undefined> {
    this.completion ??= this.captureCompletion();
    const update = await this.completion;
    return update === undefined ? undefined : { update, queue: this.name, jobId };
  }

  private async captureCompletion(): Promise<string | undefined> {
    await this.ensure();
    const placeholder = newId();
    let captured: { text: string; values: unknown[] } | undefined;
    await this.boss.complete(this.name, [placeholder], undefined, {
      db: {
        executeSql: async (text: string, values?: unknown[]) => {
          captured = { text, values: values ?? [] };
          return { rows: [{ count: 1, ids: [placeholder] }] };
        },
      },
    });
    if (!captured || captured.values.length !== 3 || captured.values[2] != null) return undefined;
    const update = /^\s*WITH results AS \(\s*(UPDATE\b[\s\S]*?)\s+RETURNING id\s*\)\s*SELECT COUNT\(\*\)/i.exec(captured.text)?.[1];
    if (!update || /\$(?![123]\b)\d/.test(update)) return undefined;
    return update;
  }

  /**
   * pg-boss's fetch of up to `batchSize` jobs, captured from `fetch` without touching the database and
   * split into its WITH list and its claiming UPDATE, so the runtime can claim the jobs' runs in the
   * same statement (runs.store fetchAndClaimRuns). Undefined when pg-boss's statement is not of the
   * `WITH … UPDATE <job table> j SET … RETURNING …` shape: callers then use `fetch`. Captured at each
   * fetch, since its parameters follow pg-boss's queue cache.
   */
  async fetchStatement(batchSize: number): Promise<JobFetch | undefined> {
    let captured: { text: string; values: unknown[] } | undefined;
    await this.boss.fetch(this.name, {
      batchSize,
      db: {
        executeSql: async (text: string, values?: unknown[]) => {
          captured = { text, values: values ?? [] };
          return { rows: [] };
        },
      },
    });
    if (!captured) return undefined;
    const split = /^\s*(WITH\b[\s\S]*?\))\s*(UPDATE\s+[\w."]+\s+j\s+SET\b[\s\S]*\bRETURNING\b[\s\S]*?)\s*$/i.exec(captured.text);
    if (!split || /\bfetched\b|\bclaimed\b|\bmetadata\b|\bappended\b/i.test(split[1]!)) return undefined;
    return { ctes: split[1]!, update: split[2]!, values: captured.values };
  }

  /** Creates the queue once per process (idempotent across processes). */
  ensure(): Promise<void> {
    this.ready ??= this.create().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  private async create(): Promise<void> {
    await this.boss.createQueue(this.name, { ...RUN_QUEUE_OPTIONS, ...finishedJobRetention(this.boss) });
    // An existing queue keeps its options; the configured retention is applied to it here.
    await this.boss.updateQueue(this.name, finishedJobRetention(this.boss));
  }

  /**
   * The job insert pg-boss would run for `send`, with its one parameter (the job as JSON text) left
   * for the caller to bind, so the caller can make it part of its own statement (one round trip for
   * the run row, the job and the wake-up). Undefined when pg-boss's statement is not of the single
   * INSERT shape that can sit in a WITH clause; callers then use `send`.
   */
  async jobInsert(job: { runId: string; threadId: string; stateful: boolean; jobId: string; startAfterSeconds?: number }): Promise<{ text: string; payload: string } | undefined> {
    await this.ensure();
    let captured: { text: string; values: unknown[] } | undefined;
    await this.boss.send(this.name, (job.stateful ? { runId: job.runId, threadId: job.threadId } : { runId: job.runId }) satisfies RunJob, {
      id: job.jobId,
      singletonKey: job.threadId,
      startAfter: job.startAfterSeconds ? job.startAfterSeconds : undefined,
      db: {
        executeSql: async (text: string, values?: unknown[]) => {
          captured = { text, values: values ?? [] };
          return { rows: [{ id: job.jobId }] };
        },
      },
    });
    if (!captured || captured.values.length !== 1 || typeof captured.values[0] !== 'string') return undefined;
    const text = this.usableJobInsert(captured.text);
    return text === undefined ? undefined : { text, payload: captured.values[0] };
  }

  /**
   * pg-boss's insert text, checked once: the same text object is given for each run, so a statement
   * built around it can be built once too (insertRun), and the ~5 KB text is neither scanned nor
   * hashed again per run. Undefined when it is not of the shape that fits in a WITH clause.
   */
  private usableJobInsert(captured: string): string | undefined {
    // Compared, not looked up in a map: comparing the texts costs less than hashing the new one.
    if (captured === this.lastJobInsert?.captured) return this.lastJobInsert.usable;
    const text = captured.trim();
    const usable = /^INSERT\b/i.test(text) && !/\$(?!1\b)\d/.test(text) && text.includes('$1::text::json') ? text : undefined;
    this.lastJobInsert = { captured, usable };
    return usable;
  }

  private lastJobInsert: { captured: string; usable: string | undefined } | undefined;

  /** Enqueues a run inside the caller's transaction (`client`), so the job exists exactly when the row does. */
  async send(client: pg.PoolClient, job: { runId: string; threadId: string; stateful: boolean; jobId: string; startAfterSeconds?: number }): Promise<string | null> {
    await this.ensure();
    return this.boss.send(this.name, (job.stateful ? { runId: job.runId, threadId: job.threadId } : { runId: job.runId }) satisfies RunJob, {
      id: job.jobId,
      singletonKey: job.threadId,
      startAfter: job.startAfterSeconds ? job.startAfterSeconds : undefined,
      db: { executeSql: (text: string, values?: unknown[]) => client.query(text, values as unknown[]) },
    });
  }
}

/**
 * Puts a run's active job back at the head of its thread's queue, inside the caller's transaction
 * (`client`, with the run's row going back to `pending`): pg-boss's fail then retry, which leaves the
 * job in `retry` state, fetchable at once and, under key_strict_fifo, still holding back the thread's
 * later jobs (a new job would queue behind them, and the thread's next run would overtake this one).
 * Whether the job was active (false: it had ended meanwhile; nothing was changed).
 */
export async function requeueRunJob(boss: PgBoss, deploymentId: string, client: pg.PoolClient, jobId: string, reason: string): Promise<boolean> {
  const name = runQueueName(deploymentId);
  const db = { executeSql: (text: string, values?: unknown[]) => client.query(text, values as unknown[]) };
  if (affected(await boss.fail(name, jobId, { message: reason }, { db })) !== 1) return false;
  return affected(await boss.retry(name, jobId, { db })) === 1;
}

// pg-boss answers its mutators with how many jobs they changed; its declared type leaves it out.
const affected = (response: unknown) => (response as { affected?: number }).affected;

// One queue object per deployment and job queue in a process, so an in-process runtime and the api
// that enqueues share its local wake-up and its batched completions.
const queuesByBoss = new WeakMap<PgBoss, Map<string, RunQueue>>();

/** This process's queue object for a deployment's runs. */
export function runQueueFor(boss: PgBoss, deploymentId: string): RunQueue {
  let queues = queuesByBoss.get(boss);
  if (!queues) queuesByBoss.set(boss, (queues = new Map()));
  let queue = queues.get(deploymentId);
  if (!queue) queues.set(deploymentId, (queue = new RunQueue(boss, deploymentId)));
  return queue;
}
