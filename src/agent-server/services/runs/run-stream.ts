// One stream, two transports. A run's events are appended to run_events by the runtime and signalled
// over NOTIFY; readers (SSE, the GraphQL subscription, runs/wait) replay the table from where they are
// and then follow the signals, re-reading the table whenever a signal does not carry the next event,
// so they see every event exactly once, in order, whichever process produced it.
import type pg from 'pg';
import { Coalescer } from '../../../database/coalescer.js';
import type { Deps } from '../../../context.js';
import type { RunStreamSignal } from '../../../events.js';
import { type JobCompletion, selectEventsAfter, writeStreamBatch } from './runs.store.js';
import { encryptionOf } from '../encryption/at-rest.js';
import { eventMode, type RunEvent } from '../../../contracts/agent-server-api.js';

const RUN_EVENTS = { model: 'run', field: 'events' } as const;

export type { RunEvent };


const TERMINAL_RUN_STATUSES = ['success', 'error', 'timeout', 'interrupted'] as const;
export const isTerminalStatus = (status: string) => (TERMINAL_RUN_STATUSES as readonly string[]).includes(status);

/** What the `runs.stream` NOTIFY carries (declared with the event map). */
export type { RunStreamSignal };

// Signals stay well under the NOTIFY limit so the event bus never has to store them by reference.
const INLINE_SIGNAL_BYTES = 6000;


/**
 * A run's events after `afterSeq` (0: from the start), live until the run ends or `signal` aborts.
 * `modes` keeps only events of those stream modes (metadata and error events always pass).
 * `status` is read after subscribing, so a run that ends in between is still seen to end.
 */
export async function* followRunEvents(
  deps: Pick<Deps, 'db' | 'events' | 'config'>,
  runId: string,
  options: { afterSeq?: number; modes?: string[]; signal?: AbortSignal; readStatus: () => Promise<string | undefined> },
): AsyncGenerator<RunEvent> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // Subscribe before reading anything: whatever is published from now on is queued for us.
  const signals = deps.events.subscribe('runs.stream', { key: runId, signal: stop.signal, resync: { runId, resync: true } });
  const wanted = options.modes?.length ? new Set(options.modes) : undefined;
  const pass = (event: RunEvent) => !wanted || event.event === 'metadata' || event.event === 'error' || wanted.has(eventMode(event.event));
  let last = options.afterSeq ?? 0;
  try {
    const catchUp = async function* () {
      for (const event of await selectEventsAfter(deps.db.pool, runId, last, encryptionOf(deps.config))) {
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
      if (signal.resync) {
        // Signals may have been missed (the bus was away): read what they would have said.
        yield* catchUp();
        const now = await options.readStatus();
        if (now === undefined || isTerminalStatus(now)) {
          yield* catchUp();
          return;
        }
        continue;
      }
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

/** A run's final state, written by the runtime together with the run's last events. */
export type RunOutcome = { status: string; output: string };

/** One run's share of a stream write: events to append, a signal to publish, maybe its outcome and its job's completion. */
type StreamWrite = { runId: string; events: RunEvent[]; notify?: [channel: string, payload: string]; outcome?: RunOutcome; job?: JobCompletion };

// Stream writes of all the runs a process executes go through one coalescer per pool: under load,
// the events and outcomes of many runs are stored, and their signals sent, in one statement (of at
// most 256 runs' writes, so a burst of large events does not become one enormous statement).
const writers = new WeakMap<pg.Pool, Coalescer<StreamWrite>>();

function streamWrites(pool: pg.Pool): Coalescer<StreamWrite> {
  let writer = writers.get(pool);
  if (!writer) {
    writer = new Coalescer<StreamWrite>(async (writes) => {
      await writeStreamBatch(pool, {
        outcomes: writes.flatMap((write) => (write.outcome ? [{ runId: write.runId, ...write.outcome }] : [])),
        events: writes.flatMap((write) => write.events.map((event) => ({ runId: write.runId, ...event }))),
        signals: writes.flatMap((write) => (write.notify ? [write.notify] : [])),
        jobs: writes.flatMap((write) => (write.job ? [write.job] : [])),
      });
    }, { maxBatch: 256 });
    writers.set(pool, writer);
  }
  return writer;
}

/**
 * The runtime's side: appends a run's events in order. Events queued while a write is in flight go
 * out together in the next one, and that write is shared with other runs' (see `streamWrites`), so
 * a fast graph is never slowed to one round trip per event.
 */
export class RunEventWriter {
  private seq: number;
  private queue: RunEvent[] = [];
  private writing: Promise<void> | undefined;
  private failure: unknown;
  private holding = false;

  constructor(
    private readonly deps: Pick<Deps, 'db' | 'events' | 'config'>,
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
   * The run's last write: whatever is still queued is stored together with `outcome` (the run's
   * status and output) and signalled in one NOTIFY together with `final` (its status for readers),
   * so a fast run's tail costs one (shared) round trip; given `job`, the run's queue job is completed
   * by the same statement. Nothing may be pushed afterwards.
   */
  async finish(outcome: RunOutcome, final?: Pick<RunStreamSignal, 'status' | 'output'>, job?: JobCompletion): Promise<void> {
    this.holding = true;
    while (this.writing) await this.writing;
    if (this.failure) throw this.failure;
    const batch = this.queue;
    this.queue = [];
    await this.write(batch, final ?? {}, outcome, job);
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length && !this.holding) {
        const batch = this.queue;
        this.queue = [];
        await this.write(batch, {});
      }
    } catch (error) {
      this.failure ??= error;
    } finally {
      this.writing = undefined;
    }
  }

  /** Stores `events` (and `outcome`) and signals them, inline when small, else by their last seq. */
  private write(events: RunEvent[], final: Pick<RunStreamSignal, 'status' | 'output'>, outcome?: RunOutcome, job?: JobCompletion): Promise<void> {
    const lastSeq = events.length ? events[events.length - 1]!.seq : undefined;
    const size = events.reduce((sum, e) => sum + e.data.length + e.event.length + 32, 0);
    // Without run data on the event bus (config runDataOnEventBus), only the last candidate, ids and a status.
    const inline = this.deps.config.runDataOnEventBus;
    const candidates: RunStreamSignal[] = [
      ...(inline && events.length && size < INLINE_SIGNAL_BYTES ? [{ runId: this.runId, events, lastSeq, ...final }] : []),
      ...(inline ? [{ runId: this.runId, lastSeq, ...final }] : []),
      { runId: this.runId, lastSeq, status: final.status },
    ];
    // The last candidate carries ids and a status only, so it always fits inline.
    let notify: [string, string] | undefined;
    if (events.length || final.status) {
      for (const signal of candidates) if ((notify = this.deps.events.notifyArguments('runs.stream', signal, this.runId))) break;
    }
    // Stored encrypted at rest when configured: an event holds the run's values (signals then carry none, config.ts).
    const cipher = encryptionOf(this.deps.config);
    if (!cipher) return streamWrites(this.deps.db.pool).add({ runId: this.runId, events, notify, outcome, job });
    return Promise.all(events.map(async (event) => ({ ...event, data: await cipher.sealText(event.data, RUN_EVENTS) }))).then((stored) =>
      streamWrites(this.deps.db.pool).add({ runId: this.runId, events: stored, notify, outcome, job }),
    );
  }
}
