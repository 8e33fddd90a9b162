// The REST front door: each surface is a sub-router with its own body parsing and error dialect.
import { type RequestHandler, Router } from 'express';
import type { Deps } from '../../context.js';
import { bulkExportsRouter } from './exports.routes.js';
import { authIntegrationsListenersRouter } from './auth-integrations-listeners.routes.js';
import { datasetsRouter } from './datasets.routes.js';
import { deploymentMetricsRouter, deploymentPages, deploymentsRouter } from './deployments.routes.js';
import { errorHandler, notFoundHandler } from '../../http/errors.js';
import { feedbackRouter } from './feedback.routes.js';
import { healthCheck } from '../../http/health.js';
import { platformSurface } from './openapi.operations.js';
import { apiReferenceRouter } from '../../http/openapi/reference.routes.js';
import { jsonBody } from '../../http/json-body.js';
import { tenancyRouter } from './tenancy.routes.js';
import { runsV2Router, tracesRouter } from './traces.routes.js';
import { usageRouter } from './usage.routes.js';

/**
 * The platform's REST surfaces. `agentServerReference`: the agent server's API reference, which the
 * platform serves at every deployment's url (an entry point gives it: the platform imports nothing of
 * the agent server); the rest of a deployment's url is its own agent server's (the gateway, in app.ts).
 */
export function restRouter(deps: Deps, agentServerReference?: RequestHandler): Router {
  const router = Router();

  router.get('/ok', healthCheck(deps));
  // The platform's own reference (/openapi.json, /docs), public like the page a browser opens.
  router.use(apiReferenceRouter(platformSurface));

  // A deployment's url: the gateway, mounted ahead of everything in app.ts, forwards it to the
  // deployment's agent server, but for its public reference and the url of a deployment that does not exist.
  router.use('/deployments/:deploymentId', deploymentPages(deps, agentServerReference));

  // Control plane OAuth providers, integrations and listeners (FastAPI dialect) at the root and, for
  // self-hosted clients, under /api-host.
  // (Two mounts: Express 5 does not match '/' inside an array of paths.)
  const controlPlane = authIntegrationsListenersRouter(deps);
  router.use(controlPlane);
  router.use('/api-host', controlPlane);

  // Trace ingestion and queries (langsmith SDK wire, 'ingest' dialect), at the root and under /api/v1.
  // Mounted before the platform API, whose 404 handler would otherwise answer /api/v1/runs…; the
  // traces router passes on every path it does not own.
  const traces = tracesRouter(deps);
  router.use(traces);
  router.use('/api/v1', traces);
  // LangSmith's v2 runs API (the SDK's client.runs.query / retrieve / getURL), where the SDK's base url puts it.
  router.use('/api/v2', runsV2Router(deps));
  // Feedback on trace runs, beside them (the langsmith SDK's paths; it too passes on what it does not own).
  const feedback = feedbackRouter(deps);
  router.use(feedback);
  router.use('/api/v1', feedback);
  // Datasets, examples and experiment comparison, beside them (the langsmith SDK's paths; it passes on what it does not own).
  const datasets = datasetsRouter(deps);
  router.use(datasets);
  router.use('/api/v1', datasets);

  // Platform API (FastAPI dialect): tenancy and usage; bulk export joins here.
  const platformApi = Router();
  platformApi.use(jsonBody(deps.config));
  platformApi.use(usageRouter(deps));
  platformApi.use(bulkExportsRouter(deps));
  platformApi.use(tenancyRouter(deps));
  platformApi.use(notFoundHandler);
  platformApi.use(errorHandler('fastapi', deps.logger));
  router.use('/api/v1', platformApi);

  // Control plane deployments and revisions (FastAPI dialect), also under /api-host as self-hosted
  // installations answer it; the rest of /v2 (providers, listeners) is mounted above.
  const deployments = Router();
  deployments.use(jsonBody(deps.config));
  deployments.use(deploymentsRouter(deps));
  deployments.use(notFoundHandler);
  deployments.use(errorHandler('fastapi', deps.logger));
  router.use('/v2', deployments);
  router.use('/api-host/v2', deployments);

  // Deployments' use of their limits, in Prometheus's format (FastAPI dialect for its errors).
  const metrics = Router();
  metrics.use(deploymentMetricsRouter(deps));
  metrics.use(errorHandler('fastapi', deps.logger));
  router.use(metrics);

  return router;
}
