// The runtime's traces, off the run's critical path: an agent run hands its trace operations to this
// bounded in-process queue and is reported done without waiting for them to be stored. The queue is
// written with ingest's own multi-row path (ingestRunBatch) on a short interval, at once when a batch's
// worth is waiting, and at shutdown (the runtime closes it after its last run ended, so a SIGTERM loses
// nothing). When the queue is full, a run waits for room (backpressure) instead of dropping its trace;
// the counts are on the deployment's /metrics.
import type { Deps } from '../../context.js';
import { connectDatabase } from '../../db.js';
import { type Ingester, ingestRunBatch, type RunBatch } from './ingest.service.js';
import { ingesterKey } from './ingest-types.js';
import type { TraceSink, TraceSinkStats } from '../../contracts/trace-wire.js';

export type TraceBatcherOptions = {
  /** Trace operations (run posts and patches) queued at most; a run beyond that waits for room. */
  capacity: number;
  /** How long an operation waits for the next write at most. */
  flushIntervalMs: number;
  /** Operations per ingest call at most (also: a batch's worth waiting is written at once). */
  maxBatch?: number;
};


type Entry = { who: Ingester; key: string; batch: RunBatch; size: number };

const sizeOf = (batch: RunBatch) => (batch.post?.length ?? 0) + (batch.patch?.length ?? 0);

export class TraceBatcher implements TraceSink {
  // Operations not yet taken by a write, in arrival order.
  private queue: Entry[] = [];
  private waiting = 0;
  // Operations waiting or being written: what the capacity bounds.
  private queued = 0;
  private flushed = 0;
  private failed = 0;
  private backpressureWaits = 0;
  private writes = 0;
  private timer: NodeJS.Timeout | undefined;
  // One write at a time, in queue order (a run's patch is never stored before its post). Operations
  // arriving during a write join the next one: the busier the runtime, the bigger the batches.
  private draining: Promise<void> | undefined;
  // Set by flush(): write until nothing waits, not only whole batches.
  private drainAll = false;
  private roomWaiters: (() => void)[] = [];
  private closed = false;
  private readonly maxBatch: number;

  constructor(
    private readonly deps: Pick<Deps, 'db' | 'config' | 'logger'>,
    private readonly options: TraceBatcherOptions,
  ) {
    this.maxBatch = options.maxBatch ?? Math.max(1, Math.min(500, Math.floor(options.capacity / 2)));
  }

  /** Queues a run's trace operations; resolves once they are queued (waiting for room when full). */
  async add(who: Ingester, batch: RunBatch): Promise<void> {
    const size = sizeOf(batch);
    if (!size) return;
    // An entry larger than the whole queue goes in alone once the queue is empty.
    while (this.queued > 0 && this.queued + size > this.options.capacity && !this.closed) {
      this.backpressureWaits++;
      void this.flush();
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
    this.queue.push({ who, key: ingesterKey(who), batch, size });
    this.waiting += size;
    this.queued += size;
    // A batch's worth is written at once; less waits for the interval (no timer while nothing waits).
    if (this.waiting >= this.maxBatch) void this.drain();
    else this.timer ??= setTimeout(() => void this.flush(), this.options.flushIntervalMs);
  }

  stats(): TraceSinkStats {
    return { queued: this.queued, flushed: this.flushed, backpressureWaits: this.backpressureWaits, failed: this.failed, writes: this.writes };
  }

  /** Writes everything queued so far; resolves once it is stored. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    do {
      this.drainAll = true;
      await this.drain();
    } while (this.queue.length);
  }

  /** Stops the interval and stores what is queued (the runtime calls it once its runs have ended). */
  async close(): Promise<void> {
    this.closed = true;
    // Traces still arriving (a run's last callbacks) are written too.
    for (let round = 0; round < 3 && (this.queue.length || round === 0); round++) await this.flush();
    for (const wake of this.roomWaiters.splice(0)) wake();
  }

  /** The running write loop, or a new one: whole batches, or everything when flush() asked for it. */
  private drain(): Promise<void> {
    this.draining ??= this.writeWhileDue().finally(() => {
      this.drainAll = false;
      this.draining = undefined;
      // What arrived as the loop ended waits for the interval.
      if (this.queue.length) this.timer ??= setTimeout(() => void this.flush(), this.options.flushIntervalMs);
    });
    return this.draining;
  }

  private async writeWhileDue(): Promise<void> {
    while (this.queue.length && (this.drainAll || this.waiting >= this.maxBatch)) await this.write(this.takeBatch());
  }

  private takeBatch(): Entry[] {
    const entries: Entry[] = [];
    let size = 0;
    while (this.queue.length && (size === 0 || size + this.queue[0]!.size <= this.maxBatch)) {
      const entry = this.queue.shift()!;
      entries.push(entry);
      size += entry.size;
    }
    this.waiting -= size;
    return entries;
  }

  private async write(entries: Entry[]): Promise<void> {
    const size = entries.reduce((sum, entry) => sum + entry.size, 0);
    this.writes++;
    try {
      // One ingest call per ingester (a runtime has one), the patches of runs posted in the batch folded in.
      const groups = new Map<string, Entry[]>();
      for (const entry of entries) {
        const group = groups.get(entry.key);
        if (group) group.push(entry);
        else groups.set(entry.key, [entry]);
      }
      for (const group of groups.values()) await this.writeGroup(group);
    } finally {
      this.queued -= size;
      this.flushed += size;
      for (const wake of this.roomWaiters.splice(0)) wake();
    }
  }

  private async writeGroup(group: Entry[]): Promise<void> {
    const merged = foldPatches(group.flatMap((entry) => entry.batch.post ?? []), group.flatMap((entry) => entry.batch.patch ?? []));
    try {
      const result = await ingestRunBatch(this.deps, group[0]!.who, merged);
      if (result.duplicates.length) this.deps.logger.warn({ duplicates: result.duplicates }, 'traced runs were already stored');
    } catch (error) {
      // One bad run (a value the database refuses) fails only its own run's operations.
      if (group.length > 1) {
        for (const entry of group) await this.writeGroup([entry]);
        return;
      }
      this.failed += group[0]!.size;
      this.deps.logger.error({ err: error }, 'could not store traced runs');
    }
  }
}

/** A patch of a run posted in the same batch is folded into the post: one row write instead of two. */
function foldPatches(posts: NonNullable<RunBatch['post']>, patches: NonNullable<RunBatch['patch']>): RunBatch {
  const byId = new Map(posts.map((post) => [post.id, post]));
  const standalone = patches.filter((patch) => {
    const post = byId.get(patch.id);
    if (!post) return true;
    Object.assign(post, Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)));
    return false;
  });
  return { post: posts, patch: standalone };
}

/**
 * The trace sink a platform process gives the runtime of a local deployment it runs (whose agent server
 * keeps its own data in a database of its own): this batcher on the configured bounds
 * (AGENT_SERVER_TRACE_*), writing into the trace tables of the platform's database at `databaseUrl`
 * over a small pool of its own, closed with it.
 */
export function openPlatformTraceStore(deps: Pick<Deps, 'config' | 'logger'>, databaseUrl: string): TraceSink {
  // One write at a time: a connection for it, and one for the project look-ups it may make meanwhile.
  const db = connectDatabase(databaseUrl, { poolSize: 2, applicationName: 'agent-platform-traces' });
  const batcher = new TraceBatcher({ ...deps, db }, { capacity: deps.config.agentServerTracing.queueCapacity, flushIntervalMs: deps.config.agentServerTracing.flushIntervalMs });
  return {
    add: (who, batch) => batcher.add(who, batch),
    stats: () => batcher.stats(),
    async close() {
      await batcher.close();
      await db.close();
    },
  };
}
