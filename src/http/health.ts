// GET /ok on every surface: 200 while the process and its database answer, 503 otherwise, so a load
// balancer takes an instance whose database went away out of rotation until it is back.
import type { RequestHandler } from 'express';
import type { Deps } from '../context.js';
import { databaseReachable } from './health.service.js';

export function healthCheck(deps: Pick<Deps, 'db'>): RequestHandler {
  return async (_req, res) => {
    if (await databaseReachable(deps)) res.json({ ok: true });
    else res.status(503).json({ ok: false, detail: 'The database is not reachable.' });
  };
}
