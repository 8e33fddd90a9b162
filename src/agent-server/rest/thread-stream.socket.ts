// The thread streaming protocol over a WebSocket at GET /threads/{thread_id}/stream/events, as the
// SDK's ThreadStream (WebSocket transport) speaks it: commands in, their answers and the events of
// the socket's subscriptions out, on one connection. Subscriptions to a thread share one reader of
// its stored events (thread-stream.feed.ts: a replay of the current run, then live) while their socket
// keeps up; one whose socket falls behind, or whose caller custom auth decides about, follows the
// store on its own, waiting for its writes, and a socket whose reader stops is dropped, and with it
// its followers.
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { UpgradeEndpoint, UpgradeHandler } from '../../http/upgrade.js';
import type { CorsPolicy } from '../../http/cors.js';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { AppError } from '../../errors.js';
import { isUuid, newId } from '../../ids.js';
import { threadNotFound } from '../services/threads/threads.service.js';
import type { Deps } from '../../context.js';
import { AuthRefusal, type AuthorizedContext, type CustomAuth } from '../services/custom-auth/custom-auth.js';
import { type CustomEncryption, withEncryptionContext } from '../services/encryption/at-rest.js';
import { commandWrites, type DeploymentAccess } from '../../contracts/gateway-protocol.js';
import * as feeds from '../services/runs/thread-stream.feed.js';
import * as threadStream from '../services/runs/thread-stream.service.js';
import { authenticateCaller, type CallerRequest, withCustomAuth } from './custom-auth.js';
import { type AgentServerTarget, resolveAgentContext, studioCredentialOf } from './router.js';

/** Bounds of one connection: frame size, subscriptions, unsent bytes and how long a reader may stall. */
export type SocketLimits = { maxFrameBytes: number; maxSubscriptions: number; highWaterBytes: number; stallMs: number; pingMs: number };

const DEFAULT_LIMITS: SocketLimits = { maxFrameBytes: 1 << 20, maxSubscriptions: 64, highWaterBytes: 256 << 10, stallMs: 30_000, pingMs: 30_000 };


// Where a thread's event stream is, at the root of the agent server's server.
const STREAM_PATH = /^\/threads\/([^/]+)\/stream\/events\/?$/;

function refuse(socket: Duplex, status: number, reason: string, message: string, headers: Record<string, string> = {}) {
  if (!socket.writable) return socket.destroy();
  // A handler's header values are its own: only those that cannot break the response's framing pass.
  const extra = Object.entries(headers)
    .filter(([name, value]) => /^[!#$%&'*+.^_`|~\w-]+$/.test(name) && !/[\r\n]/.test(value) && !/^(content-length|content-type|connection)$/i.test(name))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(message)}\r\n${extra}Connection: close\r\n\r\n${message}`);
}

const REASONS: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 422: 'Unprocessable Entity' };

/**
 * The upgrade handler of the thread stream's WebSocket for an agent server `target`: attach it to the
 * HTTP server that serves the agent server's router (buildApp's `upgrades`, or the server's 'upgrade'
 * event). The caller is resolved as the router resolves it (a viewer may subscribe; run.start needs
 * write access) and, when the project declares custom auth, authenticated by its handlers on the
 * upgrade request, which then authorise each command and subscription as they do the HTTP routes.
 */
export function threadStreamUpgrade(
  deps: Deps,
  target: AgentServerTarget,
  options: {
    limits?: Partial<SocketLimits>;
    /** The project's custom auth (langgraph.json `auth`), where its code runs. */
    auth?: CustomAuth;
    /** The project's encryption at rest (langgraph.json `encryption`), whose context each command runs in. */
    encryption?: CustomEncryption;
    /** The agent server's policy for browser pages of other origins (`http.cors`). */
    cors?: CorsPolicy;
  } = {},
): UpgradeEndpoint {
  const bounds = { ...DEFAULT_LIMITS, ...options.limits };
  const wss = new WebSocketServer({ noServer: true, maxPayload: bounds.maxFrameBytes });
  const handle: UpgradeHandler = (request, socket, head) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const match = STREAM_PATH.exec(path);
    if (!match) return false;
    const threadId = decodeURIComponent(match[1]!);
    // Browsers open a WebSocket to any origin without asking: a page of an origin the policy does not
    // allow is refused here, as its HTTP requests that would change something are.
    const refused = options.cors?.refusal(request);
    if (refused) {
      refuse(socket, 403, REASONS[403]!, refused);
      return true;
    }
    void (async () => {
      let ctx: AuthorizedContext;
      let callerAccess: DeploymentAccess | undefined;
      let encryptionContext: Record<string, unknown> | undefined;
      try {
        const asRequest = upgradeRequest(request, path);
        const resolved = await resolveAgentContext(deps, target, { access: 'read', request: asRequest, customAuth: options.auth !== undefined });
        callerAccess = resolved.callerAccess;
        ctx = resolved.ctx;
        if (options.auth) {
          // Who the socket acts for, decided once on its upgrade, as the routes decide it per request.
          ctx = withCustomAuth(ctx, options.auth, await authenticateCaller(deps, options.auth, studioCredentialOf(target), asRequest, 'read'));
        }
        // As the routes' requests (encryption-context.ts): derived once, for the socket's user.
        if (options.encryption) encryptionContext = await options.encryption.contextFor(ctx.auth?.user ?? null);
      } catch (error) {
        if (error instanceof AuthRefusal) return refuse(socket, error.status, STATUS_CODES[error.status] ?? 'Error', error.message, error.headers);
        const status = error instanceof AppError ? ({ UNAUTHENTICATED: 401, FORBIDDEN: 403, NOT_FOUND: 404 } as Record<string, number>)[error.code] : undefined;
        if (status) return refuse(socket, status, REASONS[status]!, error instanceof Error ? error.message : 'Refused');
        deps.logger.error({ err: error }, 'thread stream upgrade failed');
        return refuse(socket, 500, 'Internal Server Error', 'Internal Server Error');
      }
      if (!isUuid(threadId)) return refuse(socket, 404, 'Not Found', threadNotFound(threadId));
      wss.handleUpgrade(request, socket, head, (ws) => serveSocket(ctx, threadId.toLowerCase(), ws, bounds, callerAccess, encryptionContext));
    })();
    return true;
  };
  return {
    handle,
    close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}

/** An upgrade request as the caller's checks read a request (its path below the agent server's url). */
function upgradeRequest(request: IncomingMessage, path: string): CallerRequest {
  const get = (name: string) => {
    const value = request.headers[name.toLowerCase()];
    return typeof value === 'string' ? value : undefined;
  };
  return { get, method: request.method ?? 'GET', path, originalUrl: request.url ?? path, headers: request.headers, protocol: 'http' } as CallerRequest;
}

/**
 * One connection. `callerAccess` (behind the gateway: what the caller's signed identity allows) refuses
 * run-starting commands to a reader; elsewhere the service checks the caller's key itself.
 */
function serveSocket(
  ctx: AuthorizedContext,
  threadId: string,
  ws: WebSocket,
  limits: SocketLimits,
  callerAccess?: DeploymentAccess,
  encryptionContext?: Record<string, unknown>,
) {
  const subscriptions = new Map<string, AbortController>();
  let alive = true;
  const closed = new AbortController();
  const drop = (code: number, reason: string) => {
    if (closed.signal.aborted) return;
    closed.abort();
    ws.close(code, reason);
    // A peer that no longer reads never completes the closing handshake.
    setTimeout(() => ws.terminate(), 5_000).unref();
  };
  ws.on('close', () => closed.abort());
  ws.on('error', () => closed.abort());
  closed.signal.addEventListener('abort', () => {
    for (const subscription of subscriptions.values()) subscription.abort();
    subscriptions.clear();
    clearInterval(ping);
  });
  ws.on('pong', () => (alive = true));
  const ping = setInterval(() => {
    if (!alive) return ws.terminate();
    alive = false;
    ws.ping();
  }, limits.pingMs);
  ping.unref();

  /** Sends a frame; past the high-water mark, waits until it is written, dropping a reader that stalls. */
  const send = async (message: unknown): Promise<void> => {
    if (closed.signal.aborted) return;
    const written = new Promise<void>((resolve) => ws.send(JSON.stringify(message), () => resolve()));
    if (ws.bufferedAmount <= limits.highWaterBytes) return;
    let timer: NodeJS.Timeout | undefined;
    const stalled = await Promise.race([written.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), limits.stallMs)))]);
    clearTimeout(timer);
    // 4408: the request timed out; the SDK reconnects, subscribes again and deduplicates by event id.
    if (stalled) drop(4408, 'The client stopped reading');
  };

  /**
   * A subscription's events from the thread's shared feed, sent as the feed encoded them, until the
   * subscription stops or the feed ends (`ended`; a failure is thrown), or until this socket holds
   * more than its high-water mark unsent: then it leaves the feed, with `since` the last event it took.
   * `answer` is called once joined, before any event is sent, with how many of the feed's current run
   * it replays (0 when that run is too long to replay from memory).
   */
  const followFeed = (filter: threadStream.EventFilter, signal: AbortSignal, answer: (replayed: number) => void) =>
    new Promise<{ ended: true } | { ended: false; since?: number }>((resolve, reject) => {
      let done = false;
      let since: number | undefined;
      let leave: (() => void) | undefined;
      // The feed replays synchronously while joining: held until the answer, which counts them, is sent.
      let replayed: Buffer[] | undefined = [];
      const finish = (settle: () => void) => {
        if (done) return;
        done = true;
        leave?.();
        signal.removeEventListener('abort', onAbort);
        settle();
      };
      const onAbort = () => finish(() => resolve({ ended: true }));
      leave = feeds.joinThreadFeed(ctx, threadId, {
        deliver: ({ event, json }) => {
          if (done) return;
          if (closed.signal.aborted) return finish(() => resolve({ ended: true }));
          if (ws.bufferedAmount > limits.highWaterBytes) return finish(() => resolve({ ended: false, since }));
          since = event.seq;
          if (!threadStream.matchesFilter(filter, event)) return;
          if (replayed) replayed.push(json);
          else ws.send(json, { binary: false });
        },
        closed: (error) => finish(() => (error === undefined ? resolve({ ended: true }) : reject(error))),
      });
      const held = replayed;
      replayed = undefined;
      answer(leave ? held.length : 0);
      for (const json of held) ws.send(json, { binary: false });
      if (!leave) return finish(() => resolve({ ended: false, since }));
      // It may have fallen behind while the feed's current run was replayed to it.
      if (done) return leave();
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
    });

  const subscribe = async (command: threadStream.ProtocolCommand) => {
    const parsed = threadStream.SubscribeParams.safeParse(command.params ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return send(threadStream.protocolError(command.id, 'invalid_argument', `subscription.subscribe: ${issue ? `${issue.path.join('.') || 'params'}: ${issue.message}` : 'invalid params'}`));
    }
    if (subscriptions.size >= limits.maxSubscriptions) {
      return send(threadStream.protocolError(command.id, 'invalid_argument', `At most ${limits.maxSubscriptions} subscriptions per connection.`));
    }
    const filter = threadStream.toFilter(parsed.data);
    try {
      // Under custom auth, another user's thread cannot be followed (the SSE route answers it 404).
      await threadStream.assertThreadFollowable(ctx, threadId);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return send(threadStream.protocolError(command.id, 'permission_denied', error.message));
    }
    const subscriptionId = newId();
    const stop = new AbortController();
    subscriptions.set(subscriptionId, stop);
    // The answer first (with how many events of the current run it replays, as the reference says):
    // the client registers the subscription before its events arrive.
    const answer = (replayed: number) =>
      ws.send(JSON.stringify({ type: 'success', id: command.id, result: { subscription_id: subscriptionId, replayed_events: replayed }, meta: { thread_id: threadId } }), { binary: false });
    try {
      const left = await followFeed(filter, stop.signal, answer);
      if (left.ended) return;
      // Behind the feed (or its run too long to replay from memory): on from the store, from where it left.
      for await (const event of threadStream.followThreadEvents(ctx, threadId, { since: left.since, signal: stop.signal })) {
        if (stop.signal.aborted || closed.signal.aborted) break;
        if (threadStream.matchesFilter(filter, event)) await send(event);
      }
    } catch (error) {
      if (!closed.signal.aborted) {
        ctx.logger.warn({ err: error, threadId }, 'thread stream subscription failed');
        await send(threadStream.protocolError(null, 'unknown_error', 'The subscription failed; subscribe again.'));
      }
    } finally {
      subscriptions.delete(subscriptionId);
    }
  };

  const handle = async (data: RawData) => {
    const command = threadStream.parseCommandFrame(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'));
    if ('type' in command) return send(command);
    switch (command.method) {
      case 'subscription.subscribe':
        return subscribe(command);
      case 'subscription.unsubscribe': {
        const subscriptionId = command.params?.subscription_id;
        if (typeof subscriptionId !== 'string') return send(threadStream.protocolError(command.id, 'invalid_argument', 'subscription.unsubscribe requires a subscription_id.'));
        const subscription = subscriptions.get(subscriptionId);
        if (!subscription) return send(threadStream.protocolError(command.id, 'no_such_subscription', `Unknown subscription: ${subscriptionId}`));
        subscription.abort();
        subscriptions.delete(subscriptionId);
        return send({ type: 'success', id: command.id, result: {}, meta: { thread_id: threadId } });
      }
      default:
        if (callerAccess === 'read' && commandWrites(command.method)) {
          return send(threadStream.protocolError(command.id, 'permission_denied', 'This API key may only read this deployment.'));
        }
        return send(await threadStream.handleThreadCommand(ctx, threadId, command));
    }
  };

  ws.on('message', (data) => {
    withEncryptionContext(encryptionContext, () => handle(data)).catch(async (error: unknown) => {
      ctx.logger.error({ err: error, threadId }, 'thread stream command failed');
      await send(threadStream.protocolError(null, 'unknown_error', 'The command failed.'));
    });
  });
}
