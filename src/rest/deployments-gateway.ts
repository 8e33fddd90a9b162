// The gateway at /deployments/<id>/… for deployments that run their own agent server (control-plane
// deployments: a sandboxed process on a database of its own). It authenticates the caller's platform
// key, checks their role in the deployment's workspace (no role: 404; a viewer's write: 403), and
// forwards the request as it came (SSE and long polls stream through, a disconnect is passed on as
// one) with the caller's identity in signed headers instead of their key: deployed code never sees a
// platform credential. Local deployments (an operator's graph config) are answered by the router after
// this one, in this process.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Request, type RequestHandler, Router } from 'express';
import { AppError } from '../errors.js';
import type { Deps } from '../services/context.js';
import { authorizeDeploymentCaller, servedByOwnAgentServer } from '../services/deployments/deployments.service.js';
import { agentServerAddresses } from '../services/deployments/runtime-client.js';
import {
  GATEWAY_IDENTITY_HEADER,
  GATEWAY_SIGNATURE_HEADER,
  type GatewayIdentity,
  RUNTIME_DEPLOYMENT_URL_HEADER,
} from '../services/deployments/runtime-protocol.js';
import { authenticateApiKey } from '../services/tenancy/tenancy.service.js';
import { requestAccess } from './agent-server/access.js';
import { gatewayIdentityHeaders } from '../services/deployments/runtime-protocol.js';
import { errorHandler } from './middleware/errors.js';

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
    const viewer = await authenticateApiKey(deps, req.get('x-api-key'), undefined);
    if (viewer.kind !== 'api-key') throw AppError.unauthenticated();
    // A JSON-RPC call's access depends on its method: the agent server checks it against the caller's.
    const access = await authorizeDeploymentCaller({ ...deps, viewer }, deploymentId, JSON_RPC.test(path) ? 'read' : requestAccess(req));
    const caller: Omit<GatewayIdentity, 'expires'> = { userId: viewer.userId, apiKeyId: viewer.apiKeyId, access };
    const [server] = await agentServerAddresses(deps, deploymentId);
    if (!server) throw new AppError('UNAVAILABLE', 'The deployment has no running agent server.');

    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !NOT_FORWARDED.has(name)) headers[name] = value;
    headers[RUNTIME_DEPLOYMENT_URL_HEADER] = `${deps.config.publicUrl ?? `${req.protocol}://${req.get('host')}`}${req.baseUrl}`;
    Object.assign(headers, gatewayIdentityHeaders(server.signer, server.runtimeId, { method: req.method, path }, caller));
    const body = boundedBody(req, deps.config.bodyLimitBytes);

    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const outgoing = httpRequest(new URL(path, server.url), { method: req.method, headers, signal: aborted.signal });
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
      if (aborted.signal.aborted) return undefined;
      deps.logger.warn({ err: error, deploymentId }, "a deployment's agent server did not answer");
      throw new AppError('UNAVAILABLE', "The deployment's agent server did not answer.");
    });
    if (!response) return;
    for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !NOT_FORWARDED.has(name)) res.setHeader(name, value);
    res.setHeader('content-security-policy', DEPLOYMENT_CONTENT_POLICY);
    res.status(response.statusCode ?? 502);
    res.flushHeaders();
    await pipeline(response, res).catch(() => res.destroy());
  };
  router.use(forward);
  router.use(errorHandler('plain', deps.logger));
  return router;
}
