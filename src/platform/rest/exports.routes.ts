// Bulk export REST paths under /api/v1/bulk-exports (FastAPI dialect): destinations, exports, runs.
import { Router } from 'express';
import type { Deps } from '../../context.js';
import * as destinations from '../services/exports/destinations.service.js';
import * as exportsService from '../services/exports/exports.service.js';
import { authenticate } from './auth.js';
import { presentDestination, presentExport, presentExportRun } from './exports.presenters.js';

export function bulkExportsRouter(deps: Deps): Router {
  const router = Router();
  router.use('/bulk-exports', authenticate(deps));

  router.post('/bulk-exports/destinations', async (req, res) => {
    res.json(presentDestination(await destinations.createDestination(req.ctx, req.body ?? {})));
  });
  router.get('/bulk-exports/destinations', async (req, res) => {
    res.json((await destinations.listDestinations(req.ctx)).map(presentDestination));
  });
  router.get('/bulk-exports/destinations/:id', async (req, res) => {
    res.json(presentDestination(await destinations.getDestination(req.ctx, req.params.id)));
  });
  router.patch('/bulk-exports/destinations/:id', async (req, res) => {
    res.json(presentDestination(await destinations.updateDestination(req.ctx, req.params.id, req.body ?? {})));
  });

  router.post('/bulk-exports', async (req, res) => {
    res.json(presentExport(await exportsService.createExport(req.ctx, req.body ?? {})));
  });
  router.get('/bulk-exports', async (req, res) => {
    res.json((await exportsService.listExports(req.ctx)).map(presentExport));
  });
  router.get('/bulk-exports/:id', async (req, res) => {
    res.json(presentExport(await exportsService.getExport(req.ctx, req.params.id)));
  });
  router.patch('/bulk-exports/:id', async (req, res) => {
    res.json(presentExport(await exportsService.updateExport(req.ctx, req.params.id, req.body ?? {})));
  });
  router.get('/bulk-exports/:id/runs', async (req, res) => {
    res.json((await exportsService.listExportRuns(req.ctx, req.params.id)).map(presentExportRun));
  });
  router.get('/bulk-exports/:id/runs/:runId', async (req, res) => {
    res.json(presentExportRun(await exportsService.getExportRun(req.ctx, req.params.id, req.params.runId)));
  });

  return router;
}
