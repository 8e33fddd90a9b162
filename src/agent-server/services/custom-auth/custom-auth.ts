// Custom auth (langgraph.json `auth`) as the agent server's services see it: who a request acts for,
// the project's `on` handlers behind one call (they are deployment code, loaded by the runtime, so
// the services only hold this interface), and the filters those handlers return, applied to the
// metadata of threads, assistants, crons and runs so that another user's resource is never seen.
import { AppError, type ErrorCode } from '../../../errors.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';

type Json = Record<string, unknown>;

/** The user an `authenticate` handler returned, normalised as the SDK's `BaseUser` (extra fields kept). */
export type AuthUser = { identity: string; display_name: string; is_authenticated: boolean; permissions: string[] } & Json;

/** Who a request acts for. */
export type AuthIdentity = { user: AuthUser; permissions: string[] };

export type AuthResource = 'threads' | 'assistants' | 'crons' | 'store';

/**
 * What an `on` handler may return besides allowing: metadata that a resource must have, `{key:
 * value}` and `{key: {$eq: value}}` for an equal value, `{key: {$contains: value}}` for an array
 * holding it (or holding every one of an array of values).
 */
export type AuthFilter = Record<string, unknown>;

/** The project's `Auth` handlers, loaded where deployment code runs; the agent server calls them per request. */
export interface CustomAuth {
  /** `auth.disable_studio_auth`: the studio's `x-auth-scheme: langsmith` with a platform key is not accepted. */
  readonly disableStudioAuth: boolean;
  /**
   * `auth.allow_langsmith_api_keys`: a platform API key of the deployment's workspace is a credential
   * beside the project's own (its user is the request's, as a platform user); other requests still
   * go to the `authenticate` handler.
   */
  readonly allowPlatformKeys: boolean;
  /** Runs the `authenticate` handler (undefined: the project has none); throws AuthRefusal (its HTTPException, else 401). */
  authenticate(request: Request): Promise<AuthIdentity | undefined>;
  /**
   * Runs the most specific `on` handler of `resource:action` (`resource:action`, `resource`,
   * `*:action`, `*`). `value` is the handler's to change in place (metadata, a store namespace).
   * Undefined: allowed without a filter. Throws AuthRefusal to deny (false, its HTTPException, else 403).
   */
  authorize(identity: AuthIdentity, resource: AuthResource, action: string, value: Json): Promise<AuthFilter | undefined>;
}

/** A request's custom auth: its identity and the handlers that decide what it may do. */
type RequestAuth = AuthIdentity & { handlers: CustomAuth };

/** An agent-server call, with the caller's identity when the deployment declares custom auth. */
export type AuthorizedContext = AgentServerContext & { auth?: RequestAuth };

const CODES: Record<number, ErrorCode> = { 400: 'BAD_REQUEST', 401: 'UNAUTHENTICATED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 409: 'CONFLICT', 413: 'PAYLOAD_TOO_LARGE', 422: 'UNPROCESSABLE' };

/** A custom-auth handler's refusal: the status, message and headers of its HTTPException (or 401/403). */
export class AuthRefusal extends AppError {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(CODES[status] ?? (status >= 500 ? 'UNAVAILABLE' : 'BAD_REQUEST'), message);
    this.name = 'AuthRefusal';
  }
}

/** The filter the caller's handler sets for `resource:action` (undefined without custom auth); throws AuthRefusal to deny. */
export async function authorize(ctx: AuthorizedContext, resource: AuthResource, action: string, value: Json): Promise<AuthFilter | undefined> {
  if (!ctx.auth) return undefined;
  return ctx.auth.handlers.authorize(ctx.auth, resource, action, value);
}

/**
 * The filter as one jsonb document that the metadata column must contain (`metadata @> $n::jsonb`):
 * equality of a string is containment of it, and `$contains` is containment of an array.
 */
export function filterDocument(filter: AuthFilter | undefined): string | undefined {
  if (!filter || !Object.keys(filter).length) return undefined;
  const document: Json = {};
  for (const [key, condition] of Object.entries(filter)) {
    if (condition !== null && typeof condition === 'object' && !Array.isArray(condition)) {
      const { $eq, $contains } = condition as { $eq?: unknown; $contains?: unknown };
      document[key] = $eq !== undefined ? $eq : Array.isArray($contains) ? $contains : [$contains];
    } else {
      document[key] = condition;
    }
  }
  return JSON.stringify(document);
}

/** Whether metadata passes a filter (the same rule as filterDocument, for one row already read). */
export function matchesFilter(metadata: Json | null | undefined, filter: AuthFilter | undefined): boolean {
  if (!filter) return true;
  for (const [key, condition] of Object.entries(filter)) {
    const actual = metadata?.[key];
    if (condition !== null && typeof condition === 'object' && !Array.isArray(condition)) {
      const { $eq, $contains } = condition as { $eq?: unknown; $contains?: unknown };
      if ($eq !== undefined) {
        if (!sameJson(actual, $eq)) return false;
      } else {
        if (!Array.isArray(actual)) return false;
        const wanted = Array.isArray($contains) ? $contains : [$contains];
        if (!wanted.every((item) => actual.some((held) => sameJson(held, item)))) return false;
      }
    } else if (!sameJson(actual, condition)) {
      return false;
    }
  }
  return true;
}

const sameJson = (a: unknown, b: unknown) => a === b || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b));

/**
 * The user as a run's graph sees it in `config.configurable` (`langgraph_auth_user`, its id and
 * permissions), as LangGraph Platform passes it; empty without custom auth. Overrides whatever the
 * caller put under those keys.
 */
export function authConfigurable(ctx: AuthorizedContext): Json {
  if (!ctx.auth) return {};
  return { langgraph_auth_user: ctx.auth.user, langgraph_auth_user_id: ctx.auth.user.identity, langgraph_auth_permissions: ctx.auth.permissions };
}

/** Handlers that allow everything: the platform's own callers of a deployment without custom auth. */
const PLATFORM_ROLES_ONLY: CustomAuth = {
  disableStudioAuth: false,
  allowPlatformKeys: false,
  authenticate: async () => undefined,
  authorize: async () => undefined,
};

/**
 * The context of a call by a platform user through the gateway, at a deployment that declares no
 * custom auth: they may do what their role allowed (the gateway checked it), and the runs they start
 * carry them as the run's user.
 */
export function platformCaller(ctx: AgentServerContext, userId: string): AuthorizedContext {
  const user: AuthUser = { kind: 'PlatformUser', identity: userId, display_name: userId, is_authenticated: true, permissions: [] };
  return { ...ctx, auth: { user, permissions: [], handlers: PLATFORM_ROLES_ONLY } };
}
