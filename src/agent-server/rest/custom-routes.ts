// Serves the project's own HTTP app (`http.app`) in front of the agent server's routes, with the
// reference server's semantics: the app's middleware runs before every route, and its routes win.
// A request none of its routes match falls through to ours; headers its middleware set on the way
// out (after `await next()`) are kept on our response. A body the app's middleware read (and maybe
// changed) before falling through is the body our routes see, as on the reference server.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request as ExpressRequest, RequestHandler, Response as ExpressResponse } from 'express';
import type { Config } from '../../config.js';
import type { CustomApp } from '../services/served-deployment/runtime-protocol.js';
import { readsAsJson, setJsonBody } from '../../http/json-body.js';

const FALL_THROUGH = 'x-agent-platform-fall-through';
// Names the request across the app's fetch, so the fall-through handler can say what became of its body.
const REQUEST_KEY = 'x-agent-platform-request';

/** What Hono's context shows the fall-through handler of the request and of what its middleware read. */
type AppContext = { req: { raw: Request; header(name: string): string | undefined; text(): Promise<string>; bodyCache?: Record<string, unknown> } };

/** Express middleware that offers each request to the project's app first. */
export function customRoutes(app: CustomApp, config: Pick<Config, 'bodyLimitBytes' | 'jsonMaxDepth'>): RequestHandler {
  const hasNotFound = typeof app.notFound === 'function';
  const sent = new Map<string, { request: Request; read: () => Buffer | undefined }>();
  const leftBodies = new Map<string, string>();
  // Hono runs its middleware, then this handler, when no route matches: the marker says "ours". The
  // body the middleware left is kept: the request it replaced, or what it read through Hono (whose
  // cache holds the JSON object it may have changed in place).
  app.notFound?.(async (c?: unknown) => {
    const { req } = (c ?? {}) as Partial<AppContext>;
    const key = req?.header(REQUEST_KEY);
    const original = key ? sent.get(key) : undefined;
    // Hono's text() answers as the reference's routes would read it: its cache, else the (replaced) request.
    const replaced = req && original && req.raw !== original.request && !req.raw.bodyUsed;
    if (req && key && original && (replaced || Object.keys(req.bodyCache ?? {}).length)) leftBodies.set(key, await req.text());
    return new Response(null, { status: 404, headers: { [FALL_THROUGH]: '1' } });
  });
  return async (req, res, next) => {
    const key = randomUUID();
    const { request, read } = toFetchRequest(req, key);
    sent.set(key, { request, read });
    let response: Response;
    let left: string | undefined;
    try {
      response = await app.fetch(request);
    } finally {
      sent.delete(key);
      left = leftBodies.get(key);
      leftBodies.delete(key);
    }
    const fallsThrough = response.headers.has(FALL_THROUGH) || (!hasNotFound && response.status === 404);
    if (!fallsThrough) return sendFetchResponse(res, response);
    // The app read the body off the request: our parser cannot read it again, so it is given here.
    const bytes = left !== undefined ? Buffer.from(left) : read();
    if (bytes) {
      try {
        // Read as the agent server's parser reads bodies (router.ts): text/plain and unlabelled too.
        if (readsAsJson(req.headers['content-type'], true)) setJsonBody(req, bytes, config);
      } catch (error) {
        return next(error);
      }
    }
    for (const [name, value] of response.headers) {
      if (name === FALL_THROUGH || name === 'content-length' || name === 'content-type' || name === 'set-cookie') continue;
      res.setHeader(name, value);
    }
    for (const cookie of response.headers.getSetCookie()) res.append('Set-Cookie', cookie);
    next();
  };
}

/** The request as the app sees it, and what of its body the app read off the wire (undefined if nothing). */
function toFetchRequest(req: ExpressRequest, key: string): { request: Request; read: () => Buffer | undefined } {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  headers.set(REQUEST_KEY, key);
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const read: Buffer[] = [];
  let started = false;
  const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.originalUrl}`, {
    method: req.method,
    headers,
    // Read only if the app asks for it, so a request that falls through still has its body for us.
    body: hasBody ? lazyBody(req, read, () => (started = true)) : undefined,
    duplex: 'half',
  } as RequestInit);
  return { request, read: () => (started ? Buffer.concat(read) : undefined) };
}

function lazyBody(req: ExpressRequest, read: Buffer[], onStart: () => void): ReadableStream<Uint8Array> {
  let chunks: AsyncIterator<Buffer> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!chunks) onStart();
        chunks ??= req[Symbol.asyncIterator]();
        const { value, done } = await chunks.next();
        if (done) controller.close();
        else {
          read.push(value);
          controller.enqueue(new Uint8Array(value));
        }
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
