// Feedback on trace runs, the paths the langsmith SDK calls (createFeedback, readFeedback,
// updateFeedback, deleteFeedback, listFeedback, createPresignedFeedbackToken,
// listPresignedFeedbackTokens), and the url of a presigned token, which takes feedback without an API
// key (GET with query parameters, or POST with a JSON body, from any origin: browser apps call it).
// Served at the root and under /api/v1 beside the traces router; errors are LangSmith's {detail}.
//
// Like the traces router, it matches only its own paths and passes everything else on.
import { type ErrorRequestHandler, type Request, type RequestHandler, Router } from 'express';
import { publicOrigin } from '../../http/public-origin.js';
import { z } from 'zod';
import type { Deps } from '../../context.js';
import { AppError } from '../../errors.js';
import { errorHandler } from '../../http/errors.js';
import { enteredFor } from '../../http/entered-for.js';
import { jsonBody } from '../../http/json-body.js';
import { parseQuery } from '../../http/validate.js';
import * as feedback from '../services/traces/feedback.service.js';
import type { FeedbackCreateInput, FeedbackTokenCreateInput } from '../services/traces/traces.schemas.js';
import { authenticate, authenticateIngest } from './auth.js';
import { presentFeedback, presentFeedbackToken } from './traces.presenters.js';
import { camelCaseKeys } from './traces.routes.js';

export const FeedbackListQuery = z.object({
  run: z.union([z.string(), z.array(z.string())]).optional(),
  key: z.union([z.string(), z.array(z.string())]).optional(),
  source: z.union([z.string(), z.array(z.string())]).optional(),
  limit: z.string().optional(),
  offset: z.string().optional(),
});

export const FeedbackTokenListQuery = z.object({ run_id: z.string(), limit: z.string().optional(), offset: z.string().optional() });

/** A JSON object body, or VALIDATION_FAILED naming the body. */
function objectBody(req: Request): Record<string, unknown> {
  const body: unknown = req.body ?? {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('VALIDATION_FAILED', 'body: expected a JSON object', [{ loc: ['body'], msg: 'expected a JSON object', type: 'model_attributes_type' }]);
  }
  return body as Record<string, unknown>;
}

export function feedbackRouter(deps: Deps): Router {
  const router = Router();
  const auth = authenticate(deps);
  const json = jsonBody(deps.config);
  /** Where this request reached the API (its origin, or PUBLIC_URL, and the /api/v1 mount if used): a token's url starts there. */
  const apiBase = (req: Request) => `${publicOrigin(req, deps.config.publicUrl)}${req.baseUrl}`;

  router.post('/feedback', auth, ...json, async (req, res) => {
    res.json(presentFeedback(await feedback.createFeedback(req.ctx, camelCaseKeys(objectBody(req)) as FeedbackCreateInput)));
  });

  router.get('/feedback', auth, async (req, res) => {
    const query = parseQuery(FeedbackListQuery, req);
    res.json((await feedback.listFeedback(req.ctx, query)).map(presentFeedback));
  });

  // A deployment's trace key may make tokens too (for the runs of its own project): its agent server
  // answers a run's feedback_keys with their urls.
  router.post('/feedback/tokens', authenticateIngest(deps), ...json, async (req, res) => {
    const token = await feedback.createFeedbackToken(req.ctx, camelCaseKeys(objectBody(req)) as FeedbackTokenCreateInput, apiBase(req));
    res.json(presentFeedbackToken(token));
  });

  router.get('/feedback/tokens', auth, async (req, res) => {
    const query = parseQuery(FeedbackTokenListQuery, req);
    const tokens = await feedback.listFeedbackTokens(req.ctx, query.run_id, { limit: Number(query.limit ?? 100), offset: Number(query.offset ?? 0) });
    res.json(tokens.map(presentFeedbackToken));
  });

  router.use(feedbackTokenUrlRouter(deps));

  router.get('/feedback/:id', auth, async (req, res) => {
    res.json(presentFeedback(await feedback.getFeedback(req.ctx, String(req.params.id))));
  });

  router.patch('/feedback/:id', auth, ...json, async (req, res) => {
    res.json(presentFeedback(await feedback.updateFeedback(req.ctx, String(req.params.id), objectBody(req))));
  });

  router.delete('/feedback/:id', auth, async (req, res) => {
    await feedback.deleteFeedback(req.ctx, String(req.params.id));
    res.json({});
  });

  // Only errors of this router's own routes (req.route is set once one matched) take its dialect.
  const errors = errorHandler('fastapi', deps.logger);
  router.use(((error, req, res, next) => (req.route ? errors(error, req, res, next) : next(error))) as ErrorRequestHandler);
  return router;
}

/**
 * A presigned feedback token's url (GET with query parameters, POST with a JSON body): the token is
 * the credential, no API key is read, and any origin may call it, as LangSmith's. Part of
 * feedbackRouter; `serve` mounts it alone beside its agent server, whose runs' feedback urls it answers.
 */
export function feedbackTokenUrlRouter(deps: Deps): RequestHandler {
  const router = Router();
  // A token's url is called from pages and scripts that may not label their JSON.
  const lenientJson = jsonBody(deps.config, { lenient: true });
  const anyOrigin: RequestHandler = (_req, res, next) => {
    res.set('Access-Control-Allow-Origin', '*');
    next();
  };
  // A browser's preflight of a JSON POST.
  router.use('/feedback/tokens/:token', (req, res, next) => {
    if (req.method !== 'OPTIONS') return next();
    res.set({
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
      'Access-Control-Allow-Headers': 'content-type',
      'Access-Control-Max-Age': '600',
    });
    res.status(204).end();
  });
  router.get('/feedback/tokens/:token', anyOrigin, async (req, res) => {
    const query = req.query as Record<string, unknown>;
    const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
    await feedback.recordFeedbackWithToken(deps, String(req.params.token), {
      score: text('score'),
      value: text('value'),
      comment: text('comment'),
      correction: text('correction'),
    });
    res.json({});
  });
  router.post('/feedback/tokens/:token', anyOrigin, ...lenientJson, async (req, res) => {
    await feedback.recordFeedbackWithToken(deps, String(req.params.token), objectBody(req));
    res.json({});
  });

  const errors = errorHandler('fastapi', deps.logger);
  router.use(((error, req, res, next) => (req.route ? errors(error, req, res, next) : next(error))) as ErrorRequestHandler);
  return enteredFor(/^\/feedback\/tokens\//i, router);
}
