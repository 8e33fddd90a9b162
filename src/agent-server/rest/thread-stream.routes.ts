// The thread streaming protocol over HTTP, as the SDK's ThreadStream (SSE transport) speaks it:
// commands as JSON request/response, and one filtered SSE event stream per request (the request is
// the subscription). The WebSocket transport at GET …/stream/events is thread-stream.socket.ts.
import { type ErrorRequestHandler, type Request, type Response, Router } from 'express';
import * as threadStream from '../services/runs/thread-stream.service.js';
import { parseInput } from '../../validate.js';
import { openSse } from './sse.js';

// A reader that takes nothing for this long while its events wait is dropped (its follower with it).
const STALL_MS = 60_000;

/** The body as a command, or a 400 in the protocol's error shape. */
function commandOf(req: Request, res: Response): threadStream.ProtocolCommand | undefined {
  const command = threadStream.readCommand(req.body);
  if ('type' in command) {
    res.status(400).json(command);
    return undefined;
  }
  return command;
}

export function threadStreamRouter(): Router {
  const router = Router();

  router.post('/threads/:threadId/commands', async (req, res) => {
    const command = commandOf(req, res);
    if (!command) return;
    res.json(await threadStream.handleThreadCommand(req.agent, req.params.threadId, command));
  });

  router.post('/threads/:threadId/stream/events', async (req, res) => {
    const body = parseInput(threadStream.EventStreamRequest, req.body ?? {}, 'body');
    const filter = threadStream.toFilter(body);
    // Checked before the response turns into a stream. A thread with no run yet is followed: its first
    // run.start comes after the client subscribed.
    await threadStream.assertThreadFollowable(req.agent, req.params.threadId);
    const sse = openSse(res);
    try {
      for await (const event of threadStream.followThreadEvents(req.agent, req.params.threadId, { since: body.since, replay: 'thread', signal: sse.signal })) {
        if (!threadStream.matchesFilter(filter, event)) continue;
        const written = sse.write({ id: event.event_id, event: event.method, data: JSON.stringify(event) });
        let timer: NodeJS.Timeout | undefined;
        const stalled = await Promise.race([written.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), STALL_MS)))]);
        clearTimeout(timer);
        if (stalled) {
          res.destroy();
          break;
        }
      }
    } finally {
      sse.end();
    }
  });

  // The WebSocket is served on the HTTP server's upgrade (thread-stream.socket.ts); a plain GET is told so.
  router.get('/threads/:threadId/stream/events', (_req, res) => {
    res.status(426).set('Upgrade', 'websocket').type('text/plain').send('Upgrade Required: the thread event stream is a WebSocket here; POST for SSE.');
  });

  return router;
}

/** A command body that is not JSON, or too large, answered in the protocol's error shape. */
export const commandBodyErrorHandler: ErrorRequestHandler = (error, _req, res, next) => {
  if (res.headersSent) return next(error);
  const { type, status } = (error ?? {}) as { type?: string; status?: number };
  if (type === 'entity.parse.failed') return res.status(400).json(threadStream.protocolError(null, 'invalid_argument', 'Protocol commands must be valid JSON.'));
  if (type === 'entity.too.large' || status === 413) return res.status(413).json(threadStream.protocolError(null, 'invalid_argument', 'The command is too large.'));
  next(error);
};
