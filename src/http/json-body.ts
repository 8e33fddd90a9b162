// The one JSON body parser of the REST surfaces and /graphql: express.json within the body limit,
// plus the nesting limit and the strings PostgreSQL refuses (src/limits/json.ts), so every surface
// answers them the same way, each in its own error dialect.
import express, { type Request, type RequestHandler } from 'express';
import type { Config } from '../config.js';
import { assertJsonDepth, assertStorableText, mayHoldUnstorableBytes } from '../limits/json.js';

const needsTextCheck = new WeakSet<Request>();

/** Parses JSON bodies (`strict: false` also accepts top-level scalars, as the agent server does). */
export function jsonBody(config: Pick<Config, 'bodyLimit' | 'jsonMaxDepth'>, options: { strict?: boolean } = {}): RequestHandler[] {
  return [
    express.json({
      limit: config.bodyLimit,
      strict: options.strict ?? true,
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
