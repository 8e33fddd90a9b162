// langgraph.json `auth`: the project's `Auth` object (`@langchain/langgraph-sdk/auth`), imported where
// deployment code runs and called by the agent server for each request. Its handlers are user code:
// an HTTPException they throw answers the caller with its status and message; anything else they
// throw, or return, that is not an answer is logged and refuses the request (401 for authenticate,
// 403 for `on`), never a 500.
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { GraphConfig } from '../../contracts/graph-config.js';
import { type AuthFilter, type AuthIdentity, AuthRefusal, type AuthResource, type AuthUser, type CustomAuth } from '../services/custom-auth/custom-auth.js';

type Json = Record<string, unknown>;
type Handler = (argument: unknown) => unknown;
type HandlerCache = { authenticate?: (request: Request) => unknown; callbacks?: Record<string, Handler> };

/** An HTTPException of the SDK (or of Hono, which the SDK's mirrors): a status and optional headers. */
function asHttpException(error: unknown): { status: number; message: string; headers: Record<string, string> } | undefined {
  const candidate = error as { status?: unknown; message?: unknown; headers?: unknown } | null;
  if (typeof candidate !== 'object' || candidate === null || typeof candidate.status !== 'number' || candidate.status < 400 || candidate.status > 599) return undefined;
  const headers: Record<string, string> = {};
  if (candidate.headers instanceof Headers) candidate.headers.forEach((value, key) => (headers[key] = value));
  else if (typeof candidate.headers === 'object' && candidate.headers !== null) {
    for (const [key, value] of Object.entries(candidate.headers)) if (typeof value === 'string') headers[key] = value;
  }
  return { status: candidate.status, message: typeof candidate.message === 'string' && candidate.message ? candidate.message : 'Unauthorized', headers };
}

/** The user as the SDK's `BaseUser`: a string is an identity; an object needs a string `identity`. */
function normaliseUser(returned: unknown): AuthIdentity | undefined {
  if (typeof returned === 'string' && returned) {
    return { user: { identity: returned, display_name: returned, is_authenticated: true, permissions: [] }, permissions: [] };
  }
  const object = returned as Json | null;
  if (typeof object !== 'object' || object === null || typeof object.identity !== 'string') return undefined;
  const permissions = Array.isArray(object.permissions) ? object.permissions.filter((p): p is string => typeof p === 'string') : [];
  const user: AuthUser = {
    ...object,
    identity: object.identity,
    display_name: typeof object.display_name === 'string' ? object.display_name : object.identity,
    is_authenticated: typeof object.is_authenticated === 'boolean' ? object.is_authenticated : true,
    permissions,
  };
  return { user, permissions };
}

const OPERATORS = new Set(['$eq', '$contains']);

/** A filter as handlers may return it: each value a JSON value or one `$eq` / `$contains` condition. */
function isFilter(value: unknown): value is AuthFilter {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((condition) => {
    if (condition === null || typeof condition !== 'object' || Array.isArray(condition)) return condition !== undefined;
    const keys = Object.keys(condition);
    return keys.length === 1 && OPERATORS.has(keys[0]!) && (condition as Json)[keys[0]!] !== undefined;
  });
}

/** Wraps an `Auth` object's handlers as the agent server calls them. */
function customAuthOf(handlers: HandlerCache, options: { disableStudioAuth: boolean; allowPlatformKeys: boolean; logger: Logger }): CustomAuth {
  const { logger } = options;
  const callbacks = handlers.callbacks ?? {};
  return {
    disableStudioAuth: options.disableStudioAuth,
    allowPlatformKeys: options.allowPlatformKeys,

    async authenticate(request) {
      // As on the reference server: without an authenticate handler no request has a user.
      if (!handlers.authenticate) return undefined;
      let returned: unknown;
      try {
        returned = await handlers.authenticate(request);
      } catch (error) {
        const http = asHttpException(error);
        if (http) throw new AuthRefusal(http.status, http.message, http.headers);
        logger.warn({ err: error }, 'custom auth: the authenticate handler threw; the request is refused (401)');
        throw new AuthRefusal(401, 'Unauthorized');
      }
      const identity = normaliseUser(returned);
      if (!identity) {
        logger.warn('custom auth: the authenticate handler returned neither a string nor an object with a string `identity`; the request is refused (401)');
        throw new AuthRefusal(401, 'Unauthorized');
      }
      return identity;
    },

    async authorize(identity, resource: AuthResource, action, value) {
      const key = [`${resource}:${action}`, resource, `*:${action}`, '*'].find((candidate) => callbacks[candidate]);
      if (!key) return undefined;
      let returned: unknown;
      try {
        returned = await callbacks[key]!({ event: `${resource}:${action}`, resource, action, value, user: identity.user, permissions: identity.permissions });
      } catch (error) {
        const http = asHttpException(error);
        if (http) throw new AuthRefusal(http.status, http.message, http.headers);
        logger.warn({ err: error, event: `${resource}:${action}`, handler: key }, 'custom auth: an `on` handler threw; the request is refused (403)');
        throw new AuthRefusal(403, 'Forbidden');
      }
      if (returned === undefined || returned === null || returned === true) return undefined;
      if (returned === false) throw new AuthRefusal(403, 'Forbidden');
      if (!isFilter(returned)) {
        logger.warn({ event: `${resource}:${action}`, handler: key }, 'custom auth: an `on` handler returned something other than a boolean or a filter ({key: value | {$eq} | {$contains}}); the request is refused (403)');
        throw new AuthRefusal(403, 'Forbidden');
      }
      return Object.keys(returned).length ? returned : undefined;
    },
  };
}

/**
 * Imports the config's `auth.path` export, if it names one; throws naming the file when it cannot be
 * imported or is not an `Auth` object, so that a build that loads the project fails on it.
 */
export async function loadCustomAuth(config: Pick<GraphConfig, 'auth'>, logger: Logger): Promise<CustomAuth | undefined> {
  if (!config.auth) return undefined;
  const { file, exportName } = config.auth;
  let exported: unknown;
  try {
    exported = ((await import(pathToFileURL(file).href)) as Record<string, unknown>)[exportName];
  } catch (error) {
    throw new Error(`Could not load the auth "${exportName}" from ${file}: ${(error as Error).message}`, { cause: error });
  }
  const handlers = (exported as { '~handlerCache'?: HandlerCache } | undefined)?.['~handlerCache'];
  if (typeof handlers !== 'object' || handlers === null) {
    throw new Error(`The auth "${exportName}" of ${file} is not an Auth object of @langchain/langgraph-sdk/auth`);
  }
  return customAuthOf(handlers, { disableStudioAuth: config.auth.disableStudioAuth, allowPlatformKeys: config.auth.allowPlatformKeys, logger });
}
