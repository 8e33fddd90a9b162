// GET /ok on every surface: 200 while the process and its database answer, 503 otherwise, so a load
// balancer takes an instance whose database went away out of rotation until it is back.
import type { RequestHandler } from 'express';
import type { Deps } from '../context.js';
import { notReadyBecause } from './health.service.js';

export function healthCheck(deps: Pick<Deps, 'db' | 'events' | 'draining'>): RequestHandler {
  return async (_req, res) => {
    // Stopping: a balancer takes it out of rotation while it still serves what it is sent.
    const detail = deps.draining ? 'Shutting down.' : await notReadyBecause(deps);
    if (detail) res.status(503).json({ ok: false, detail });
    else res.json({ ok: true });
  };
}
