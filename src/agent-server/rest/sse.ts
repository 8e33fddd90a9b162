// Server-sent events as the langgraph SDK reads them: `event:`, `data:` (one line of JSON) and `id:`
// per event, keep-alive comments, and respect for a slow reader (backpressure).
import type { Socket } from 'node:net';
import type { Response } from 'express';

// A keep-alive is one comment line with no blank line after it: every SSE reader skips a comment, and
// only a blank line ends an event. The SDK's decoder (langgraph-sdk utils/sse.js) keeps the last event
// id across events and dispatches at every blank line once it has one, so a comment followed by a
// blank line reached its callers as an event with no name and no data.
const KEEP_ALIVE = ': heartbeat\n';

export type SseEvent = { id?: string; event: string; data: string };

/** Opens an SSE response; `signal` aborts when the client goes away. */
export function openSse(res: Response, headers: Record<string, string> = {}) {
  const disconnected = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) disconnected.abort();
  });
  res.status(200);
  res.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    ...headers,
  });
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  // Also while events flow: a client that reconnects a stream silent for a few keep-alives' time
  // (the SDK's idle watchdog) learns their cadence from them. Not into a full buffer: that reader is slow, not gone.
  const heartbeat = setInterval(() => {
    if (!res.writableNeedDrain) res.write(KEEP_ALIVE);
  }, res.req.agent.config.sseHeartbeatSeconds * 1000);
  heartbeat.unref();
  // Events of one batch (a run's events arrive together in one notification, and its end follows its
  // last event) are written in the same tick: corked until the next tick, they go out in one socket
  // write, as one HTTP chunk, instead of one write of three pieces (size, data, CRLF) per event.
  // The socket is corked, not the response: ending a corked response (OutgoingMessage.end) leaves a
  // cork of its own on the socket, and the last events then never left (caught by the A2A stream test).
  // Corking and uncorking the same socket in this tick and the next is balanced whatever happens between.
  let corkedSocket: Socket | null = null;
  const corkUntilNextTick = () => {
    if (corkedSocket || !res.socket) return;
    const socket = (corkedSocket = res.socket);
    socket.cork();
    process.nextTick(() => {
      corkedSocket = null;
      socket.uncork();
    });
  };
  return {
    signal: disconnected.signal,
    async write(event: SseEvent): Promise<void> {
      if (disconnected.signal.aborted) return;
      const text = `event: ${event.event}\ndata: ${event.data}\n${event.id !== undefined ? `id: ${event.id}\n` : ''}\n`;
      corkUntilNextTick();
      if (!res.write(text)) await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    },
    end() {
      clearInterval(heartbeat);
      if (!res.writableEnded) res.end();
    },
  };
}
