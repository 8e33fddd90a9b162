// One stream, two transports. A run's events are appended to run_events by the runtime and signalled
// over NOTIFY; readers (SSE, the GraphQL subscription, runs/wait) replay the table from where they are
// and then follow the signals, re-reading the table whenever a signal does not carry the next event,
// so they see every event exactly once, in order, whichever process produced it.
import type pg from 'pg';
import type { Deps } from '../context.js';

export type RunEvent = {
  /** Position in the run's stream, from 1; the SSE `id`. */
  seq: number;
  /** SSE event name: a stream mode (`values`, `updates|child:1`…), `metadata` or `error`. */
  event: string;
  /** The event's data as JSON text. */
  data: string;
};

export const TERMINAL_RUN_STATUSES = ['success', 'error', 'timeout', 'interrupted'] as const;
export const isTerminalStatus = (status: string) => (TERMINAL_RUN_STATUSES as readonly string[]).includes(status);

/** What the `runs.stream` NOTIFY carries. */
export type RunStreamSignal = {
  runId: string;
  events?: RunEvent[];
  lastSeq?: number;
  status?: string;
  /** On the final status signal, the run's result as JSON text when it is small. */
  output?: string;
};

// Signals stay well under the NOTIFY limit so the event bus never has to store them by reference.
const INLINE_SIGNAL_BYTES = 6000;

/** The stream mode an event belongs to (`updates|sub:1` → `updates`, `messages/partial` → `messages`). */
export const eventMode = (event: string): string => event.split('|')[0]!.split('/')[0]!;

/** Reads events after `afterSeq`, in order. */
async function readEvents(pool: pg.Pool, runId: string, afterSeq: number): Promise<RunEvent[]> {
  const { rows } = await pool.query<RunEvent>('SELECT seq, event, data FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq', [runId, afterSeq]);
  return rows;
}

/**
 * A run's events after `afterSeq` (0: from the start), live until the run ends or `signal` aborts.
 * `modes` keeps only events of those stream modes (metadata and error events always pass).
 * `status` is read after subscribing, so a run that ends in between is still seen to end.
 */
export async function* followRunEvents(
  deps: Pick<Deps, 'db' | 'events'>,
  runId: string,
  options: { afterSeq?: number; modes?: string[]; signal?: AbortSignal; readStatus: () => Promise<string | undefined> },
): AsyncGenerator<RunEvent> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // Subscribe before reading anything: whatever is published from now on is queued for us.
  const signals = deps.events.subscribe('runs.stream', { key: runId, signal: stop.signal });
  const wanted = options.modes?.length ? new Set(options.modes) : undefined;
  const pass = (event: RunEvent) => !wanted || event.event === 'metadata' || event.event === 'error' || wanted.has(eventMode(event.event));
  let last = options.afterSeq ?? 0;
  try {
    const catchUp = async function* () {
      for (const event of await readEvents(deps.db.pool, runId, last)) {
        last = event.seq;
        if (pass(event)) yield event;
      }
    };
    yield* catchUp();
    const status = await options.readStatus();
    if (status === undefined || isTerminalStatus(status)) {
      yield* catchUp();
      return;
    }
    for await (const signal of signals) {
      const inline = signal.events;
      if (inline?.length && inline[0]!.seq <= last + 1) {
        for (const event of inline) {
          if (event.seq <= last) continue;
          last = event.seq;
          if (pass(event)) yield event;
        }
      } else if (inline?.length || (signal.lastSeq ?? 0) > last) {
        yield* catchUp();
      }
      if (signal.status && isTerminalStatus(signal.status)) {
        yield* catchUp();
        return;
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.abort();
  }
}

/**
 * The runtime's side: appends a run's events in order. Events queued while a write is in flight go
 * out together in the next one (one INSERT and one NOTIFY per batch), so a fast graph is never slowed
 * to one round trip per event.
 */
export class RunEventWriter {
  private seq: number;
  private queue: RunEvent[] = [];
  private writing: Promise<void> | undefined;
  private failure: unknown;
  private holding = false;

  constructor(
    private readonly deps: Pick<Deps, 'db' | 'events'>,
    private readonly runId: string,
    startAfterSeq = 0,
  ) {
    this.seq = startAfterSeq;
  }

  push(event: string, data: string): void {
    this.queue.push({ seq: ++this.seq, event, data });
    if (!this.writing) this.writing = this.drain();
  }

  /** Resolves once everything pushed so far is stored and signalled; rethrows a failed write. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.failure) throw this.failure;
  }

  /**
   * The run's last write: whatever is still queued is stored in the same statement as `outcome` (the
   * run's row update) and signalled in one NOTIFY together with `final` (its status), so a fast run's
   * tail costs one round trip. Nothing may be pushed afterwards. Falls back to separate writes when
   * the signal is too large to go inline.
   */
  async finish(outcome: { text: string; values: unknown[] }, final?: Pick<RunStreamSignal, 'status' | 'output'>): Promise<void> {
    this.holding = true;
    while (this.writing) await this.writing;
    const batch = this.queue;
    this.queue = [];
    const size = batch.reduce((sum, e) => sum + e.data.length + e.event.length + 32, 0);
    const lastSeq = batch.length ? batch[batch.length - 1]!.seq : undefined;
    const signal: RunStreamSignal = { runId: this.runId, ...(batch.length ? (size < INLINE_SIGNAL_BYTES ? { events: batch, lastSeq } : { lastSeq }) : {}), ...final };
    const notify = batch.length || final ? this.deps.events.notifyArguments('runs.stream', signal, this.runId) : undefined;
    if ((batch.length || final) && !notify) {
      this.holding = false;
      this.queue = batch;
      if (batch.length) this.writing = this.drain();
      await this.flush();
      if (final) await this.deps.events.writeAndPublish(outcome, 'runs.stream', { runId: this.runId, ...final }, this.runId);
      else await this.deps.db.pool.query(outcome.text, outcome.values);
      return;
    }
    if (this.failure) throw this.failure;
    const values = [...outcome.values];
    let text = `WITH outcome AS (${outcome.text})`;
    if (batch.length) {
      const n = values.push(this.runId, batch.map((e) => e.seq), batch.map((e) => e.event), batch.map((e) => e.data));
      text += `, events AS (INSERT INTO run_events (run_id, seq, event, data) SELECT $${n - 3}, * FROM unnest($${n - 2}::int[], $${n - 1}::text[], $${n}::text[]))`;
    }
    if (notify) {
      const n = values.push(...notify);
      text += ` SELECT pg_notify($${n - 1}, $${n})`;
    } else {
      text += ' SELECT 1';
    }
    await this.deps.db.pool.query(text, values);
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length && !this.holding) {
        const batch = this.queue;
        this.queue = [];
        const size = batch.reduce((sum, e) => sum + e.data.length + e.event.length + 32, 0);
        const lastSeq = batch[batch.length - 1]!.seq;
        await this.deps.events.writeAndPublish(
          {
            text: `INSERT INTO run_events (run_id, seq, event, data) SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[])`,
            values: [this.runId, batch.map((e) => e.seq), batch.map((e) => e.event), batch.map((e) => e.data)],
          },
          'runs.stream',
          size < INLINE_SIGNAL_BYTES ? { runId: this.runId, events: batch, lastSeq } : { runId: this.runId, lastSeq },
          this.runId,
        );
      }
    } catch (error) {
      this.failure ??= error;
    } finally {
      this.writing = undefined;
    }
  }
}
