// One reader per thread for every WebSocket subscription to it in this process. Each subscription
// used to follow the thread's stored events on its own: with 200 subscribers, every event was read
// (or taken from its signal), parsed, framed and encoded 200 times. A feed does it once and hands
// the same encoded event to all of them; one joining replays the feed's current run from memory,
// as it would have read it from the store. A subscriber that cannot keep up leaves the feed and
// follows the store on its own from where it left (followThreadEvents with `since`), so the feed
// never waits for, or buffers for, any one of them.
import type pg from 'pg';
import type { AuthorizedContext } from '../custom-auth/custom-auth.js';
import type { ProtocolEvent } from './thread-stream.events.js';
import { followThreadEvents } from './thread-stream.service.js';

/** A protocol event and its JSON text, encoded once for every subscriber. */
type FeedEvent = { event: ProtocolEvent; json: Buffer };

/** A feed's subscriber: handed each event in order; told when the feed ends (`error` when its reader failed). */
export type FeedListener = { deliver(event: FeedEvent): void; closed(error?: unknown): void };

// The current run's events a feed keeps for subscribers that join: past this, a joining subscriber
// reads the run from the store instead (a long run's events are not all held in memory).
const REPLAY_LIMIT_BYTES = 8 << 20;

class ThreadFeed {
  private readonly listeners = new Set<FeedListener>();
  private readonly stop = new AbortController();
  private replay: FeedEvent[] = [];
  private replayBytes = 0;
  private replayComplete = true;

  constructor(private readonly onClose: () => void) {}

  start(ctx: AuthorizedContext, threadId: string) {
    void this.read(ctx, threadId);
  }

  /** Adds a listener after handing it the current run's events; false when they are no longer all here. */
  join(listener: FeedListener): boolean {
    if (!this.replayComplete) return false;
    for (const event of this.replay) listener.deliver(event);
    this.listeners.add(listener);
    return true;
  }

  leave(listener: FeedListener) {
    this.listeners.delete(listener);
    // Unlisted at once: a subscriber arriving while the reader winds down starts a new feed.
    if (!this.listeners.size) this.close();
  }

  private close() {
    this.stop.abort();
    this.onClose();
  }

  private async read(ctx: AuthorizedContext, threadId: string) {
    let failure: unknown;
    try {
      // A new run is what a subscriber joining now replays (the WebSocket's replay: its current run).
      const onRun = () => {
        this.replay = [];
        this.replayBytes = 0;
        this.replayComplete = true;
      };
      for await (const event of followThreadEvents(ctx, threadId, { signal: this.stop.signal, onRun })) {
        const shared: FeedEvent = { event, json: Buffer.from(JSON.stringify(event)) };
        if (this.replayComplete) {
          this.replayBytes += shared.json.length;
          if (this.replayBytes <= REPLAY_LIMIT_BYTES) this.replay.push(shared);
          else {
            this.replay = [];
            this.replayComplete = false;
          }
        }
        for (const listener of this.listeners) {
          try {
            listener.deliver(shared);
          } catch (error) {
            ctx.logger.warn({ err: error, threadId }, 'a thread feed subscriber failed');
            this.listeners.delete(listener);
          }
        }
      }
    } catch (error) {
      if (!this.stop.signal.aborted) failure = error;
    } finally {
      this.close();
      for (const listener of this.listeners) listener.closed(failure);
      this.listeners.clear();
      this.replay = [];
    }
  }
}

// Feeds by database pool (each deployment's agent server has its own), then deployment and thread.
const feeds = new WeakMap<pg.Pool, Map<string, ThreadFeed>>();

/**
 * Follows a thread's protocol events for `listener` through the thread's shared feed, as
 * followThreadEvents without `since` would (its current run replayed, then live), starting the feed
 * if there is none. `listener.deliver` is called synchronously for the replayed events, then for each
 * new one, never awaited: a listener that falls behind calls the returned `leave` and follows the
 * store on its own. Undefined when the current run's events are too many to replay from memory, or
 * when custom auth decides what the caller sees (its handlers are asked before each run, per caller):
 * then follow the store. The caller has checked the thread.
 */
export function joinThreadFeed(ctx: AuthorizedContext, threadId: string, listener: FeedListener): (() => void) | undefined {
  if (ctx.auth) return undefined;
  let byThread = feeds.get(ctx.db.pool);
  if (!byThread) feeds.set(ctx.db.pool, (byThread = new Map()));
  const key = `${ctx.deployment.deploymentId}/${threadId.toLowerCase()}`;
  let feed = byThread.get(key);
  if (!feed) {
    const created = new ThreadFeed(() => {
      if (byThread.get(key) === created) byThread.delete(key);
    });
    byThread.set(key, created);
    created.start(ctx, threadId);
    feed = created;
  }
  if (!feed.join(listener)) return undefined;
  const joined = feed;
  return () => joined.leave(listener);
}
