// The gateway at /deployments/<id>/… for deployments that run their own agent server (control-plane
// deployments: a sandboxed process on a database of its own). It authenticates the caller's platform
// key, checks their role in the deployment's workspace (no role: 404; a viewer's write: 403), and
// forwards the request as it came (SSE and long polls stream through, a disconnect is passed on as
// one) with the caller's identity in signed headers instead of their key: deployed code never sees a
// platform credential. A deployment that declares custom auth gets its end users' requests without a
// key, signed as coming through the gateway, and authenticates them itself (routeGatewayRequest).
// Local deployments (an operator's graph config) are answered by the router after this one, in this
// process.
import { request as httpRequest, type IncomingMessage, STATUS_CODES } from 'node:http';
import { connect } from 'node:net';
import { type Duplex, Transform } from 'node:stream';
import { type Request, type RequestHandler, Router } from 'express';
import { AppError } from '../errors.js';
import type { Deps } from '../services/context.js';
import { routeGatewayRequest } from '../services/deployments/agent-operations.js';
import { servedByOwnAgentServer } from '../services/deployments/deployments.service.js';
import { agentServerAddresses } from '../services/deployments/agent-server-addresses.js';
import { GATEWAY_IDENTITY_HEADER, GATEWAY_SIGNATURE_HEADER, requestAccess, RUNTIME_DEPLOYMENT_URL_HEADER } from '../gateway-protocol.js';
import { jsonRpcErrorHandler } from './middleware/json-rpc-errors.js';
import { errorHandler, httpStatus } from './middleware/errors.js';
import { requestIdOf } from './middleware/request-id.js';

// Hop-by-hop headers (RFC 9110 §7.6.1), the caller's platform key, and what the gateway sets itself.
const NOT_FORWARDED = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
  'host',
  'x-api-key',
  GATEWAY_IDENTITY_HEADER,
  GATEWAY_SIGNATURE_HEADER,
  RUNTIME_DEPLOYMENT_URL_HEADER,
]);

// The public pages of an agent server (its API reference).
const PUBLIC_PAGES = /^\/(docs|openapi\.json)\/?(\?|$)/;
// JSON-RPC routes whose access depends on the method in the body, which the agent server reads and checks.
const JSON_RPC = /^\/(mcp|a2a\/[^/?]+)\/?(\?|$)/;

/**
 * Whose pages a deployment's responses are: its own, not the platform's. The platform's origin
 * serves them, so a page of a deployment's HTTP app runs as a sandboxed, unique origin and cannot
 * read what the console keeps for the platform's origin (its API key).
 */
const DEPLOYMENT_CONTENT_POLICY = 'sandbox allow-scripts allow-forms allow-popups allow-downloads';

/** The body as it streams in, cut at the body limit with 413 (the agent server checks JSON bodies again, as parsed). */
function boundedBody(req: Request, limit: number): Transform | undefined {
  if (req.method === 'GET' || req.method === 'HEAD' || !(req.headers['content-length'] || req.headers['transfer-encoding'])) return undefined;
  if (Number(req.headers['content-length']) > limit) throw new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large.');
  let received = 0;
  const body = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (received > limit) done(new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large.'));
      else done(null, chunk);
    },
  });
  req.pipe(body);
  return body;
}

export function deploymentsGateway(deps: Deps): Router {
  const router = Router({ mergeParams: true });
  const forward: RequestHandler = async (req, res, next) => {
    const deploymentId = String(req.params.deploymentId);
    // req.url: the path below /deployments/<id>, with its query, as the agent server serves it.
    const path = req.url;
    // The API reference is the platform's own page (the same for every agent server): served here,
    // even before the deployment's first revision runs.
    if (PUBLIC_PAGES.test(path) || !(await servedByOwnAgentServer(deps, deploymentId))) return next();
    // A JSON-RPC call's access depends on its method: the agent server checks it against the caller's.
    const access = JSON_RPC.test(path) ? 'read' : requestAccess(req);
    const caller = { apiKey: req.get('x-api-key'), authScheme: req.get('x-auth-scheme'), access, method: req.method, path };
    const route = await routeGatewayRequest(deps, deploymentId, caller, () => res.closed);
    if (!route) return;

    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !NOT_FORWARDED.has(name)) headers[name] = value;
    headers[RUNTIME_DEPLOYMENT_URL_HEADER] = `${deps.config.publicUrl ?? `${req.protocol}://${req.get('host')}`}${req.baseUrl}`;
    // The request's id, as the platform's other routes give one; the agent server gets it too.
    const requestId = requestIdOf(req);
    headers['x-request-id'] = requestId;
    res.setHeader('X-Request-Id', requestId);
    Object.assign(headers, route.headers);
    const body = boundedBody(req, deps.config.bodyLimitBytes);

    // A caller that goes away ends the upstream request (a plain flag and destroy: an AbortSignal made
    // a DOMException for every request that simply finished, ~3% of the gateway's CPU).
    let callerGone = false;
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const outgoing = httpRequest(new URL(path, route.url), { method: req.method, headers });
      res.once('close', () => {
        if (res.writableFinished) return;
        callerGone = true;
        outgoing.destroy();
      });
      outgoing.once('response', resolve);
      outgoing.once('error', reject);
      if (!body) return void outgoing.end();
      body.once('error', (error) => {
        // The rest of the body is read and dropped, so the client gets the 413 rather than a reset.
        req.unpipe();
        req.resume();
        outgoing.destroy();
        reject(error);
      });
      body.pipe(outgoing);
    }).catch((error: unknown) => {
      if (error instanceof AppError) throw error;
      if (callerGone) return undefined;
      // Read the deployment's servers again on the next request: this one may be gone.
      void agentServerAddresses(deps, deploymentId, { fresh: true }).catch(() => undefined);
      deps.logger.warn({ err: error, deploymentId }, "a deployment's agent server did not answer");
      throw new AppError('UNAVAILABLE', "The deployment's agent server did not answer.");
    });
    if (!response) return;
    for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !NOT_FORWARDED.has(name)) res.setHeader(name, value);
    res.setHeader('content-security-policy', DEPLOYMENT_CONTENT_POLICY);
    res.status(response.statusCode ?? 502);
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
  };
  router.use(forward);
  // A2A and MCP speak JSON-RPC: what the gateway refuses there (no key, no such deployment, a body too large) answers in its shape, as at the agent server.
  router.use(['/a2a', '/mcp'], jsonRpcErrorHandler);
  router.use(errorHandler('plain', deps.logger));
  return router;
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
    if (!(await servedByOwnAgentServer(deps, deploymentId))) throw AppError.notFound(`Not found: GET ${req.url}`);
    const header = (name: string) => (typeof req.headers[name] === 'string' ? req.headers[name] : undefined);
    const path = `${rest}${query}`;
    const caller = { apiKey: header('x-api-key'), authScheme: header('x-auth-scheme'), access: 'read' as const, method: 'GET', path };
    const route = await routeGatewayRequest(deps, deploymentId, caller, () => socket.closed);
    if (!route) return;
    const headers: [string, string][] = [];
    for (const [name, value] of Object.entries(req.headers)) {
      // The upgrade's own headers pass (connection, upgrade, sec-websocket-*); the caller's key does not.
      if (value === undefined || name === 'host' || name === 'x-api-key' || name === GATEWAY_IDENTITY_HEADER || name === GATEWAY_SIGNATURE_HEADER || name === RUNTIME_DEPLOYMENT_URL_HEADER) continue;
      for (const item of Array.isArray(value) ? value : [value]) headers.push([name, item]);
    }
    const target = new URL(route.url);
    headers.push(['host', target.host]);
    headers.push([RUNTIME_DEPLOYMENT_URL_HEADER, `${deps.config.publicUrl ?? `http://${req.headers.host}`}/deployments/${deploymentId}`]);
    headers.push(...Object.entries(route.headers));
    const upstream = connect(Number(target.port), target.hostname.replace(/^\[|\]$/g, ''));
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
