// Tenancy REST paths (FastAPI dialect), as the platform's own API serves them under /api/v1.
import { Router } from 'express';
import { z } from 'zod';
import type { Deps } from '../../context.js';
import * as apiKeys from '../services/tenancy/api-keys.service.js';
import * as tenancy from '../services/tenancy/tenancy.service.js';
import { authenticate } from './auth.js';
import { parseBody } from '../../http/validate.js';
import { presentApiKey, presentOrganization, presentWorkspace } from './tenancy.presenters.js';

export const WorkspaceCreateBody = z.object({ display_name: z.string() });
export const ApiKeyCreateBody = z.object({ description: z.string().optional(), workspace_id: z.uuid().nullish() });

export function tenancyRouter(deps: Deps): Router {
  const router = Router();
  router.use(authenticate(deps));

  router.get('/orgs/current', async (req, res) => {
    const viewer = req.ctx.viewer;
    if (viewer.kind !== 'api-key') throw new Error('unreachable: REST is always authenticated by key');
    res.json(presentOrganization(await tenancy.getOrganization(req.ctx, viewer.organizationId)));
  });

  router.get('/workspaces', async (req, res) => {
    res.json((await tenancy.listWorkspaces(req.ctx)).map(presentWorkspace));
  });

  router.post('/workspaces', async (req, res) => {
    const body = parseBody(WorkspaceCreateBody, req);
    res.json(presentWorkspace(await tenancy.createWorkspace(req.ctx, { name: body.display_name })));
  });

  router.get('/api-key', async (req, res) => {
    res.json((await apiKeys.listApiKeys(req.ctx)).map(presentApiKey));
  });

  router.post('/api-key', async (req, res) => {
    const body = parseBody(ApiKeyCreateBody, req);
    const created = await apiKeys.createApiKey(req.ctx, { description: body.description, workspaceId: body.workspace_id });
    res.json({ ...presentApiKey(created.apiKey), key: created.key });
  });

  router.delete('/api-key/:id', async (req, res) => {
    res.json(presentApiKey(await apiKeys.revokeApiKey(req.ctx, req.params.id)));
  });

  return router;
}
