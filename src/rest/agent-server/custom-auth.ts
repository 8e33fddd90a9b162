// Custom auth at the agent server's door: when the deployment declares `auth`, its `authenticate`
// handler decides who each request is (every request but the public pages), or the request is the
// studio's: `x-auth-scheme: langsmith` with a platform credential that may use this deployment, unless
// `disable_studio_auth`. Services then authorise each action with the identity found here
// (services/custom-auth).
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import type { Deps } from '../../services/context.js';
import { type AuthIdentity, type AuthorizedContext, AuthRefusal, type CustomAuth } from '../../services/custom-auth/custom-auth.js';
import { agentContext } from '../../services/deployments/deployments.service.js';
import { AGENT_CALL_PATH } from '../../services/deployments/agent-operations.js';
import { authenticateApiKey } from '../../services/tenancy/tenancy.service.js';
import { requestAccess } from './access.js';
import { verifiedGatewayIdentity } from './gateway-identity.js';

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

/** The request as the handler's fetch `Request`: method, url and headers (the body is left to the routes). */
function fetchRequest(req: Request): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return new globalThis.Request(`${req.protocol}://${req.get('host') ?? 'localhost'}${req.originalUrl}`, { method: req.method, headers });
}

/**
 * How a studio request's credential is checked: where the platform's keys are in reach (`serve`, the
 * platform's own mount), a key of the workspace of the deployment the request is for; in a deployed
 * agent server, behind the gateway, the caller the gateway signed for (it checked their key and role).
 */
type StudioCredential = { deploymentIdOf(req: Request): string } | { gatewayRuntimeId(): string };

async function checkStudioCredential(deps: Deps, studio: StudioCredential, req: Request): Promise<void> {
  if ('gatewayRuntimeId' in studio) {
    try {
      verifiedGatewayIdentity(deps, studio.gatewayRuntimeId(), req);
    } catch {
      throw new AuthRefusal(401, 'Studio access needs a valid API key of the deployment’s workspace (X-Api-Key).');
    }
    return;
  }
  const viewer = await authenticateApiKey(deps, req.get('x-api-key'), undefined).catch(() => {
    throw new AuthRefusal(401, 'Studio access needs a valid API key of the deployment’s workspace (X-Api-Key).');
  });
  // As at the deployment's url: a workspace viewer's key reads (the body is not parsed yet, so a
  // JSON-RPC call counts as a write here).
  await agentContext({ ...deps, viewer }, studio.deploymentIdOf(req), { access: requestAccess(req) }).catch(() => {
    throw new AuthRefusal(403, 'This API key may not make this request to this deployment.');
  });
}

/**
 * Authenticates each request with the deployment's custom auth; the studio's scheme with a credential
 * `studio` accepts. Refusals go to customAuthErrors. The platform's own calls on the deployment's
 * resources (its GraphQL, signed by the gateway) are the platform's, not the project's users'.
 */
export function customAuthentication(deps: Deps, auth: CustomAuth, studio: StudioCredential): RequestHandler {
  return async (req, _res, next) => {
    if (isPublic(req) || ('gatewayRuntimeId' in studio && req.method === 'POST' && req.path === AGENT_CALL_PATH)) return next();
    if (!auth.disableStudioAuth && req.get('x-auth-scheme') === 'langsmith') {
      await checkStudioCredential(deps, studio, req);
      req.customAuth = STUDIO_USER;
      return next();
    }
    req.customAuth = await auth.authenticate(fetchRequest(req));
    next();
  };
}

/** Answers a handler's refusal with its own status, message and headers (plain text, as the agent server's errors). */
export const customAuthErrors: ErrorRequestHandler = (error, _req, res, next) => {
  if (!(error instanceof AuthRefusal) || res.headersSent) return next(error);
  res.status(error.status).set(error.headers).type('text/plain').send(error.message);
};

/** Puts the request's identity into its service context (after the router made req.agent), for the services' checks. */
export function attachCustomAuth(auth: CustomAuth): RequestHandler {
  return (req, _res, next) => {
    if (req.customAuth) req.agent = { ...req.agent, auth: { ...req.customAuth, handlers: auth } } as AuthorizedContext;
    next();
  };
}
