// One authentication for every REST surface: X-Api-Key (any case) and X-Tenant-Id, resolved by the
// tenancy service to the viewer that services receive.
import type { NextFunction, Request, Response } from 'express';
import type { Deps, ServiceContext } from '../../context.js';
import { authenticateApiKey, authenticateIngestKey } from '../services/tenancy/authentication.service.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by `authenticate`: the service context of this request. */
      ctx: ServiceContext;
    }
  }
}

export function authenticate(deps: Deps) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const viewer = await authenticateApiKey(deps, req.get('x-api-key'), req.get('x-tenant-id'));
    req.ctx = { ...deps, viewer };
    next();
  };
}

/** `authenticate` for the trace ingestion routes alone: they also accept a deployment's trace key. */
export function authenticateIngest(deps: Deps) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const viewer = await authenticateIngestKey(deps, req.get('x-api-key'), req.get('x-tenant-id'));
    req.ctx = { ...deps, viewer };
    next();
  };
}
