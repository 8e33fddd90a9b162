// Threads, as the langgraph SDK calls them.
import { Router } from 'express';
import * as threads from '../services/threads/threads.service.js';
import { streamThread } from '../services/runs/run-follow.service.js';
import { presentThread, selectFields, sendJson } from './presenters.js';
import { queryFlag, queryStreamModes } from './query.js';
import { openSse } from './sse.js';

export function threadsRouter(): Router {
  const router = Router();

  router.post('/threads', async (req, res) => {
    sendJson(res, presentThread(await threads.createThread(req.agent, req.body ?? {})));
  });

  router.post('/threads/search', async (req, res) => {
    const page = await threads.searchThreads(req.agent, req.body ?? {});
    res.set('X-Pagination-Total', String(page.total));
    if (page.nextOffset !== null) res.set('X-Pagination-Next', String(page.nextOffset));
    sendJson(res, page.items.map((item) => selectFields(presentThread(item), page.select)));
  });

  router.post('/threads/count', async (req, res) => {
    sendJson(res, await threads.countThreads(req.agent, req.body ?? {}));
  });

  router.get('/threads/:threadId', async (req, res) => {
    sendJson(res, presentThread(await threads.getThread(req.agent, req.params.threadId)));
  });

  router.patch('/threads/:threadId', async (req, res) => {
    sendJson(res, presentThread(await threads.updateThread(req.agent, req.params.threadId, req.body ?? {})));
  });

  router.delete('/threads/:threadId', async (req, res) => {
    await threads.deleteThread(req.agent, req.params.threadId);
    res.status(204).end();
  });

  router.post('/threads/:threadId/copy', async (req, res) => {
    sendJson(res, presentThread(await threads.copyThread(req.agent, req.params.threadId)));
  });

  router.get('/threads/:threadId/state', async (req, res) => {
    sendJson(res, await threads.getThreadState(req.agent, req.params.threadId, { subgraphs: queryFlag(req.query.subgraphs) }));
  });

  router.post('/threads/:threadId/state', async (req, res) => {
    sendJson(res, await threads.updateThreadState(req.agent, req.params.threadId, req.body ?? {}));
  });

  router.post('/threads/:threadId/state/checkpoint', async (req, res) => {
    sendJson(res, await threads.getThreadStateAtCheckpoint(req.agent, req.params.threadId, req.body ?? {}));
  });

  router.get('/threads/:threadId/state/:checkpointId', async (req, res) => {
    sendJson(
      res,
      await threads.getThreadState(req.agent, req.params.threadId, {
        subgraphs: queryFlag(req.query.subgraphs),
        checkpoint: { checkpoint_id: req.params.checkpointId },
      }),
    );
  });

  router.get('/threads/:threadId/storage', async (req, res) => {
    sendJson(res, await threads.getThreadStorage(req.agent, req.params.threadId));
  });

  router.get('/threads/:threadId/history', async (req, res) => {
    const { limit, before } = req.query;
    sendJson(res, await threads.getThreadHistory(req.agent, req.params.threadId, { limit: limit ?? undefined, before: before ?? undefined }));
  });

  router.post('/threads/:threadId/history', async (req, res) => {
    sendJson(res, await threads.getThreadHistory(req.agent, req.params.threadId, req.body ?? {}));
  });

  router.get('/threads/:threadId/stream', async (req, res) => {
    const lastEventId = req.get('last-event-id') ?? undefined;
    // Validates the thread and the modes before the response turns into a stream.
    const modes = queryStreamModes(req.query.stream_mode);
    await threads.getThread(req.agent, req.params.threadId);
    const sse = openSse(res);
    try {
      for await (const event of streamThread(req.agent, req.params.threadId, {
        modes,
        signal: sse.signal,
        lastEventId,
      })) {
        await sse.write({ id: `${event.runId}:${event.seq}`, event: event.event, data: event.data });
      }
    } finally {
      sse.end();
    }
  });

  return router;
}
