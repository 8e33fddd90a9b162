// Assistants, as the langgraph SDK calls them.
import { Router } from 'express';
import * as assistants from '../services/assistants/assistants.service.js';
import { presentAssistant, presentAssistantVersion, selectFields, sendJson } from './presenters.js';
import { queryFlag } from './query.js';

export function assistantsRouter(): Router {
  const router = Router();

  router.post('/assistants', async (req, res) => {
    sendJson(res, presentAssistant(await assistants.createAssistant(req.agent, req.body ?? {})));
  });

  router.post('/assistants/search', async (req, res) => {
    const page = await assistants.searchAssistants(req.agent, req.body ?? {});
    res.set('X-Pagination-Total', String(page.total));
    if (page.nextOffset !== null) res.set('X-Pagination-Next', String(page.nextOffset));
    sendJson(res, page.items.map((item) => selectFields(presentAssistant(item), page.select)));
  });

  router.post('/assistants/count', async (req, res) => {
    sendJson(res, await assistants.countAssistants(req.agent, req.body ?? {}));
  });

  router.get('/assistants/:assistantId', async (req, res) => {
    sendJson(res, presentAssistant(await assistants.getAssistant(req.agent, req.params.assistantId)));
  });

  router.patch('/assistants/:assistantId', async (req, res) => {
    sendJson(res, presentAssistant(await assistants.updateAssistant(req.agent, req.params.assistantId, req.body ?? {})));
  });

  router.delete('/assistants/:assistantId', async (req, res) => {
    await assistants.deleteAssistant(req.agent, req.params.assistantId, { deleteThreads: queryFlag(req.query.delete_threads) });
    res.status(204).end();
  });

  router.post('/assistants/:assistantId/latest', async (req, res) => {
    sendJson(res, presentAssistant(await assistants.setLatestAssistantVersion(req.agent, req.params.assistantId, req.body ?? {})));
  });

  router.post('/assistants/:assistantId/versions', async (req, res) => {
    sendJson(res, (await assistants.listAssistantVersions(req.agent, req.params.assistantId, req.body ?? {})).map(presentAssistantVersion));
  });

  router.get('/assistants/:assistantId/graph', async (req, res) => {
    const raw = req.query.xray;
    const xray = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : queryFlag(raw);
    sendJson(res, await assistants.getAssistantGraph(req.agent, req.params.assistantId, xray));
  });

  router.get('/assistants/:assistantId/schemas', async (req, res) => {
    sendJson(res, await assistants.getAssistantSchemas(req.agent, req.params.assistantId));
  });

  router.get('/assistants/:assistantId/subgraphs{/:namespace}', async (req, res) => {
    sendJson(
      res,
      await assistants.getAssistantSubgraphs(req.agent, req.params.assistantId, {
        namespace: req.params.namespace,
        recurse: queryFlag(req.query.recurse),
      }),
    );
  });

  return router;
}
