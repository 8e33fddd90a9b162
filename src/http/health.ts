// GET /ok on every surface: 200 while the process and each dependency answer, 503 otherwise, so a load
// balancer takes an instance whose database went away out of rotation until it is back. The body says
// which dependency is not ok (`checks`), beside the `ok` the reference server answers.
import type { RequestHandler } from 'express';
import type { Deps } from '../context.js';
import { checkHealth } from './health.service.js';

export function healthCheck(deps: Pick<Deps, 'db' | 'events' | 'draining'>): RequestHandler {
  return async (_req, res) => {
    const report = await checkHealth(deps);
    // Stopping: a balancer takes it out of rotation while it still serves what it is sent.
    if (deps.draining) res.status(503).json({ ...report, ok: false, detail: 'Shutting down.' });
    else res.status(report.ok ? 200 : 503).json(report);
  };
}
