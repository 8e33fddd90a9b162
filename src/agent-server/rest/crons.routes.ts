// Crons, as the langgraph SDK's `client.crons` calls them.
import { Router } from 'express';
import * as crons from '../services/crons/crons.service.js';
import { presentCron, selectFields, sendJson } from './presenters.js';

export function cronsRouter(): Router {
  const router = Router();

  router.post('/threads/:threadId/runs/crons', async (req, res) => {
    sendJson(res, presentCron(await crons.createCron(req.agent, req.params.threadId, req.body ?? {})));
  });

  router.post('/runs/crons', async (req, res) => {
    sendJson(res, presentCron(await crons.createCron(req.agent, null, req.body ?? {})));
  });

  router.post('/runs/crons/search', async (req, res) => {
    const select = Array.isArray(req.body?.select) ? (req.body.select as string[]) : undefined;
    sendJson(res, (await crons.searchCrons(req.agent, req.body)).map((cron) => selectFields(presentCron(cron), select)));
  });

  router.post('/runs/crons/count', async (req, res) => {
    sendJson(res, await crons.countCrons(req.agent, req.body));
  });

  router.patch('/runs/crons/:cronId', async (req, res) => {
    sendJson(res, presentCron(await crons.updateCron(req.agent, req.params.cronId, req.body)));
  });

  router.delete('/runs/crons/:cronId', async (req, res) => {
    await crons.deleteCron(req.agent, req.params.cronId);
    res.status(204).end();
  });

  return router;
}
