// Server-sent events as the langgraph SDK reads them: `event:`, `data:` (one line of JSON) and `id:`
// per event, comment heartbeats while idle, and respect for a slow reader (backpressure).
import type { Request, Response } from 'express';

const HEARTBEAT_MS = 15_000;

export type SseEvent = { id?: string; event: string; data: string };

/** Opens an SSE response; `signal` aborts when the client goes away. */
export function openSse(req: Request, res: Response, headers: Record<string, string> = {}) {
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
  const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  void req;
  return {
    signal: disconnected.signal,
    async write(event: SseEvent): Promise<void> {
      if (disconnected.signal.aborted) return;
      const text = `event: ${event.event}\ndata: ${event.data}\n${event.id !== undefined ? `id: ${event.id}\n` : ''}\n`;
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
