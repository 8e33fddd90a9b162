// The one JSON body parser of the REST surfaces and /graphql: express.json within the body limit,
// plus the nesting limit and the strings PostgreSQL refuses (src/limits/json.ts), so every surface
// answers them the same way, each in its own error dialect.
import express, { type Request, type RequestHandler } from 'express';
import type { Config } from '../config.js';
import { assertJsonDepth, assertStorableText, mayHoldUnstorableBytes } from '../limits/json.js';

const needsTextCheck = new WeakSet<Request>();

/**
 * Whether a body of this Content-Type is read as JSON: JSON's own type; with `lenient` also a body
 * labelled text/plain, as the reference agent server reads it (a proxy that forwards the body as a
 * string sends JSON so: fetch labels it `text/plain;charset=UTF-8`), or not labelled at all (curl
 * with -d and no header), which the reference would run as an empty body.
 */
export function readsAsJson(contentType: string | undefined, lenient: boolean): boolean {
  const type = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (lenient && (type === '' || type === 'text/plain'));
}

/**
 * Parses JSON bodies (`strict: false` also accepts top-level scalars, as the agent server does;
 * `lenient`: also those labelled text/plain or not labelled, see readsAsJson).
 */
export function jsonBody(config: Pick<Config, 'bodyLimit' | 'jsonMaxDepth'>, options: { strict?: boolean; lenient?: boolean } = {}): RequestHandler[] {
  const lenient = options.lenient ?? false;
  return [
    express.json({
      limit: config.bodyLimit,
      strict: options.strict ?? true,
      type: (req) => readsAsJson(req.headers['content-type'], lenient),
      verify: (req, _res, body) => {
        assertJsonDepth(body, config.jsonMaxDepth);
        if (mayHoldUnstorableBytes(body)) needsTextCheck.add(req as Request);
      },
    }),
    (req, _res, next) => {
      if (needsTextCheck.has(req)) assertStorableText(req.body);
      next();
    },
  ];
}

/**
 * Sets `req.body` from JSON bytes already read off the request (by a project's `http.app` middleware,
 * which may also have changed them), within the parser's limits; errors as the parser's.
 */
export function setJsonBody(req: Request, bytes: Buffer, config: Pick<Config, 'bodyLimitBytes' | 'jsonMaxDepth'>): void {
  if (bytes.length > config.bodyLimitBytes) throw Object.assign(new Error('request entity too large'), { status: 413, type: 'entity.too.large' });
  assertJsonDepth(bytes, config.jsonMaxDepth);
  let body: unknown;
  try {
    body = bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined;
  } catch {
    throw Object.assign(new Error('invalid JSON'), { status: 400, type: 'entity.parse.failed' });
  }
  if (mayHoldUnstorableBytes(bytes)) assertStorableText(body);
  req.body = body;
}
