// Control plane (FastAPI dialect, X-Api-Key + X-Tenant-Id): OAuth providers (/v2/auth/providers),
// git host integrations (/v1/integrations) and listeners (/v2/listeners). Each group owns its prefix
// and passes every other path on, so the deployments router can be mounted beside it, at the root and
// under /api-host alike.
import { Router } from 'express';
import type { Deps } from '../../context.js';
import * as integrations from '../services/integrations/integrations.service.js';
import * as listeners from '../services/listeners/listeners.service.js';
import * as providers from '../services/auth-providers/auth-providers.service.js';
import { authenticate } from './auth.js';
import { errorHandler, notFoundHandler } from '../../http/errors.js';
import { jsonBody } from '../../http/json-body.js';
import { presentIntegration, presentListener, presentOAuthProvider } from './auth-integrations-listeners.presenters.js';

export function authIntegrationsListenersRouter(deps: Deps): Router {
  const router = Router();
  router.use('/v2/auth/providers', controlPlaneGroup(deps, oauthProviderRoutes()));
  router.use('/v1/integrations', controlPlaneGroup(deps, integrationRoutes()));
  router.use('/v2/listeners', controlPlaneGroup(deps, listenerRoutes()));
  return router;
}

/** One endpoint group: body parsing, authentication, its routes, and 404/errors in the FastAPI dialect. */
function controlPlaneGroup(deps: Deps, routes: Router): Router {
  const group = Router();
  group.use(jsonBody(deps.config));
  group.use(authenticate(deps));
  group.use(routes);
  group.use(notFoundHandler);
  group.use(errorHandler('fastapi', deps.logger));
  return group;
}

function oauthProviderRoutes(): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    res.status(201).json(presentOAuthProvider(await providers.createProvider(req.ctx, req.body)));
  });
  router.get('/', async (req, res) => {
    res.json((await providers.listProviders(req.ctx)).map(presentOAuthProvider));
  });
  router.get('/:providerId', async (req, res) => {
    res.json(presentOAuthProvider(await providers.getProvider(req.ctx, req.params.providerId)));
  });
  router.patch('/:providerId', async (req, res) => {
    res.json(presentOAuthProvider(await providers.updateProvider(req.ctx, req.params.providerId, req.body)));
  });
  router.delete('/:providerId', async (req, res) => {
    res.json(presentOAuthProvider(await providers.deleteProvider(req.ctx, req.params.providerId)));
  });
  return router;
}

function integrationRoutes(): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    res.status(201).json(presentIntegration(await integrations.createIntegration(req.ctx, req.body)));
  });
  router.get('/', async (req, res) => {
    res.json((await integrations.listIntegrations(req.ctx)).map(presentIntegration));
  });
  router.get('/:id', async (req, res) => {
    res.json(presentIntegration(await integrations.getIntegration(req.ctx, req.params.id)));
  });
  router.delete('/:id', async (req, res) => {
    await integrations.deleteIntegration(req.ctx, req.params.id);
    res.status(204).end();
  });
  return router;
}

function listenerRoutes(): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    res.status(201).json(presentListener(await listeners.createListener(req.ctx, req.body)));
  });
  router.get('/', async (req, res) => {
    const page = await listeners.listListeners(req.ctx, req.query as listeners.PageQueryInput);
    res.json({ resources: page.resources.map(presentListener), offset: page.offset });
  });
  router.get('/:id', async (req, res) => {
    res.json(presentListener(await listeners.getListener(req.ctx, req.params.id)));
  });
  router.patch('/:id', async (req, res) => {
    res.json(presentListener(await listeners.updateListener(req.ctx, req.params.id, req.body)));
  });
  router.delete('/:id', async (req, res) => {
    await listeners.deleteListener(req.ctx, req.params.id);
    res.status(204).end();
  });
  return router;
}
