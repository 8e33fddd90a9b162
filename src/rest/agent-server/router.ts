// The agent server's REST surface for one deployment. `serve` mounts it at the root of its own port;
// the platform mounts the same router at /deployments/:deployment_id with the deployment's scope.
// Errors are plain text (the SDK reports them as "HTTP 404: Assistant not found").
import { Router } from 'express';
import { AppError } from '../../errors.js';
import type { Deps } from '../../services/context.js';
import type { AgentServerContext, DeploymentScope } from '../../services/runtime/deployment-scope.js';
import { truncateDeployment } from '../../services/runtime/truncate.js';
import { authenticateApiKey } from '../../services/tenancy/tenancy.service.js';
import { SYSTEM_VIEWER } from '../../services/tenancy/viewer.js';
import { errorHandler, notFoundHandler } from '../middleware/errors.js';
import { healthCheck } from '../health.js';
import { jsonBody } from '../middleware/json-body.js';
import { assistantsRouter } from './assistants.routes.js';
import { runsRouter } from './runs.routes.js';
import { threadsRouter } from './threads.routes.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the agent-server router: the service context of this request, in its deployment. */
      agent: AgentServerContext;
    }
  }
}

export function agentServerRouter(deps: Deps, scope: DeploymentScope): Router {
  const router = Router();
  router.use(jsonBody(deps.config, { strict: false }));
  router.use(async (req, _res, next) => {
    if (scope.auth.kind === 'none') {
      req.agent = { ...deps, viewer: SYSTEM_VIEWER, deployment: scope };
    } else {
      const viewer = await authenticateApiKey(deps, req.get('x-api-key'), undefined);
      // Another organization's key learns nothing about the deployment: same answer as a missing one.
      if (viewer.kind !== 'api-key' || viewer.organizationId !== scope.auth.organizationId) throw AppError.notFound('Deployment not found');
      req.agent = { ...deps, viewer, deployment: scope };
    }
    next();
  });

  router.get('/ok', healthCheck(deps));
  router.get('/info', (_req, res) => {
    res.json({
      version: '0.1.0',
      langgraph_js_version: '1.7.3',
      flags: { assistants: true, crons: false, langsmith: false, langsmith_tracing_replicas: false },
      host: { kind: 'agent-platform', project_id: null, host_revision_id: null, revision_id: null, tenant_id: null },
    });
  });

  router.use(assistantsRouter());
  router.use(threadsRouter());
  router.use(runsRouter());

  if (scope.dev) {
    router.post('/internal/truncate', async (req, res) => {
      await truncateDeployment(req.agent, req.body ?? {});
      res.status(200).json({ ok: true });
    });
  }

  router.use(notFoundHandler);
  router.use(errorHandler('plain', deps.logger));
  return router;
}
