// The gateway at /deployments/<id>/… to every deployment's own agent server (a control-plane
// deployment's, in its sandbox; a local deployment's, in the platform process that runs it; both on a
// database of their own). It authenticates the caller's platform key, checks their role in the deployment's workspace (no role: 404; a viewer's write: 403), and
// forwards the request as it came (SSE and long polls stream through, a disconnect is passed on as
// one) with the caller's identity in signed headers instead of their key: deployed code never sees a
// platform credential. A deployment that declares custom auth gets its end users' requests without a
// key, signed as coming through the gateway, and authenticates them itself (routeGatewayRequest).
// A browser's CORS preflight, which carries no credentials, is forwarded without a key for the
// deployment's own `http.cors` to answer; the Access-Control-* headers of its answers pass through.
// The agent server's API reference (/docs, /openapi.json), the same for every deployment, is the
// platform's own page, served by the router after this one.
import { type ClientRequest, request as httpRequest, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import { connect } from 'node:net';
import { type Duplex, Transform } from 'node:stream';
import express, { type ErrorRequestHandler, type RequestHandler, Router } from 'express';
import { AppError } from '../../errors.js';
import type { Deps } from '../../context.js';
import { assertWithinLimits, routeGatewayRequest, routePreflight } from '../services/deployments/agent-operations.js';
import { deploymentCors, deploymentExists } from '../services/deployments/deployments.service.js';
import { agentServerAddresses } from '../services/deployments/agent-server-addresses.js';
import { type DeploymentAccess, GATEWAY_IDENTITY_HEADER, GATEWAY_SIGNATURE_HEADER, requestAccess, RUNTIME_DEPLOYMENT_URL_HEADER } from '../../contracts/gateway-protocol.js';
import { jsonRpcErrorHandler } from '../../http/json-rpc-errors.js';
import { errorHandler, httpStatus } from '../../http/errors.js';
import { requestIdOf } from '../../http/request-id.js';
import { corsPolicy, isCorsPreflight } from '../../http/cors.js';

// What of a caller's request never reaches a deployment: its platform key, and what the gateway sets
// itself (the signed identity, the deployment's url, the host).
const CALLER_ONLY = new Set(['host', 'x-api-key', GATEWAY_IDENTITY_HEADER, GATEWAY_SIGNATURE_HEADER, RUNTIME_DEPLOYMENT_URL_HEADER]);
// What an HTTP request or answer does not pass on: the above, and the hop-by-hop headers (RFC 9110
// §7.6.1; a WebSocket upgrade keeps those, forwardDeploymentUpgrade).
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer', ...CALLER_ONLY]);

// What the gateway sets on a deployment's answers itself.
const SET_BY_GATEWAY = new Set(['x-request-id', 'content-security-policy']);

// The public pages of an agent server (its API reference, with its script and assets).
const PUBLIC_PAGES = /^\/(docs(\/init\.js|\/assets\/[^/?]+)?|openapi\.json)\/?(\?|$)/;
// JSON-RPC routes whose access depends on the method in the body, which the agent server reads and checks.
const JSON_RPC = /^\/(mcp|a2a\/[^/?]+)\/?(\?|$)/;

/**
 * Whose pages a deployment's responses are: its own, not the platform's. The platform's origin
 * serves them, so a page of a deployment's HTTP app runs as a sandboxed, unique origin and cannot
 * read what the console keeps for the platform's origin (its API key).
 */
const DEPLOYMENT_CONTENT_POLICY = 'sandbox allow-scripts allow-forms allow-popups allow-downloads';

// Bodies up to this size are read whole and sent with the request's headers in one write; larger
// ones (and chunked ones) stream through.
const WHOLE_BODY_BYTES = 64 * 1024;

const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large.');

/**
 * Sends the caller's body upstream, cut at the body limit (413; the agent server checks JSON bodies
 * again, as parsed). A declared length, checked against the limit before, is what the body is (Node's
 * parser reads no more), so only a chunked body is counted as it streams. `failed` gets a 413 met mid-stream.
 */
function sendBody(req: IncomingMessage, outgoing: ClientRequest, limit: number, failed: (error: AppError) => void): void {
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (req.method === 'GET' || req.method === 'HEAD' || !(req.headers['content-length'] || chunked)) return void outgoing.end();
  const declared = Number(req.headers['content-length']);
  if (!chunked && declared <= WHOLE_BODY_BYTES) {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => outgoing.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    return;
  }
  if (!chunked) return void req.pipe(outgoing);
  let received = 0;
  const body = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (received > limit) done(tooLarge());
      else done(null, chunk);
    },
  });
  body.once('error', (error) => {
    // The rest of the body is read and dropped, so the client gets the 413 rather than a reset.
    req.unpipe();
    req.resume();
    outgoing.destroy();
    failed(error as AppError);
  });
  req.pipe(body).pipe(outgoing);
}

/** An agent server's url as http.request takes it, parsed once per url (a restarted server has a new one: the oldest go). */
// Requests that carry no body: one whose agent server was gone may be sent to another.
const BODILESS = new Set(['GET', 'HEAD']);

const upstreams = new Map<string, { hostname: string; port: number; host: string }>();
const UPSTREAMS_KEPT = 1000;
function upstreamOf(url: string) {
  let upstream = upstreams.get(url);
  if (!upstream) {
    const parsed = new URL(url);
    upstream = { hostname: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 80), host: parsed.host };
    if (upstreams.size >= UPSTREAMS_KEPT) upstreams.delete(upstreams.keys().next().value!);
    upstreams.set(url, upstream);
  }
  return upstream;
}

/** The scheme the caller used: the proxy's in front of the platform (trusted, as the app's `trust proxy`), else this socket's. */
function protocolOf(req: IncomingMessage): string {
  const forwarded = req.headers['x-forwarded-proto'];
  if (typeof forwarded === 'string' && forwarded) return forwarded.split(',')[0]!.trim();
  return (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
}

/** The deployment's url as its callers reach it (`mount` is /deployments/<id> as they wrote it): the agent server's links and A2A cards use it. */
function deploymentUrlOf(deps: Deps, req: IncomingMessage, mount: string): string {
  return `${deps.config.publicUrl ?? `${protocolOf(req)}://${req.headers.host ?? ''}`}${mount}`;
}

/** The caller of a request as the gateway authorises it (routeGatewayRequest): its key, its auth scheme, what it asks for. */
function callerOf(req: IncomingMessage, access: DeploymentAccess, path: string) {
  const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
  return { apiKey: header('x-api-key'), authScheme: header('x-auth-scheme'), access, method: req.method ?? 'GET', path };
}

/** What of a request the gateway reads besides the request itself: where it was mounted and what Express parsed. */
type GatewayRequest = {
  deploymentId: string;
  /** The path below /deployments/<id>, with its query, as the agent server serves it. */
  path: string;
  /** Its pathname alone (for requestAccess). */
  pathname: string;
  /** /deployments/<id> as the caller wrote it. */
  mount: string;
};

/**
 * Forwards a request to the deployment's own agent server; false when the deployment's url is not the
 * gateway's to answer (its public pages, a deployment that does not exist), which the platform's routers answer.
 * Rejects with the AppError to answer before the agent server's response began.
 */
async function forwardRequest(deps: Deps, req: IncomingMessage, res: ServerResponse, at: GatewayRequest): Promise<boolean> {
  const { deploymentId, path } = at;
  // The API reference is the platform's own page (the same for every agent server): served here,
  // even before the deployment's first revision runs.
  if (PUBLIC_PAGES.test(path) || !(await deploymentExists(deps, deploymentId))) return false;
  // A JSON-RPC call's access depends on its method: the agent server checks it against the caller's.
  const access = JSON_RPC.test(path) ? 'read' : requestAccess({ method: req.method!, path: at.pathname, body: undefined });
  // A browser sends its preflight without credentials: the deployment's own `http.cors` answers it.
  const routeOf = () =>
    isCorsPreflight(req)
      ? routePreflight(deps, deploymentId, { method: 'OPTIONS', path }, () => res.closed)
      : routeGatewayRequest(deps, deploymentId, callerOf(req, access, path), () => res.closed);
  let route = await routeOf();
  if (!route) return true;

  // The request's id, as the platform's other routes give one; the agent server gets it too, and its
  // answer carries it (set below with the rest of the answer's headers, in one writeHead).
  const requestId = requestIdOf(req);
  const upstream = upstreamOf(route.url);
  // Headers as a flat list: http.request and writeHead then write them as they are, without a header
  // object to build and check name by name (they were checked as the caller's request was parsed).
  const headers: string[] = ['host', upstream.host];
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value === undefined || NOT_FORWARDED.has(name) || name === 'x-request-id') continue;
    if (typeof value === 'string') headers.push(name, value);
    else for (const item of value) headers.push(name, item);
  }
  headers.push(RUNTIME_DEPLOYMENT_URL_HEADER, deploymentUrlOf(deps, req, at.mount), 'x-request-id', requestId);
  for (const name in route.headers) headers.push(name, route.headers[name]!);

  if (Number(req.headers['content-length']) > deps.config.bodyLimitBytes) {
    res.setHeader('X-Request-Id', requestId);
    throw tooLarge();
  }

  // A caller that goes away ends the upstream request (a plain flag and destroy: an AbortSignal made
  // a DOMException for every request that simply finished, ~3% of the gateway's CPU).
  let callerGone = false;
  const send = (to: { hostname: string; port: number }, sent: string[]) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const outgoing = httpRequest({ hostname: to.hostname, port: to.port, path, method: req.method, headers: sent });
      res.once('close', () => {
        if (res.writableFinished) return;
        callerGone = true;
        outgoing.destroy();
      });
      outgoing.once('response', resolve);
      outgoing.once('error', reject);
      sendBody(req, outgoing, deps.config.bodyLimitBytes, reject);
    });
  const response = await send(upstream, headers)
    .catch(async (error: unknown) => {
      // A request without a body that found its agent server gone (one of a deployment's replicas
      // died, or was replaced) goes to another one, once: nothing of it was consumed.
      if (error instanceof AppError || callerGone || !BODILESS.has(req.method ?? '')) throw error;
      await agentServerAddresses(deps, deploymentId, { fresh: true });
      const again = await routeOf();
      if (!again || again.url === route!.url) throw error;
      route = again;
      const other = upstreamOf(again.url);
      const resent = headers.map((value, i) => (i === 1 ? other.host : value));
      for (const name in again.headers) resent[resent.indexOf(name) + 1] = again.headers[name]!;
      return send(other, resent);
    })
    .catch(async (error: unknown) => {
      if (!res.headersSent) res.setHeader('X-Request-Id', requestId);
      if (error instanceof AppError) throw error;
      if (callerGone) return undefined;
      // Read the deployment's servers again on the next request: this one may be gone.
      void agentServerAddresses(deps, deploymentId, { fresh: true }).catch(() => undefined);
      // It may have been stopped since it was routed to, for outgrowing its limits: then say so.
      await assertWithinLimits(deps, deploymentId);
      deps.logger.warn({ err: error, deploymentId }, "a deployment's agent server did not answer");
      throw new AppError('UNAVAILABLE', "The deployment's agent server did not answer.");
    });
  if (!response) return true;
  const answer: string[] = [];
  const raw = response.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (!NOT_FORWARDED.has(name) && !SET_BY_GATEWAY.has(name)) answer.push(raw[i]!, raw[i + 1]!);
  }
  answer.push('X-Request-Id', requestId, 'Content-Security-Policy', DEPLOYMENT_CONTENT_POLICY);
  res.writeHead(response.statusCode ?? 502, answer);
  // A stream's headers go at once (the client learns it is connected); a plain response's go with its body, in one write.
  if (String(response.headers['content-type']).startsWith('text/event-stream')) res.flushHeaders();
  // pipe(), not stream/promises' pipeline(): that one aborts an AbortController of its own at every
  // end, a DOMException per request (~2.5% of the gateway's CPU). A caller that goes away destroys
  // the upstream request (above); an upstream that fails ends the caller's response.
  await new Promise<void>((resolve) => {
    response.once('error', () => res.destroy());
    res.once('close', resolve);
    response.pipe(res);
  });
  return true;
}

/**
 * The gateway's own answers at a deployment's url (its 401 to a page without a key, a 503 while the
 * agent server is not up, a preflight it could not forward) carry the CORS headers of the deployment's
 * `http.cors`, as the agent server's answers do: a page of an origin it allows reads why it was
 * refused, where the browser would otherwise report only a CORS failure, and the SDK's retry of a 503
 * gets past its preflight. None for an origin the policy refuses, or a deployment that does not exist.
 */
function gatewayAnswersCors(deps: Deps): ErrorRequestHandler {
  return async (error, req, res, next) => {
    if (typeof req.headers.origin !== 'string' || res.headersSent) return next(error);
    const cors = await deploymentCors(deps, String(req.params.deploymentId)).catch(() => undefined);
    if (cors === undefined) return next(error);
    try {
      // Adds the headers (and next), or answers a preflight itself; refuses (throws) for an origin it does not allow.
      corsPolicy(cors ?? undefined).middleware(req, res, () => next(error));
    } catch {
      next(error);
    }
  };
}

/** The gateway as a router of the platform's Express app, mounted at /deployments/:deploymentId. */
export function deploymentsGateway(deps: Deps): Router {
  const router = Router({ mergeParams: true });
  const forward: RequestHandler = async (req, res, next) => {
    const at = { deploymentId: String(req.params.deploymentId), path: req.url, pathname: req.path, mount: req.baseUrl };
    if (!(await forwardRequest(deps, req, res, at))) next();
  };
  router.use(forward);
  router.use(gatewayAnswersCors(deps));
  // A2A and MCP speak JSON-RPC: what the gateway refuses there (no key, no such deployment, a body too large) answers in its shape, as at the agent server.
  router.use(['/a2a', '/mcp'], jsonRpcErrorHandler);
  router.use(errorHandler('plain', deps.logger));
  return router;
}

// The common shape of a deployment's url, which the gateway takes before Express (deploymentsGatewayFirst).
const FORWARDED_PATH = /^(\/deployments\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}))(\/[^?]*)?(\?.*)?$/;

/**
 * The gateway ahead of the platform's Express app: a request at a deployment's url in its common
 * shape (/deployments/<lower-case uuid>/…) is forwarded without passing Express's request set-up and
 * routers (in a micro-benchmark of the same forwarding, about half of its CPU per request); errors
 * answer through the same error handlers. Everything else, and what the gateway does not forward, goes to `app` (where the router
 * above takes the rest of the deployments' urls).
 */
export function deploymentsGatewayFirst(deps: Deps, app: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
  const failures = new WeakMap<IncomingMessage, unknown>();
  // The same error handlers as the router's (below a mount of the same shape, so their paths match).
  const failed = Router({ mergeParams: true });
  failed.use((req, _res, next) => next(failures.get(req)));
  failed.use(gatewayAnswersCors(deps));
  failed.use(['/a2a', '/mcp'], jsonRpcErrorHandler);
  failed.use(errorHandler('plain', deps.logger));
  const errors = express();
  errors.use('/deployments/:deploymentId', failed);
  return (req, res) => {
    const match = FORWARDED_PATH.exec(req.url ?? '');
    if (!match) return app(req, res);
    const [, mount = '', deploymentId = '', pathname = '/', query = ''] = match;
    forwardRequest(deps, req, res, { deploymentId, path: `${pathname}${query}`, pathname, mount }).then(
      (forwarded) => {
        if (!forwarded) app(req, res);
      },
      (error: unknown) => {
        failures.set(req, error);
        errors(req, res);
      },
    );
  };
}

const UPGRADE_PATH = /^\/deployments\/([^/?]+)(\/[^?]*)?(\?.*)?$/;

/** Whether an HTTP upgrade (a WebSocket) is for a deployment's url: the gateway's, not /graphql's. */
export const isDeploymentUpgrade = (url: string | undefined) => UPGRADE_PATH.test(url ?? '');

/** Answers an upgrade the gateway refuses, as plain text, and closes the socket. */
function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  const reason = STATUS_CODES[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(message)}\r\nConnection: close\r\n\r\n${message}`);
}

/**
 * A WebSocket at a deployment's url: checked as every request (key and role, or the deployment's own
 * custom auth), then handed to the deployment's own agent server with the caller's signed identity, both directions piped as they
 * come; either side closing closes the other. What a socket may do beyond reading is the agent
 * server's to check against the signed access.
 */
export async function forwardDeploymentUpgrade(deps: Deps, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  socket.on('error', () => undefined);
  try {
    const [, deploymentId = '', rest = '/', query = ''] = UPGRADE_PATH.exec(req.url ?? '') ?? [];
    if (!(await deploymentExists(deps, deploymentId))) throw AppError.notFound(`Not found: GET ${req.url}`);
    const path = `${rest}${query}`;
    const route = await routeGatewayRequest(deps, deploymentId, callerOf(req, 'read', path), () => socket.closed);
    if (!route) return;
    const target = upstreamOf(route.url);
    const headers: [string, string][] = [['host', target.host]];
    for (const [name, value] of Object.entries(req.headers)) {
      // The upgrade's own headers pass (connection, upgrade, sec-websocket-*); the caller's key does not.
      if (value === undefined || CALLER_ONLY.has(name)) continue;
      for (const item of Array.isArray(value) ? value : [value]) headers.push([name, item]);
    }
    headers.push([RUNTIME_DEPLOYMENT_URL_HEADER, deploymentUrlOf(deps, req, `/deployments/${deploymentId}`)]);
    headers.push(...Object.entries(route.headers));
    const upstream = connect(target.port, target.hostname);
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
    upstream.once('connect', () => {
      upstream.write(`GET ${path} HTTP/1.1\r\n${headers.map(([name, value]) => `${name}: ${value}`).join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
  } catch (error) {
    const { status, message } = httpStatus(error, deps.logger);
    refuseUpgrade(socket, status, message);
  }
}
