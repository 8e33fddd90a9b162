// Control-plane REST paths under /v2/deployments (FastAPI dialect); also answered under /api-host.
import { type RequestHandler, Router } from 'express';
import type { Deps } from '../../context.js';
import * as deployments from '../services/deployments/deployments.service.js';
import * as revisions from '../services/deployments/revisions.service.js';
import { presentDeployment, presentRevision, presentRevisionLog } from './deployments.presenters.js';
import { authenticate } from './auth.js';
import { AppError } from '../../errors.js';
import { errorHandler, notFoundHandler } from '../../http/errors.js';

export function deploymentsRouter(deps: Deps): Router {
  const router = Router();
  router.use('/deployments', authenticate(deps));

  router.post('/deployments', async (req, res) => {
    res.status(201).json(presentDeployment(await deployments.createDeployment(req.ctx, req.body ?? {}), req));
  });
  router.get('/deployments', async (req, res) => {
    const page = await deployments.listDeployments(req.ctx, req.query);
    res.json({ resources: page.resources.map((deployment) => presentDeployment(deployment, req)), offset: page.offset });
  });
  router.get('/deployments/:id', async (req, res) => {
    res.json(presentDeployment(await deployments.getDeployment(req.ctx, req.params.id), req));
  });
  router.patch('/deployments/:id', async (req, res) => {
    res.json(presentDeployment(await deployments.updateDeployment(req.ctx, req.params.id, req.body ?? {}), req));
  });
  router.delete('/deployments/:id', async (req, res) => {
    await deployments.deleteDeployment(req.ctx, req.params.id);
    res.status(204).end();
  });

  router.get('/deployments/:id/revisions', async (req, res) => {
    const page = await revisions.listRevisions(req.ctx, req.params.id, req.query);
    res.json({ resources: page.resources.map(presentRevision), offset: page.offset });
  });
  router.get('/deployments/:id/revisions/:revisionId', async (req, res) => {
    res.json(presentRevision(await revisions.getRevision(req.ctx, req.params.id, req.params.revisionId)));
  });
  router.post('/deployments/:id/revisions/:revisionId/redeploy', async (req, res) => {
    const deploymentId = await revisions.redeployRevision(req.ctx, req.params.id, req.params.revisionId);
    res.json(presentDeployment(await deployments.getDeployment(req.ctx, deploymentId), req));
  });
  router.get('/deployments/:id/revisions/:revisionId/logs', async (req, res) => {
    const page = await revisions.revisionLogs(req.ctx, req.params.id, req.params.revisionId, req.query);
    res.json({ resources: page.resources.map(presentRevisionLog), offset: page.offset });
  });

  return router;
}

/** The platform's GET /metrics: its deployments' use of their limits, for an organization admin's key. */
export function deploymentMetricsRouter(deps: Deps): Router {
  const router = Router();
  router.get('/metrics', authenticate(deps), async (req, res) => {
    const metrics = await deployments.deploymentUsageMetrics(req.ctx);
    res.type(metrics.contentType).send(metrics.text);
  });
  return router;
}

/**
 * What the platform itself answers at /deployments/:deploymentId (the gateway forwards the rest to the
 * deployment's agent server): the agent server's public API reference at the url of a deployment that
 * exists, even before its first revision runs, and 404 (plain text, as the agent server's errors) at
 * the url of one that does not.
 */
export function deploymentPages(deps: Deps, agentServerReference: RequestHandler | undefined): Router {
  const router = Router({ mergeParams: true });
  router.use(async (req, _res, next) => {
    next((await deployments.deploymentExists(deps, String(req.params.deploymentId))) ? undefined : AppError.notFound('Deployment not found'));
  });
  if (agentServerReference) router.use(agentServerReference);
  router.use(notFoundHandler);
  router.use(errorHandler('plain', deps.logger));
  return router;
}
