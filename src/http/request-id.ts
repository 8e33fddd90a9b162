// A request's id (X-Request-Id): the caller's when it sent a sound one, so a client's own id finds
// the log line, else a new one. Every answer carries it.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export function requestIdOf(req: Pick<IncomingMessage, 'headers'>): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
}
