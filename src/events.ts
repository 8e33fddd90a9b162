// Typed publish/subscribe across processes over PostgreSQL LISTEN/NOTIFY.
//
// Every process keeps one LISTEN connection on a single channel and fans messages out locally by
// event name and key. The same connection listens on the channels of others in the thread (pg-boss's
// job notifications: listenAlso), holds the process's liveness locks (holdLock) and hears for the
// process's worker threads, whose buses follow it over a MessagePort (relayTo, startRelayed): each a
// PostgreSQL backend less. NOTIFY payloads are limited to 8000 bytes, so larger payloads are written to
// event_payloads and the notification carries the row id (by reference, not inline).
import { EventEmitter } from 'node:events';
import type { MessagePort } from 'node:worker_threads';
import pg from 'pg';
import type { Logger } from 'pino';

/** Event names and their payloads. Areas add their events here, so publisher and subscriber agree. */
export interface EventMap {
  /** Diagnostics: lets operators and tests check that events cross processes. */
  'system.ping': { message: string; sentAt: string };
  /** Agent server: a run's stream grew (events inline when small, else read from run_events up to lastSeq), or its status changed. Key: run id. */
  'runs.stream': RunStreamSignal;
  /** Agent server: a run changed status. Key: thread id (thread streams follow the runs of a thread). */
  'runs.status': { runId: string; threadId: string; status: string };
  /** Agent server: stop a pending or running run. Key: run id; runtimes listen to all. */
  'runs.cancel': { runId: string; action: 'interrupt' | 'rollback' };
  /**
   * Agent server: runs are waiting in a deployment's queue; wakes its runtimes. Key: deployment id.
   * `origin`: the RunQueue that woke its own runtime already. `afterSeconds`: the run is due that long
   * from now (`after_seconds`), when runtimes fetch it.
   */
  'runs.queued': { deploymentId: string; origin?: string; afterSeconds?: number };
  /** Tenancy: a key was revoked or a user's roles changed; every process drops its cached viewers. Key: none. */
  'tenancy.changed': { apiKeyId?: string };
  /** Bulk export: an export or one of its runs changed (status, rows, files). Key: export id. */
  'exports.progress': { exportId: string; runId?: string };
  /** Bulk export: runs are waiting to start; wakes the workers' dispatchers. */
  'exports.dispatch': { exportId: string };
  /** Control plane: a revision changed status. Key: deployment id. */
  'revisions.status': { deploymentId: string; revisionId: string; status: string };
  /** Control plane: a revision's build job was sent; wakes the workers' build queue. Key: none. */
  'revisions.queued': { revisionId: string };
  /** Control plane: stop the deployment's runtimes, all of them or all but the active revision's. Key: none; every launcher listens. */
  'deployments.stop-runtimes': { deploymentId: string; keepRevisionId?: string };
  /**
   * Control plane: a stopping worker hands its revisions' runtimes over. `offered`: the other workers
   * that have the build say `taking` and load them; `ready`: one has (the stopping worker then stops
   * its own); `released`: its lock is free, the loaded one starts serving. Key: none; every launcher listens.
   */
  'deployments.hand-over': { revisionId: string; deploymentId: string; replica: number; phase: 'offered' | 'taking' | 'ready' | 'released' };
}
export type EventName = keyof EventMap;

/** A run's stream grew (its new events inline when small, else up to `lastSeq`), or its status changed. */
export type RunStreamSignal = {
  runId: string;
  /** Not a change: this process listens again after an outage, and signals may have been missed meanwhile: read the run again. */
  resync?: boolean;
  events?: { seq: number; event: string; data: string }[];
  lastSeq?: number;
  status?: string;
  /** On the final status signal, the run's result as JSON text when it is small. */
  output?: string;
};

const PG_CHANNEL = 'agent_platform_events';
const RECONNECT_MAX_MS = 2_000;
// Leave headroom under PostgreSQL's 8000-byte NOTIFY limit for the envelope.
const INLINE_LIMIT_BYTES = 7000;

type Envelope = { n: string; k?: string; p?: unknown; ref?: string };

/** A thread's bus → its process's listening bus: follow (or stop following) an event name; take or give back a lock. */
type RelayRequest = { follow: string; on: boolean } | { lock: string; id: number } | { unlock: string; id: number };
/** The listening bus → a thread's: a notification, whether it listens now, a lock taken again, the answer to a request. */
type RelayReport = { text: string } | { listening: boolean } | { retaken: string } | { done: number; error?: string };

/** A thread that hears through this bus's connection: the names it follows and the locks held for it. */
type Relay = { port: MessagePort; follows: Set<string>; locks: Map<string, { release(): Promise<void> }>; unheard?: (name: string, text: string) => boolean };

// Every envelope starts with its name, whether JSON.stringify or json_build_object wrote it.
const ENVELOPE_NAME = /^\{\s*"n"\s*:\s*"([^"\\]*)"/;

export class EventBus {
  private readonly local = new EventEmitter({ captureRejections: false });
  /** How to end each live subscription (when the bus stops). */
  private readonly subscriptions = new Set<() => void>();
  /** Live subscriptions per event name: notifications nobody here subscribes to are not even parsed. */
  private readonly subscribers = new Map<string, number>();
  /** What the subscriptions given `resync` receive when the bus listens again, by topic, and how many there are. */
  private readonly resyncs = new Map<string, { payload: unknown; count: number }>();
  private listener: pg.Client | undefined;
  /** Other channels this connection listens on for others in the thread (listenAlso), by channel. */
  private readonly channels = new Map<string, { notified: (payload: string) => void; listening: () => void }>();
  /** Session advisory locks held on the connection (holdLock), by key, with what to do when one is taken again. */
  private readonly locks = new Map<string, () => Promise<unknown>>();
  /** The worker threads of this process whose buses hear through this one's connection (relayTo). */
  private readonly relays = new Set<Relay>();
  /** In a worker thread: the port to the process's listening bus, and whether that one listens now (startRelayed). */
  private relayed: { port: MessagePort; listening: boolean; answers: Map<number, (error?: string) => void>; nextId: number } | undefined;
  /** Whether it ever listened: a bus never started (a thread that only writes) listens for no one. */
  private listened = false;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly logger: Logger,
  ) {
    this.local.setMaxListeners(0);
  }

  /** Opens the LISTEN connection; resolves once notifications are flowing. */
  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'agent-platform-events', keepAlive: true });
    client.on('notification', (message) => {
      if (message.channel === PG_CHANNEL) return void this.deliver(message.payload, true);
      if (message.payload !== undefined) this.channels.get(message.channel)?.notified(message.payload);
    });
    client.on('error', (error) => {
      // A connection that never listened is the failed attempt's to report (start rejects).
      if (client !== this.listener) return;
      this.logger.warn({ err: error }, 'event listener connection lost; reconnecting');
      this.scheduleReconnect();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${PG_CHANNEL}`);
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      for (const key of this.locks.keys()) await client.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    // Stopped while a reconnection was under way.
    if (this.closed) return void (await client.end().catch(() => undefined));
    this.listener = client;
    this.listened = true;
    // What was notified while no connection listened was missed: each listener on another channel looks again.
    for (const { listening } of this.channels.values()) listening();
  }

  /**
   * Hears for a worker thread of this process whose bus was started with `startRelayed` on the other
   * end of `port`: the notifications of the names it follows are passed on as they arrive, so are the
   * connection's loss and return, and the locks it asks for are held on this connection. A thread of
   * its own would hold a connection that hears the same notifications again. `unheard`: notifications
   * the thread follows but has no use for, which are not passed on.
   */
  relayTo(port: MessagePort, options: { unheard?: (name: string, text: string) => boolean } = {}): void {
    const relay: Relay = { port, follows: new Set(), locks: new Map(), unheard: options.unheard };
    this.relays.add(relay);
    port.on('message', async (request: RelayRequest) => {
      if ('follow' in request) return void (request.on ? relay.follows.add(request.follow) : relay.follows.delete(request.follow));
      try {
        if ('lock' in request) {
          const key = request.lock;
          relay.locks.set(key, await this.holdLock(key, async () => port.postMessage({ retaken: key } satisfies RelayReport)));
        } else {
          await relay.locks.get(request.unlock)?.release();
          relay.locks.delete(request.unlock);
        }
        port.postMessage({ done: request.id } satisfies RelayReport);
      } catch (error) {
        port.postMessage({ done: request.id, error: (error as Error).message } satisfies RelayReport);
      }
    });
    // The thread keeps the process alive while it runs; its port need not.
    port.unref();
    // The thread ended (its port closed with it): what it held is given back.
    port.once('close', () => {
      this.relays.delete(relay);
      for (const lock of relay.locks.values()) void lock.release();
    });
    port.postMessage({ listening: this.listening } satisfies RelayReport);
  }

  /**
   * Starts a worker thread's bus on its process's listening bus (`relayTo` on the other end of
   * `port`) instead of a connection of its own. A name this bus follows for the first time is passed
   * on from when the process's bus hears of it (one message later).
   */
  startRelayed(port: MessagePort): void {
    const relayed = { port, listening: false, answers: new Map<number, (error?: string) => void>(), nextId: 0 };
    this.relayed = relayed;
    this.listened = true;
    port.on('message', (report: RelayReport) => {
      if ('text' in report) return void this.deliver(report.text, false);
      // The process's bus took it again (and said so in the log).
      if ('retaken' in report) return void this.retaken(report.retaken, false);
      if ('done' in report) {
        relayed.answers.get(report.done)?.(report.error);
        relayed.answers.delete(report.done);
        return;
      }
      const again = report.listening && !relayed.listening;
      relayed.listening = report.listening;
      if (again) this.resync();
    });
    for (const [name, count] of this.subscribers) if (count) port.postMessage({ follow: name, on: true } satisfies RelayRequest);
  }

  /** Asks the process's listening bus to take or give back a lock (startRelayed). */
  private ask(request: { lock: string } | { unlock: string }): Promise<void> {
    const relayed = this.relayed!;
    const id = relayed.nextId++;
    return new Promise((resolve, reject) => {
      relayed.answers.set(id, (error) => (error === undefined ? resolve() : reject(new Error(error))));
      relayed.port.postMessage({ ...request, id } as RelayRequest);
    });
  }

  /**
   * Listens on `channel` too, on this bus's connection, for the life of the bus (pg-boss's listener,
   * through its database adapter: queues.ts). `notified` gets each payload; `listening` is called each
   * time the connection listens (again): what was notified meanwhile was missed. Rejects on a bus
   * that was never started; while its connection is away, it listens from the next one on.
   */
  async listenAlso(channel: string, notified: (payload: string) => void, listening: () => void): Promise<{ close(): Promise<void> }> {
    if (!this.listened || this.closed || this.relayed) throw new Error('The event bus does not listen');
    this.channels.set(channel, { notified, listening });
    const close = async () => {
      this.channels.delete(channel);
      await this.listener?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => undefined);
    };
    if (this.listener) {
      await this.listener.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      listening();
    }
    return { close };
  }

  /**
   * Takes the session advisory lock `hashtext(key)` on this bus's connection (waiting while another
   * session holds it) and holds it until `release`: PostgreSQL frees it when this process dies, and
   * sweeps that find it free forget what its holder recorded (database/session-lock.ts holds one on a
   * connection of its own). When the connection is lost, the bus takes it again as it listens again,
   * then runs `retaken` (its failure is logged: the lock stays held). Rejects while the bus does not
   * listen. A worker thread's bus has the process's bus hold it.
   */
  async holdLock(key: string, retaken: () => Promise<unknown> = async () => undefined): Promise<{ release(): Promise<void> }> {
    if (this.relayed) {
      await this.ask({ lock: key });
      this.locks.set(key, retaken);
      return {
        release: async () => {
          if (this.locks.delete(key)) await this.ask({ unlock: key }).catch(() => undefined);
        },
      };
    }
    if (!this.listener || this.closed) throw new Error('The event bus does not listen');
    await this.listener.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
    this.locks.set(key, retaken);
    return {
      release: async () => {
        if (!this.locks.delete(key)) return;
        await this.listener?.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => undefined);
      },
    };
  }

  /** Whether notifications reach this process now (false while its LISTEN connection is away, and once stopped). */
  get listening(): boolean {
    return this.relayed ? this.relayed.listening && !this.closed : this.listener !== undefined;
  }

  async stop(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    for (const end of [...this.subscriptions]) end();
    this.local.removeAllListeners();
    this.relayed?.port.close();
    await this.listener?.end().catch(() => undefined);
    this.listener = undefined;
  }

  /**
   * Deletes the large payloads published more than an hour ago: they are only needed while
   * subscribers read them. Each database with an event bus (the platform's, every agent server's)
   * prunes its own, on a schedule of its tree's jobs. Returns how many.
   */
  async prunePayloads(): Promise<number> {
    const { rowCount } = await this.pool.query("DELETE FROM event_payloads WHERE created_at < now() - interval '1 hour'");
    return rowCount ?? 0;
  }

  /** Publishes to every subscriber in every process. Call after the transaction that caused it commits. */
  async publish<N extends EventName>(name: N, payload: EventMap[N], key?: string): Promise<void> {
    let envelope: Envelope = { n: name, k: key, p: payload };
    let text = JSON.stringify(envelope);
    if (Buffer.byteLength(text) > INLINE_LIMIT_BYTES) {
      const { rows } = await this.pool.query<{ id: string }>(
        'INSERT INTO event_payloads (channel, payload) VALUES ($1, $2) RETURNING id',
        [name, JSON.stringify(payload)],
      );
      envelope = { n: name, k: key, ref: rows[0]!.id };
      text = JSON.stringify(envelope);
    }
    await this.pool.query('SELECT pg_notify($1, $2)', [PG_CHANNEL, text]);
  }

  /**
   * A `pg_notify(…)` SQL expression publishing an event whose key and payload are SQL expressions
   * (`payloadSql` a json value of the event's payload shape), for statements that notify about rows
   * they write. The payload must stay well under the inline limit: it is never stored by reference.
   */
  notifySql<N extends EventName>(name: N, keySql: string, payloadSql: string): string {
    return `pg_notify('${PG_CHANNEL}', json_build_object('n', '${name}', 'k', ${keySql}, 'p', ${payloadSql})::text)`;
  }

  /**
   * The `pg_notify(channel, text)` arguments that publish an event, for a statement that notifies
   * itself (delivered when its transaction commits); undefined when the payload is too large to go
   * inline (then `publish` after the write).
   */
  notifyArguments<N extends EventName>(name: N, payload: EventMap[N], key?: string): [string, string] | undefined {
    const text = JSON.stringify({ n: name, k: key, p: payload } satisfies Envelope);
    return Buffer.byteLength(text) > INLINE_LIMIT_BYTES ? undefined : [PG_CHANNEL, text];
  }

  /**
   * Subscribes to an event, optionally only for one key (a revision id, a run id…). The listener is
   * attached at call time, so nothing published after this returns is missed while the bus listens.
   * What is published while its connection is away never arrives: `resync` is delivered when it
   * listens again, for the subscriber to read again what it follows (every subscription of the same
   * event and key receives it: give it to all of them or none). The iterable ends when `signal`
   * aborts or the bus stops; breaking out of a for-await unsubscribes.
   */
  subscribe<N extends EventName>(name: N, options: { key?: string; signal?: AbortSignal; resync?: EventMap[N] } = {}): AsyncGenerator<EventMap[N]> {
    const count = (this.subscribers.get(name) ?? 0) + 1;
    this.subscribers.set(name, count);
    if (count === 1) this.relayed?.port.postMessage({ follow: name, on: true } satisfies RelayRequest);
    const subscribed = topic(name, options.key);
    if (options.resync !== undefined) {
      const resync = this.resyncs.get(subscribed) ?? { payload: options.resync, count: 0 };
      resync.count++;
      this.resyncs.set(subscribed, resync);
    }
    // A queue of our own rather than `events.on`, which allocates a 2048-slot buffer per iterator: a
    // subscription per followed run made it a measurable share of the API thread's CPU per run
    // (bench:runs-paired).
    const queue: EventMap[N][] = [];
    let wake: (() => void) | undefined;
    const listener = (payload: EventMap[N]) => {
      queue.push(payload);
      wake?.();
    };
    this.local.on(subscribed, listener);
    // Unsubscribing is `end`, called by the caller's signal, the bus stopping and `return()`, not only
    // by the generator's `finally`: a generator never iterated (a reader that found its run already
    // over) never runs its body, and its listeners would keep its listener and queue alive for as
    // long as the bus lives. A function and a flag rather than an AbortController of its own, whose
    // abort dispatches an event: two per runs/wait were ~2% of the api thread's CPU per run.
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const left = this.subscribers.get(name)! - 1;
      this.subscribers.set(name, left);
      if (left === 0 && !this.closed) this.relayed?.port.postMessage({ follow: name, on: false } satisfies RelayRequest);
      const resync = options.resync !== undefined ? this.resyncs.get(subscribed) : undefined;
      if (resync && --resync.count === 0) this.resyncs.delete(subscribed);
      this.subscriptions.delete(end);
      this.local.off(subscribed, listener);
      options.signal?.removeEventListener('abort', end);
      wake?.();
    };
    this.subscriptions.add(end);
    options.signal?.addEventListener('abort', end, { once: true });
    if (options.signal?.aborted) end();
    // What arrived before the end is still delivered; then the iterable ends.
    const generator = (async function* () {
      try {
        for (;;) {
          if (queue.length) yield queue.shift()!;
          else if (ended) return;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        end();
      }
    })();
    // `return()` on a generator that has not started skips its body (and `finally`): unsubscribe here.
    const finish = generator.return.bind(generator);
    generator.return = (value) => {
      end();
      return finish(value);
    };
    return generator;
  }

  /** Delivers a notification to this thread's subscribers and, when `relay`, passes it on to the threads that follow its name. */
  private async deliver(text: string | undefined, relay: boolean) {
    if (!text) return;
    // Every process hears every event on the channel (a runtime hears each run's stream events, an
    // API process each cancellation): skip the parse, and the read of a payload sent by reference,
    // for names nobody here follows.
    const name = ENVELOPE_NAME.exec(text)?.[1];
    if (relay && name !== undefined) {
      for (const { port, follows, unheard } of this.relays) if (follows.has(name) && !unheard?.(name, text)) port.postMessage({ text } satisfies RelayReport);
    }
    if (name !== undefined && !this.subscribers.get(name)) return;
    try {
      const envelope = JSON.parse(text) as Envelope;
      let payload = envelope.p;
      if (envelope.ref !== undefined) {
        const { rows } = await this.pool.query<{ payload: unknown }>('SELECT payload FROM event_payloads WHERE id = $1', [
          envelope.ref,
        ]);
        if (!rows[0]) return; // pruned before we read it: nothing to deliver
        payload = rows[0].payload;
      }
      this.local.emit(topic(envelope.n, undefined), payload);
      if (envelope.k !== undefined) this.local.emit(topic(envelope.n, envelope.k), payload);
    } catch (error) {
      this.logger.error({ err: error }, 'could not deliver an event');
    }
  }

  /** The subscriptions given `resync` receive it: the bus listens again, and what was published meanwhile was not heard. */
  private resync() {
    for (const [subscribed, { payload }] of this.resyncs) this.local.emit(subscribed, payload);
  }

  /** A lock held on the connection was taken again on a new one: its holder restores what it stands for. */
  private retaken(key: string, log = true) {
    const retaken = this.locks.get(key);
    if (!retaken) return;
    if (log) this.logger.info({ key }, 'took a liveness lock again');
    void retaken().catch((error: unknown) => this.logger.warn({ err: error, key }, 'could not restore what a liveness lock stands for'));
  }

  // Events published while it was away are lost: it listens again soon after the database is back
  // (at most RECONNECT_MAX_MS after), at the cost of a connection attempt that often meanwhile.
  private scheduleReconnect(delayMs = 100) {
    if (this.closed || this.reconnectTimer) return;
    if (this.listener) for (const { port } of this.relays) port.postMessage({ listening: false } satisfies RelayReport);
    this.listener?.end().catch(() => undefined);
    this.listener = undefined;
    this.reconnectTimer = setTimeout(async () => {
      this.reconnectTimer = undefined;
      try {
        await this.start();
        this.logger.info('event listener reconnected');
        for (const key of this.locks.keys()) this.retaken(key);
        for (const { port } of this.relays) port.postMessage({ listening: true } satisfies RelayReport);
        this.resync();
      } catch {
        this.scheduleReconnect(Math.min(delayMs * 2, RECONNECT_MAX_MS));
      }
    }, delayMs);
  }
}

const topic = (name: string, key: string | undefined) => (key === undefined ? name : `${name}\u0000${key}`);
