// Cross-origin requests (CORS) at an agent server, as langgraph.json's `http.cors` configures them on
// the hosted Agent Server and the reference server (`langgraph dev`): which browser pages of other
// origins may call it, with which methods and headers, and which answer headers their scripts read.
// Without `http.cors`, any origin may, as on the reference server: a browser page then holds no more
// than the credentials it sends (a platform key, or what the deployment's own auth accepts).
import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { AppError } from '../errors.js';
import { RUNTIME_DEPLOYMENT_URL_HEADER } from '../contracts/gateway-protocol.js';
import type { CorsOptions } from '../contracts/graph-config.js';

/** What a policy allows, and its middleware. */
export type CorsPolicy = {
  /** Whether a page of `origin` may call the server. */
  allows(origin: string): boolean;
  /**
   * Why a request from a page of another origin is refused, if it is: an origin the policy does not
   * allow, asking for more than to read (see refusedCrossOrigin); undefined otherwise.
   */
  refusal(req: IncomingMessage): string | undefined;
  /** Answers preflights and adds the policy's headers to every answer to an allowed origin. */
  middleware: RequestHandler;
};

// The reference server's methods when `allow_methods` names none.
const DEFAULT_METHODS = 'GET, HEAD, PUT, POST, DELETE, PATCH';
// What the SDK's Client reads of an answer: a run's ids (Content-Location), where a stream resumes
// (Location), and search pages (X-Pagination-*). Exposed whatever `expose_headers` says, as the
// reference adds the first of them to a list that lacks them.
const SDK_READ_HEADERS = ['Content-Location', 'Location', 'X-Pagination-Total', 'X-Pagination-Next'];
// The platform key's header: a page calling a deployment through the platform's gateway sends it
// (the SDK's `apiKey`), so an origin the policy allows may send it whatever `allow_headers` lists.
const PLATFORM_KEY_HEADER = 'X-Api-Key';
// Methods that only read: a page of an origin the policy refuses may still send them (its script
// cannot read the answer).
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether a request is a browser's CORS preflight: an OPTIONS that names its origin and the method it asks for. */
export const isCorsPreflight = (req: IncomingMessage): boolean =>
  req.method === 'OPTIONS' && typeof req.headers.origin === 'string' && typeof req.headers['access-control-request-method'] === 'string';

/** The policy of `http.cors` (undefined: the default, any origin). */
export function corsPolicy(options: CorsOptions = {}): CorsPolicy {
  const origins = new Set(options.allowOrigins ?? []);
  const pattern = options.allowOriginRegex === undefined ? undefined : new RegExp(`^(?:${options.allowOriginRegex})$`);
  const anyOrigin = origins.has('*') || (options.allowOrigins === undefined && pattern === undefined);
  const allows = (origin: string) => anyOrigin || origins.has(origin) || (pattern?.test(origin) ?? false);
  const credentials = options.allowCredentials === true;
  // `*` answers any origin alike, and lets browsers cache one answer for all; an answer to a request
  // with credentials must name its origin (browsers refuse `*` there).
  const echoesOrigin = !anyOrigin || credentials;
  const methods = options.allowMethods?.includes('*') ? undefined : (options.allowMethods?.join(', ') ?? DEFAULT_METHODS);
  const listedHeaders = options.allowHeaders?.includes('*') ? undefined : options.allowHeaders;
  const headers = listedHeaders && withHeader(listedHeaders, PLATFORM_KEY_HEADER).join(', ');
  const exposed = [...SDK_READ_HEADERS, ...(options.exposeHeaders ?? [])].filter((name, i, all) => all.findIndex((other) => other.toLowerCase() === name.toLowerCase()) === i).join(', ');

  const allowOrigin = (res: Response, origin: string) => {
    if (echoesOrigin) {
      res.vary('Origin');
      res.setHeader('Access-Control-Allow-Origin', origin);
    } else res.setHeader('Access-Control-Allow-Origin', '*');
    if (credentials) res.setHeader('Access-Control-Allow-Credentials', 'true');
  };
  const refusal = (req: IncomingMessage) => refusedCrossOrigin(req, allows);

  const middleware: RequestHandler = (req, res, next) => {
    const origin = req.headers.origin;
    if (typeof origin !== 'string') return next();
    if (isCorsPreflight(req)) {
      if (echoesOrigin) res.vary('Origin');
      if (!allows(origin)) throw AppError.forbidden(notAllowed(origin));
      allowOrigin(res, origin);
      res.setHeader('Access-Control-Allow-Methods', methods ?? String(req.headers['access-control-request-method']));
      const asked = req.headers['access-control-request-headers'];
      if (headers) res.setHeader('Access-Control-Allow-Headers', headers);
      else if (asked) {
        res.vary('Access-Control-Request-Headers');
        res.setHeader('Access-Control-Allow-Headers', asked);
      }
      if (options.maxAge !== undefined) res.setHeader('Access-Control-Max-Age', String(options.maxAge));
      res.status(204).end();
      return;
    }
    if (echoesOrigin) res.vary('Origin');
    if (allows(origin)) {
      allowOrigin(res, origin);
      res.setHeader('Access-Control-Expose-Headers', exposed);
      return next();
    }
    const refused = refusal(req);
    if (refused) throw AppError.forbidden(refused);
    next();
  };
  return { allows, refusal, middleware };
}

const notAllowed = (origin: string) => `Origin ${origin} is not allowed by this server's CORS policy (langgraph.json http.cors).`;

/**
 * Refuses a request from a page of an origin the policy does not allow that asks for more than to
 * read. A browser sends some such requests without a preflight (a form, a body labelled text/plain,
 * which the agent server reads as JSON) or none at all (a WebSocket), and the policy would otherwise
 * only hide the answer from the page, not stop what it asked for. A page of the server's own origin
 * (as its caller reached it: its Host, or behind the platform's gateway the deployment's url) is no
 * other origin.
 */
function refusedCrossOrigin(req: IncomingMessage, allows: (origin: string) => boolean): string | undefined {
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || allows(origin)) return undefined;
  if (READS.has(req.method ?? 'GET') && !isUpgrade(req)) return undefined;
  const host = hostOf(origin);
  const reached = [req.headers.host, hostOf(req.headers[RUNTIME_DEPLOYMENT_URL_HEADER])];
  if (host !== undefined && reached.includes(host)) return undefined;
  return notAllowed(origin);
}

const isUpgrade = (req: IncomingMessage) => typeof req.headers.upgrade === 'string';

function hostOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

function withHeader(names: string[], name: string): string[] {
  return names.some((listed) => listed.toLowerCase() === name.toLowerCase()) ? names : [...names, name];
}
