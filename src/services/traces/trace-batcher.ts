// The runtime's traces, off the run's critical path: an agent run hands its trace operations to this
// bounded in-process queue and is reported done without waiting for them to be stored. The queue is
// written with ingest's own multi-row path (ingestRunBatch) on a short interval, at once when a batch's
// worth is waiting, and at shutdown (the runtime closes it after its last run ended, so a SIGTERM loses
// nothing). When the queue is full, a run waits for room (backpressure) instead of dropping its trace;
// the counts are on the deployment's /metrics.
import type { Deps } from '../context.js';
import { type Ingester, ingestRunBatch, type RunBatch } from './ingest.service.js';

export type TraceBatcherOptions = {
  /** Trace operations (run posts and patches) queued at most; a run beyond that waits for room. */
  capacity: number;
  /** How long an operation waits for the next write at most. */
  flushIntervalMs: number;
  /** Operations per ingest call at most (also: a batch's worth waiting is written at once). */
  maxBatch?: number;
};

export type TraceBatcherStats = {
  /** Operations waiting to be written. */
  queued: number;
  /** Operations written (stored, or refused by ingest and logged). */
  flushed: number;
  /** Times a run had to wait for room. */
  backpressureWaits: number;
  /** Operations ingest refused or could not store. */
  failed: number;
};

type Entry = { who: Ingester; batch: RunBatch; size: number };

const sizeOf = (batch: RunBatch) => (batch.post?.length ?? 0) + (batch.patch?.length ?? 0);
const ingesterKey = (who: Ingester) => JSON.stringify([who.workspaceId, who.apiKeyId ?? null, who.userId ?? null]);

export class TraceBatcher {
  private queue: Entry[] = [];
  private queued = 0;
  private flushed = 0;
  private failed = 0;
  private backpressureWaits = 0;
  private timer: NodeJS.Timeout | undefined;
  // One write at a time, in queue order: a run's patch is never stored before its post.
  private writing: Promise<void> = Promise.resolve();
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
      this.flushSoon(0);
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
    this.queue.push({ who, batch, size });
    this.queued += size;
    this.flushSoon(this.queued >= this.maxBatch ? 0 : this.options.flushIntervalMs);
  }

  stats(): TraceBatcherStats {
    return { queued: this.queued, flushed: this.flushed, backpressureWaits: this.backpressureWaits, failed: this.failed };
  }

  /** Writes everything queued so far; resolves once it is stored. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length) {
      const entries = this.takeBatch();
      this.writing = this.writing.then(() => this.write(entries));
    }
    return this.writing;
  }

  /** Stops the interval and stores what is queued (the runtime calls it once its runs have ended). */
  async close(): Promise<void> {
    this.closed = true;
    // Traces still arriving (a run's last callbacks) are written too.
    for (let round = 0; round < 3 && (this.queue.length || round === 0); round++) await this.flush();
    for (const wake of this.roomWaiters.splice(0)) wake();
  }

  private flushSoon(delayMs: number): void {
    if (delayMs === 0) {
      void this.flush();
      return;
    }
    this.timer ??= setTimeout(() => void this.flush(), delayMs);
  }

  private takeBatch(): Entry[] {
    const entries: Entry[] = [];
    let size = 0;
    while (this.queue.length && (size === 0 || size + this.queue[0]!.size <= this.maxBatch)) {
      const entry = this.queue.shift()!;
      entries.push(entry);
      size += entry.size;
    }
    return entries;
  }

  private async write(entries: Entry[]): Promise<void> {
    const size = entries.reduce((sum, entry) => sum + entry.size, 0);
    try {
      // One ingest call per ingester (a runtime has one), the patches of runs posted in the batch folded in.
      const groups = new Map<string, Entry[]>();
      for (const entry of entries) groups.set(ingesterKey(entry.who), [...(groups.get(ingesterKey(entry.who)) ?? []), entry]);
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
export function foldPatches(posts: NonNullable<RunBatch['post']>, patches: NonNullable<RunBatch['patch']>): RunBatch {
  const byId = new Map(posts.map((post) => [post.id, post]));
  const standalone = patches.filter((patch) => {
    const post = byId.get(patch.id);
    if (!post) return true;
    Object.assign(post, Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)));
    return false;
  });
  return { post: posts, patch: standalone };
}
