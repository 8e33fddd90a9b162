// The one JSON body parser of the REST surfaces and /graphql: express.json within the body limit,
// plus the nesting limit and the strings PostgreSQL refuses (src/limits/json.ts), so every surface
// answers them the same way, each in its own error dialect.
import express, { type Request, type RequestHandler } from 'express';
import type { Config } from '../../config.js';
import { assertJsonDepth, assertStorableText, mayHoldUnstorableBytes } from '../../limits/json.js';

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
