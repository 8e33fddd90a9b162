// Custom auth at the agent server's door: when the deployment declares `auth`, its `authenticate`
// handler decides who each request is (every request but the public pages), or the request is the
// studio's: `x-auth-scheme: langsmith` with a platform credential that may use this deployment, unless
// `disable_studio_auth`. Services then authorise each action with the identity found here
// (services/custom-auth).
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import type { Deps } from '../../context.js';
import type { Viewer } from '../../viewer.js';
import type { AgentServerContext } from '../services/served-deployment/deployment-scope.js';
import { type AuthIdentity, type AuthorizedContext, AuthRefusal, type CustomAuth } from '../services/custom-auth/custom-auth.js';
import { agentContext } from '../services/served-deployment/served-deployment.js';
import { AGENT_CALL_PATH, type DeploymentAccess, type GatewayIdentity, requestAccess } from '../../contracts/gateway-protocol.js';
import { gatewayIdentityOf } from './gateway-identity.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by customAuthentication: who the request acts for under the deployment's custom auth. */
      customAuth?: AuthIdentity;
    }
  }
}

/** The studio's user, as the reference server and the SDK's isStudioUser() know it. */
const STUDIO_USER: AuthIdentity = {
  user: { kind: 'StudioUser', identity: 'langgraph-studio-user', display_name: 'langgraph-studio-user', is_authenticated: true, permissions: [] },
  permissions: [],
};

// /info and GET /ui assets, as on the reference server; and the API reference (/docs, /openapi.json),
// which names no data and which the platform's gateway also serves without credentials.
const isPublic = (req: Request) =>
  req.path === '/info' || ((req.method === 'GET' || req.method === 'HEAD') && (req.path === '/ui' || req.path.startsWith('/ui/') || /^\/(docs|openapi\.json)\/?$/.test(req.path)));

/** What authenticating a caller reads of a request: an Express request, or a WebSocket's upgrade. */
export type CallerRequest = Pick<Request, 'get' | 'method' | 'path' | 'originalUrl' | 'headers' | 'protocol'>;

/** The request as the handler's fetch `Request`: method, url and headers (the body is left to the routes). */
function fetchRequest(req: CallerRequest): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return new globalThis.Request(`${req.protocol}://${req.get('host') ?? 'localhost'}${req.originalUrl}`, { method: req.method, headers });
}

/**
 * How a studio request's credential is checked: the caller the gateway signed for (it checked their
 * key and role), or, where the platform's keys are in reach (`serve`), a key of the workspace of the
 * deployment the request is for.
 */
export type StudioCredential = { gatewayRuntimeId(): string; deploymentId: string; platformKeys: PlatformKeyCheck | undefined };

/** The viewer of a platform API key (UNAUTHENTICATED without a valid one), given where the platform's keys are in reach. */
export type PlatformKeyCheck = (apiKey: string | undefined) => Promise<Viewer>;

const NO_STUDIO_KEY = 'Studio access needs a valid API key of the deployment’s workspace (X-Api-Key).';

async function checkStudioCredential(deps: Deps, studio: StudioCredential, req: CallerRequest, access: DeploymentAccess): Promise<void> {
  let identity: GatewayIdentity | undefined;
  try {
    identity = gatewayIdentityOf(deps, studio.gatewayRuntimeId(), req, { required: !studio.platformKeys });
  } catch {
    throw new AuthRefusal(401, NO_STUDIO_KEY);
  }
  if (identity) {
    // The gateway forwards a studio request without a key as an end user's: it names no platform user.
    if (identity.userId === null) throw new AuthRefusal(401, NO_STUDIO_KEY);
    return;
  }
  const viewer = await studio.platformKeys!(req.get('x-api-key')).catch(() => {
    throw new AuthRefusal(401, NO_STUDIO_KEY);
  });
  // As at the deployment's url: a workspace viewer's key reads.
  await agentContext({ ...deps, viewer }, studio.deploymentId, { access }).catch(() => {
    throw new AuthRefusal(403, 'This API key may not make this request to this deployment.');
  });
}

/**
 * Who a request acts for under the deployment's custom auth: the studio's user for the studio's
 * scheme with a credential `studio` accepts (for `access`), else whom the `authenticate` handler
 * returns (undefined: the project has none). Throws AuthRefusal. Used by every route and by the
 * thread stream's WebSocket, on its upgrade request.
 */
export async function authenticateCaller(deps: Deps, auth: CustomAuth, studio: StudioCredential, req: CallerRequest, access: DeploymentAccess): Promise<AuthIdentity | undefined> {
  if (!auth.disableStudioAuth && req.get('x-auth-scheme') === 'langsmith') {
    await checkStudioCredential(deps, studio, req, access);
    return STUDIO_USER;
  }
  if (auth.allowPlatformKeys) {
    const platformUser = await platformKeyUser(deps, studio, req);
    // Its permissions are what its role in the deployment's workspace allows: `read`, or `read` and `write`.
    const permissions = platformUser?.access === 'write' ? ['read', 'write'] : ['read'];
    if (platformUser && (access === 'read' || platformUser.access === 'write')) {
      return { user: { kind: 'PlatformUser', identity: platformUser.userId, display_name: platformUser.userId, is_authenticated: true, permissions }, permissions };
    }
  }
  return auth.authenticate(fetchRequest(req));
}

/**
 * The platform user of a request's platform key that may make it (`auth.allow_langsmith_api_keys`):
 * the one the gateway signed for, or at `serve` a valid key of the deployment's workspace. Undefined
 * for any other request, which the project's own `authenticate` handler then judges (a key of no
 * use here is not a refusal: its header may be the application's own).
 */
async function platformKeyUser(deps: Deps, studio: StudioCredential, req: CallerRequest): Promise<{ userId: string; access: DeploymentAccess } | undefined> {
  const identity = (() => {
    try {
      return gatewayIdentityOf(deps, studio.gatewayRuntimeId(), req, { required: false });
    } catch {
      return undefined;
    }
  })();
  if (identity) return identity.userId === null ? undefined : { userId: identity.userId, access: identity.access };
  const apiKey = req.get('x-api-key');
  if (!apiKey || !studio.platformKeys) return undefined;
  const viewer = await studio.platformKeys(apiKey).catch(() => undefined);
  if (viewer?.kind !== 'api-key') return undefined;
  const may = (access: DeploymentAccess) => agentContext({ ...deps, viewer }, studio.deploymentId, { access }).then(() => true, () => false);
  if (await may('write')) return { userId: viewer.userId, access: 'write' };
  return (await may('read')) ? { userId: viewer.userId, access: 'read' } : undefined;
}

/**
 * Authenticates each request with the deployment's custom auth (authenticateCaller). Refusals go to
 * customAuthErrors. The platform's own calls on the deployment's resources (its GraphQL, signed by
 * the gateway) are the platform's, not the project's users' (platformCallRoute takes no end user).
 */
export function customAuthentication(deps: Deps, auth: CustomAuth, studio: StudioCredential): RequestHandler {
  return async (req, _res, next) => {
    if (isPublic(req) || (req.method === 'POST' && req.path === AGENT_CALL_PATH)) return next();
    // The body is not parsed yet, so a JSON-RPC call counts as a write for the studio's key here.
    req.customAuth = await authenticateCaller(deps, auth, studio, req, requestAccess(req));
    next();
  };
}

/** Answers a handler's refusal with its own status, message and headers (plain text, as the agent server's errors). */
export const customAuthErrors: ErrorRequestHandler = (error, _req, res, next) => {
  if (!(error instanceof AuthRefusal) || res.headersSent) return next(error);
  res.status(error.status).set(error.headers).type('text/plain').send(error.message);
};

/** The service context of a call acting for `identity` under the deployment's custom auth, for the services' checks. */
export const withCustomAuth = (ctx: AgentServerContext, auth: CustomAuth, identity: AuthIdentity | undefined): AuthorizedContext =>
  identity ? { ...ctx, auth: { ...identity, handlers: auth } } : ctx;

/** Puts the request's identity into its service context (after the router made req.agent). */
export function attachCustomAuth(auth: CustomAuth): RequestHandler {
  return (req, _res, next) => {
    req.agent = withCustomAuth(req.agent, auth, req.customAuth);
    next();
  };
}
