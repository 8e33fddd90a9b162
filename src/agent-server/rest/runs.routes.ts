// Runs on threads and stateless runs, as the langgraph SDK calls them. Streams are SSE over the runs
// service's event iterable; create responses carry Content-Location (the SDK reads the run id from it)
// and Location (where the SDK reconnects, with Last-Event-ID, if the stream breaks).
import { type Request, type Response, Router } from 'express';
import { AppError } from '../../errors.js';
import type { AuthorizedContext } from '../services/custom-auth/custom-auth.js';
import type { AgentServerContext } from '../services/served-deployment/deployment-scope.js';
import { joinRun, runResult, streamRun } from '../services/runs/run-follow.service.js';
import { getRun, listRuns } from '../services/runs/run-reads.service.js';
import * as runs from '../services/runs/runs.service.js';
import { presentRun, sendJson } from './presenters.js';
import { queryFlag, queryStreamModes } from './query.js';
import { openSse } from './sse.js';
import type { FeedbackUrlMaker } from '../../contracts/trace-wire.js';

/** Where a traced run's feedback urls are made, and the tracing project its trace goes to. */
export type RunFeedback = { project: string; urls: FeedbackUrlMaker };

/**
 * The platform's url as the caller reached it: a deployment's url (which the gateway sends) without
 * its /deployments/<id>, or, at `serve` (the platform on the same port), the request's own origin.
 */
const platformUrlOf = (req: Request): string | undefined =>
  req.deploymentUrl ? req.deploymentUrl.replace(/\/deployments\/[^/]+\/?$/, '') : `${req.protocol}://${req.get('host') ?? 'localhost'}`;

const runPath = (threadId: string | null, runId: string) => (threadId ? `/threads/${threadId}/runs/${runId}` : `/runs/${runId}`);

async function streamToClient(
  ctx: AgentServerContext,
  res: Response,
  run: { runId: string; threadId: string | null },
  options: {
    afterSeq?: number;
    modes?: string[];
    cancelOnDisconnect: boolean;
    headers?: Record<string, string>;
    /** The stream ends with a `feedback` event of these urls (`{key: url}`), made once the run ended. */
    feedbackUrls?: () => Promise<Record<string, string>>;
  },
) {
  const sse = openSse(res, options.headers);
  try {
    for await (const event of streamRun(ctx, run.runId, { afterSeq: options.afterSeq, modes: options.modes, signal: sse.signal })) {
      // Event ids count from 0 in each run, as the reference numbers them; `seq` counts from 1.
      await sse.write({ id: String(event.seq - 1), event: event.event, data: event.data });
    }
    if (options.feedbackUrls && !sse.signal.aborted) {
      // Without urls (the platform did not answer) the stream still ends; the run is done either way.
      const urls = await options.feedbackUrls().catch((error: unknown) => {
        ctx.logger.warn({ err: error, runId: run.runId }, 'could not make the run’s feedback urls');
        return undefined;
      });
      if (urls && !sse.signal.aborted) await sse.write({ event: 'feedback', data: JSON.stringify(urls) });
    }
  } finally {
    if (sse.signal.aborted && options.cancelOnDisconnect) {
      await runs.cancelRunIds(ctx, [run.runId], 'interrupt', 'disconnect').catch((error: unknown) => ctx.logger.warn({ err: error }, 'cancel on disconnect failed'));
    }
    sse.end();
  }
}

/** The `seq` of the last event the client received, from the event id it sends back (seq - 1). */
const lastEventSeq = (req: Request): number | undefined => {
  const header = req.get('last-event-id');
  if (!header) return undefined;
  const id = Number(header.split(':').pop());
  return Number.isInteger(id) && id >= 0 ? id + 1 : undefined;
};

export function runsRouter(options: { feedback?: RunFeedback } = {}): Router {
  const router = Router();
  /** A run's feedback urls, when it asked for some (feedback_keys) and its trace goes to a platform. */
  const feedbackOf = (req: Request, runId: string) => {
    const keys = req.body?.feedback_keys as string[] | null | undefined;
    const { feedback } = options;
    if (!feedback || !keys?.length) return undefined;
    return () => feedback.urls({ project: feedback.project, runId, keys: [...new Set(keys)], platformUrl: platformUrlOf(req) });
  };

  // ── creating runs: background, streamed, waited; on a thread or stateless ──
  for (const stateful of [true, false]) {
    const base = stateful ? '/threads/:threadId/runs' : '/runs';
    const threadOf = (req: Request) => (stateful ? (req.params.threadId as string) : null);

    router.post(base, async (req, res) => {
      const run = await runs.createRun(req.agent, threadOf(req), req.body ?? {});
      res.set('Content-Location', runPath(threadOf(req), run.runId));
      sendJson(res, presentRun(run));
    });

    router.post(`${base}/stream`, async (req, res) => {
      const run = await runs.createRun(req.agent, threadOf(req), req.body ?? {});
      const path = runPath(threadOf(req), run.runId);
      await streamToClient(req.agent, res, { runId: run.runId, threadId: threadOf(req) }, {
        cancelOnDisconnect: req.body?.on_disconnect === 'cancel',
        headers: { 'Content-Location': path, Location: `${path}/stream` },
        feedbackUrls: feedbackOf(req, run.runId),
      });
    });

    router.post(`${base}/wait`, async (req, res) => {
      const disconnected = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) disconnected.abort();
      });
      const { run, done } = await runs.createRunAndWait(req.agent, threadOf(req), req.body ?? {}, disconnected.signal);
      if (disconnected.signal.aborted) {
        if (req.body?.on_disconnect === 'cancel') await runs.cancelRunIds(req.agent, [run.runId], 'interrupt', 'disconnect');
        return;
      }
      res.set('Content-Location', runPath(threadOf(req), run.runId));
      sendJson(res, await runResult(req.agent, done, run.kwargs.temporary ? null : run.threadId));
    });
  }

  router.post('/runs/batch', async (req, res) => {
    sendJson(res, (await runs.createRunBatch(req.agent, req.body)).map(presentRun));
  });

  router.post('/runs/cancel', async (req, res) => {
    await runs.cancelRuns(req.agent, req.body ?? {}, { action: req.query.action });
    res.status(204).end();
  });

  router.get('/runs/:runId/stream', async (req, res) => {
    const run = await getRun(req.agent, null, req.params.runId);
    await streamToClient(req.agent, res, { runId: run.runId, threadId: null }, {
      afterSeq: lastEventSeq(req),
      modes: queryStreamModes(req.query.stream_mode),
      cancelOnDisconnect: queryFlag(req.query.cancel_on_disconnect),
    });
  });

  // ── one thread's runs ──
  router.get('/threads/:threadId/runs', async (req, res) => {
    sendJson(res, (await listRuns(req.agent, req.params.threadId, req.query)).map(presentRun));
  });

  router.get('/threads/:threadId/runs/:runId', async (req, res) => {
    sendJson(res, presentRun(await getRun(req.agent, req.params.threadId, req.params.runId)));
  });

  router.delete('/threads/:threadId/runs/:runId', async (req, res) => {
    await runs.deleteRun(req.agent, req.params.threadId, req.params.runId);
    res.status(204).end();
  });

  router.get('/threads/:threadId/runs/:runId/join', async (req, res) => {
    const disconnected = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) disconnected.abort();
    });
    const result = await joinRun(req.agent, req.params.threadId, req.params.runId, disconnected.signal);
    if (!disconnected.signal.aborted) sendJson(res, result);
  });

  router.get('/threads/:threadId/runs/:runId/stream', async (req, res) => {
    const run = await getRun(req.agent, req.params.threadId, req.params.runId).catch((error: unknown) => {
      // Under custom auth, a thread the caller may not read is an error event in a stream that opened
      // (the reference's answer, which the SDK's joinStream yields), rather than a failed request.
      if (!(req.agent as AuthorizedContext).auth || !(error instanceof AppError) || error.code !== 'NOT_FOUND') throw error;
      return undefined;
    });
    if (!run) {
      const sse = openSse(res);
      await sse.write({ event: 'error', data: JSON.stringify({ error: 'Error', message: `404: Thread ${req.params.threadId} not found` }) });
      sse.end();
      return;
    }
    await streamToClient(req.agent, res, { runId: run.runId, threadId: run.threadId }, {
      afterSeq: lastEventSeq(req),
      modes: queryStreamModes(req.query.stream_mode),
      cancelOnDisconnect: queryFlag(req.query.cancel_on_disconnect),
    });
  });

  router.post('/threads/:threadId/runs/:runId/cancel', async (req, res) => {
    const { waited } = await runs.cancelRun(req.agent, req.params.threadId, req.params.runId, req.query);
    res.status(waited ? 204 : 202).end();
  });

  return router;
}
