// The agent server's REST surface for the one deployment it serves, at the root of its server (the
// platform's gateway forwards /deployments/<id>/… there; `serve` answers on its own port). Errors are
// plain text (the SDK reports them as "HTTP 404: Assistant not found").
import { type Request, type RequestHandler, Router } from 'express';
import { AppError } from '../../errors.js';
import type { Deps } from '../../context.js';
import { type CustomAuth, platformCaller } from '../services/custom-auth/custom-auth.js';
import type { AgentServerContext } from '../services/served-deployment/deployment-scope.js';
import { agentContext } from '../services/served-deployment/served-deployment.js';
import { AGENT_CALL_PATH, type DeploymentAccess, requestAccess, RUNTIME_DEPLOYMENT_URL_HEADER } from '../../contracts/gateway-protocol.js';
import { truncateDeployment } from '../services/served-deployment/truncate.js';
import { localViewer } from '../../viewer.js';
import { deploymentMetrics } from '../services/system/metrics.service.js';
import { applyRateLimits } from '../services/rate-limits/rate-limits.service.js';
import type { CustomApp, UiBundles } from '../services/served-deployment/runtime-protocol.js';
import { errorHandler, notFoundHandler } from '../../http/errors.js';
import { agentServerSurface } from './openapi.operations.js';
import { apiReferenceRouter } from '../../http/openapi/reference.routes.js';
import { healthCheck } from '../../http/health.js';
import { jsonBody } from '../../http/json-body.js';
import { corsPolicy, type CorsPolicy } from '../../http/cors.js';
import { a2aRouter } from './a2a.routes.js';
import { jsonRpcErrorHandler } from '../../http/json-rpc-errors.js';
import { gatewayIdentityOf, platformCallRoute } from './gateway-identity.js';
import { assistantsRouter } from './assistants.routes.js';
import { cronsRouter } from './crons.routes.js';
import { attachCustomAuth, customAuthentication, customAuthErrors, type PlatformKeyCheck, type StudioCredential } from './custom-auth.js';
import { encryptionContext } from './encryption-context.js';
import type { CustomEncryption } from '../services/encryption/at-rest.js';
import { customRoutes } from './custom-routes.js';
import { mcpRouter } from './mcp.routes.js';
import { type RunFeedback, runsRouter } from './runs.routes.js';
import { storeRouter } from './store.routes.js';
import { threadsRouter } from './threads.routes.js';
import { commandBodyErrorHandler, threadStreamRouter } from './thread-stream.routes.js';
import { uiRouter } from './ui.routes.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the agent-server router: the service context of this request, in its deployment. */
      agent: AgentServerContext;
      /** Set by the agent-server router for a request through the gateway: the deployment's url as its caller reached it. */
      deploymentUrl?: string;
    }
  }
}

/**
 * The deployment an agent server serves and who may call it: requests the platform's gateway signed
 * for this server (`runtimeId`), as the caller it let through; with `anonymous` (`serve`, like
 * `langgraph dev`) any other request too, as the developer on this machine. `platformKeys` checks a
 * platform API key where the platform's keys are in reach (`serve`, which needs it only for the
 * studio's scheme under custom auth): the agent server's code never reads the platform's tables.
 */
export type AgentServerTarget = { deploymentId: string; runtimeId(): string; anonymous: boolean; dev: boolean; platformKeys?: PlatformKeyCheck };

/**
 * The service context of a request to the agent server, in its deployment, and what the request may
 * do (`access`: FORBIDDEN for a write the caller may not make). `callerAccess` is what the gateway's
 * signed identity lets the caller do and `callerUserId` the platform user it signed for (absent for
 * an end user, whom only a deployment with `customAuth` accepts: its handlers decide who they are),
 * both absent for serve's developer. The REST routes and the thread stream's WebSocket both resolve
 * callers here.
 */
export async function resolveAgentContext(
  deps: Deps,
  target: AgentServerTarget,
  request: { access: DeploymentAccess; request: Pick<Request, 'get' | 'method' | 'originalUrl'>; customAuth: boolean },
): Promise<{ ctx: AgentServerContext; callerAccess?: DeploymentAccess; callerUserId?: string; throughGateway: boolean }> {
  const viewer = localViewer(target.deploymentId);
  // The gateway authenticated the caller and checked their role; what it let through is signed.
  const identity = gatewayIdentityOf(deps, target.runtimeId(), request.request as Request, { required: !target.anonymous });
  if (!identity) return { ctx: await agentContext({ ...deps, viewer }, target.deploymentId, { dev: target.dev }), throughGateway: false };
  // An end user (no platform key) is let through for the deployment's own auth; without it, refused
  // here too, whatever the gateway believed this revision to declare.
  if (identity.userId === null && !request.customAuth) throw AppError.unauthenticated('Missing API key: send it in the X-Api-Key header.');
  if (request.access === 'write' && identity.access !== 'write') throw AppError.forbidden('This API key may only read this deployment.');
  const ctx = await agentContext({ ...deps, viewer }, target.deploymentId, { dev: target.dev });
  return { ctx, callerAccess: identity.access, callerUserId: identity.userId ?? undefined, throughGateway: true };
}

/** The studio's credential at a target: the platform user the gateway signed for, else (at `serve`) a platform key. */
export const studioCredentialOf = (target: AgentServerTarget): StudioCredential => ({
  gatewayRuntimeId: target.runtimeId,
  deploymentId: target.deploymentId,
  platformKeys: target.platformKeys,
});

const deploymentUrlOf = (req: Request) => req.deploymentUrl;

/** Draws the request from its rate-limit buckets; a refusal answers 429 with Retry-After, as HTTP says and the SDKs read. */
const rateLimited: RequestHandler = async (req, res, next) => {
  try {
    await applyRateLimits(req.agent, req.path);
    next();
  } catch (error) {
    if (error instanceof AppError && error.code === 'TOO_MANY_REQUESTS') res.set('Retry-After', String((error.details as { retryAfterSeconds: number }).retryAfterSeconds));
    next(error);
  }
};

/**
 * The agent-server API for a target. `customApp` (langgraph.json `http.app`), `ui` and `auth` are the
 * project's own routes, UI bundles and custom auth, loaded where its code runs (agent-server.ts);
 * `cors` its policy for browser pages of other origins (`http.cors`; by default any origin).
 */
export function agentServerRouter(
  deps: Deps,
  target: AgentServerTarget,
  options: {
    customApp?: CustomApp;
    ui?: UiBundles;
    auth?: CustomAuth;
    /** The project's encryption at rest (langgraph.json `encryption`), whose context handler each request runs in. */
    encryption?: CustomEncryption;
    cors?: CorsPolicy;
    tracesIngested?: () => Promise<number>;
    /** Where its runs' feedback urls are made (the project its traces go to), when its runs are traced. */
    feedback?: RunFeedback;
  } = {},
): Router {
  const router = Router({ mergeParams: true });
  // Before anything that asks who is calling: a browser's preflight carries no credentials (and
  // reaches a deployed server through the gateway without a platform key), and an answer the policy
  // allows a page to read must say so, errors included. As on the reference server, the project's
  // own routes are behind it too.
  router.use((options.cors ?? corsPolicy()).middleware);
  // Custom auth (langgraph.json `auth`, loaded where the project's code runs) decides who the caller
  // is before anything else but the CORS policy answers, the project's own routes included, as on
  // the reference server.
  if (options.auth) router.use(customAuthentication(deps, options.auth, studioCredentialOf(target)));
  // The project's own routes (langgraph.json `http.app`) come first, as on the reference server.
  if (options.customApp) router.use(customRoutes(options.customApp, deps.config));
  // The reference is public (a browser opening /docs sends no API key) and names no tenant's data.
  router.use(apiReferenceRouter(agentServerSurface({ apiKey: !target.anonymous })));
  // Before the request's context, which reads the database: while the database is away this answers
  // 503 (not ready) rather than the context's failure.
  router.get('/ok', healthCheck(deps));
  // A body labelled text/plain is JSON, as on the reference server; one not labelled is read as JSON too.
  router.use(jsonBody(deps.config, { strict: false, lenient: true }));
  router.use(async (req, res, next) => {
    const resolved = await resolveAgentContext(deps, target, {
      access: requestAccess(req),
      request: req,
      customAuth: options.auth !== undefined,
    });
    // The platform's calls (platformCallRoute) are a platform user's: an end user has no callerAccess.
    if (resolved.callerAccess && resolved.callerUserId) res.locals.callerAccess = resolved.callerAccess;
    // The deployment's url as the caller reached it, which the gateway sends (UI links, A2A cards).
    if (resolved.throughGateway) req.deploymentUrl = req.get(RUNTIME_DEPLOYMENT_URL_HEADER);
    // Without custom auth, a deployed agent server's caller is the platform user the gateway signed
    // for: their runs record them (config.configurable.langgraph_auth_user_id), as on the hosted platform.
    const ctx = resolved.callerUserId && !options.auth ? platformCaller(resolved.ctx, resolved.callerUserId) : resolved.ctx;
    req.agent = { ...ctx, configurableHeaders: configurableHeaders(req) };
    next();
  });
  if (options.auth) router.use(attachCustomAuth(options.auth));
  if (options.encryption) router.use(encryptionContext(options.encryption));

  router.get('/info', (_req, res) => {
    res.json({
      version: '0.1.0',
      langgraph_js_version: '1.7.3',
      flags: { assistants: true, crons: true, store: true, a2a: true, mcp: true, langsmith: false, langsmith_tracing_replicas: false },
      host: { kind: 'agent-platform', project_id: null, host_revision_id: null, revision_id: null, tenant_id: null },
    });
  });

  router.get('/metrics', async (req, res) => {
    const { contentType, text } = await deploymentMetrics(req.agent, { tracesIngested: options.tracesIngested });
    res.type(contentType).send(text);
  });

  // The opt-in rate limits, once the caller is known (custom auth's identity, the gateway's user).
  if (deps.config.agentServerRateLimits.mode !== 'off') router.use(rateLimited);

  // Runs first: they are the busiest routes, and each router a request passes costs a path match per
  // route (no two of these routers answer the same path, so the order changes nothing else).
  router.use(runsRouter({ feedback: options.feedback }));
  router.use(assistantsRouter());
  router.use(threadsRouter());
  router.use(threadStreamRouter());
  router.use(cronsRouter());
  router.use(storeRouter());
  router.use(mcpRouter());
  router.use(a2aRouter({ urlOf: deploymentUrlOf }));
  // The platform's GraphQL calls on this deployment's resources (platform/services/deployments/agent-operations.ts).
  router.post(AGENT_CALL_PATH, platformCallRoute(deps));
  if (options.ui) router.use(uiRouter(options.ui, { urlOf: deploymentUrlOf, publicUrl: deps.config.publicUrl }));

  if (target.dev) {
    router.post('/internal/truncate', async (req, res) => {
      await truncateDeployment(req.agent, req.body ?? {});
      res.status(200).json({ ok: true });
    });
  }

  router.use(notFoundHandler);
  // A2A and MCP speak JSON-RPC: their bodies that are not JSON, too large or too deep answer in its shape.
  router.use(['/a2a', '/mcp'], jsonRpcErrorHandler);
  router.use('/threads/:threadId/commands', commandBodyErrorHandler);
  router.use(customAuthErrors);
  router.use(errorHandler('plain', deps.logger));
  return router;
}

// Credentials, and the headers the platform's gateway signs a caller's identity with, are no run's.
const UNPASSED_HEADERS = new Set(['x-api-key', 'x-tenant-id', 'x-service-key', 'x-runtime-signature']);

/**
 * The request headers a run's graph reads in `config.configurable`, as the reference server passes
 * them: every `x-*` header and `user-agent`, but credentials and the platform's own.
 */
function configurableHeaders(req: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value !== 'string') continue;
    if ((name.startsWith('x-') && !UNPASSED_HEADERS.has(name) && !name.startsWith('x-agent-platform-')) || name === 'user-agent') headers[name] = value;
  }
  return headers;
}
