// Serves the project's own HTTP app (`http.app`) in front of the agent server's routes, with the
// reference server's semantics: the app's middleware runs before every route, and its routes win.
// A request none of its routes match falls through to ours; headers its middleware set on the way
// out (after `await next()`) are kept on our response. A body the app's middleware reads before
// falling through is not seen again by our routes.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request as ExpressRequest, RequestHandler, Response as ExpressResponse } from 'express';
import type { CustomApp } from '../../services/deployments/runtime-protocol.js';

const FALL_THROUGH = 'x-agent-platform-fall-through';

/** Express middleware that offers each request to the project's app first. */
export function customRoutes(app: CustomApp): RequestHandler {
  const hasNotFound = typeof app.notFound === 'function';
  // Hono runs its middleware, then this handler, when no route matches: the marker says "ours".
  app.notFound?.(() => new Response(null, { status: 404, headers: { [FALL_THROUGH]: '1' } }));
  return async (req, res, next) => {
    const response = await app.fetch(toFetchRequest(req));
    const fallsThrough = response.headers.has(FALL_THROUGH) || (!hasNotFound && response.status === 404);
    if (!fallsThrough) return sendFetchResponse(res, response);
    for (const [name, value] of response.headers) {
      if (name === FALL_THROUGH || name === 'content-length' || name === 'content-type' || name === 'set-cookie') continue;
      res.setHeader(name, value);
    }
    for (const cookie of response.headers.getSetCookie()) res.append('Set-Cookie', cookie);
    next();
  };
}

function toFetchRequest(req: ExpressRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.originalUrl}`, {
    method: req.method,
    headers,
    // Read only if the app asks for it, so a request that falls through still has its body for us.
    body: hasBody ? lazyBody(req) : undefined,
    duplex: 'half',
  } as RequestInit);
}

function lazyBody(req: ExpressRequest): ReadableStream<Uint8Array> {
  let chunks: AsyncIterator<Buffer> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        chunks ??= req[Symbol.asyncIterator]();
        const { value, done } = await chunks.next();
        if (done) controller.close();
        else controller.enqueue(new Uint8Array(value));
      },
      cancel() {
        req.resume();
      },
    },
    { highWaterMark: 0 },
  );
}

async function sendFetchResponse(res: ExpressResponse, response: Response): Promise<void> {
  res.status(response.status);
  for (const [name, value] of response.headers) if (name !== 'set-cookie') res.setHeader(name, value);
  for (const cookie of response.headers.getSetCookie()) res.append('Set-Cookie', cookie);
  if (!response.body) {
    res.end();
    return;
  }
  await pipeline(Readable.fromWeb(response.body as never), res);
}
