// The runtime's end of the request/reply channel (services/deployments/runtime-protocol.ts): a small
// HTTP server that answers graph requests for the deployment it runs and, for a deployed runtime, the
// project's own HTTP app (`http.app`) and its generative UI (`ui`), which the API forwards the requests
// its routes do not own to.
// Only requests signed with the installation's secret key for this runtime are answered.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express from 'express';
import { isAppError } from '../errors.js';
import { uiRouter } from '../rest/agent-server/ui.routes.js';
import { errorHandler } from '../rest/middleware/errors.js';
import { jsonBody } from '../rest/middleware/json-body.js';
import {
  APP_FALL_THROUGH_HEADER,
  type GraphReply,
  type GraphRequest,
  RUNTIME_APP_PREFIX,
  RUNTIME_DEPLOYMENT_URL_HEADER,
  RUNTIME_EXPIRES_HEADER,
  RUNTIME_REQUEST_PATH,
  RUNTIME_SIGNATURE_HEADER,
  signedAppRequest,
  signedMessage,
} from '../services/deployments/runtime-protocol.js';
import type { CustomApp, UiBundles } from '../services/deployments/runtime-protocol.js';
import { answerGraphRequest } from './graph-reads.js';
import type { RuntimeContext } from './runtime-context.js';

export type RuntimeServer = { url: string; stop(): Promise<void> };

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The host other processes reach this runtime at: the bound address, or, when bound to every
 * interface, the host of the configured public URL (the machine's name as the api sees it), else loopback.
 */
export function advertisedHost(host: string, publicUrl: string | undefined): string {
  if (host !== '0.0.0.0' && host !== '::') return host.includes(':') ? `[${host}]` : host;
  return publicUrl ? new URL(publicUrl).hostname : '127.0.0.1';
}

/**
 * Hands a forwarded request to the project's app (its path relative to the deployment's url) and
 * streams the answer back. A request none of the app's routes match (or any, without an app) is
 * answered 404 with APP_FALL_THROUGH_HEADER, so the API answers it as its own 404.
 */
async function serveApp(app: CustomApp | undefined, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const fallThrough = () => void res.writeHead(404, { [APP_FALL_THROUGH_HEADER]: '1' }).end();
  if (!app) return fallThrough();
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name === RUNTIME_SIGNATURE_HEADER || name === RUNTIME_EXPIRES_HEADER || name === 'connection' || name === 'transfer-encoding') continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const request = new Request(`http://${req.headers.host ?? 'localhost'}${path}`, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    duplex: 'half',
  } as RequestInit);
  const response = await app.fetch(request);
  if (response.headers.has(APP_FALL_THROUGH_HEADER) || (response.status === 404 && typeof app.notFound !== 'function')) return fallThrough();
  const outgoing: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) if (name !== 'set-cookie' && name !== 'content-length') outgoing[name] = value;
  const cookies = response.headers.getSetCookie();
  if (cookies.length) outgoing['set-cookie'] = cookies;
  res.writeHead(response.status, outgoing);
  if (!response.body) return void res.end();
  await pipeline(Readable.fromWeb(response.body as never), res);
}

/**
 * The project's generative UI, answered by the router `serve` uses, with its links at the deployment's
 * url (which the API sends). A `/ui/` path it has no route for falls through to the API's 404.
 */
function uiApp(ctx: RuntimeContext, ui: UiBundles): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(jsonBody(ctx.config, { strict: false }));
  app.use(uiRouter(ui, { urlOf: (req) => req.get(RUNTIME_DEPLOYMENT_URL_HEADER) }));
  app.use((_req, res) => void res.writeHead(404, { [APP_FALL_THROUGH_HEADER]: '1' }).end());
  app.use(errorHandler('plain', ctx.logger));
  return app;
}

/**
 * Listens on `host` (a free port) and answers the graph requests of runtime `runtimeId`, and the
 * project's `customApp` and `ui` bundles when given.
 */
export async function startRuntimeServer(
  ctx: RuntimeContext,
  runtimeId: string,
  host: string,
  project: { customApp?: CustomApp; ui?: UiBundles } = {},
): Promise<RuntimeServer> {
  const { customApp } = project;
  const ui = project.ui ? uiApp(ctx, project.ui) : undefined;
  // Hono runs its middleware, then this handler, when no route matches: the marker says "the API's".
  customApp?.notFound?.(() => new Response(null, { status: 404, headers: { [APP_FALL_THROUGH_HEADER]: '1' } }));
  const server = createServer((req, res) => {
    const reply = (status: number, body: GraphReply | { detail: string }) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = req.url ?? '/';
    if (url === RUNTIME_APP_PREFIX || url.startsWith(`${RUNTIME_APP_PREFIX}/`) || url.startsWith(`${RUNTIME_APP_PREFIX}?`)) {
      const path = url.slice(RUNTIME_APP_PREFIX.length) || '/';
      const signature = req.headers[RUNTIME_SIGNATURE_HEADER];
      const expires = Number(req.headers[RUNTIME_EXPIRES_HEADER]);
      if (typeof signature !== 'string' || !(expires > Date.now()) || !ctx.secrets.verify(signedAppRequest(runtimeId, req.method ?? 'GET', path, expires), signature)) {
        return reply(401, { detail: 'Bad signature' });
      }
      const appPath = path.startsWith('/') ? path : `/${path}`;
      if (ui && appPath.startsWith('/ui/')) {
        req.url = appPath;
        return void ui(req, res);
      }
      void serveApp(customApp, req, res, appPath).catch((error: unknown) => {
        ctx.logger.error({ err: error, path }, 'the HTTP app failed');
        if (!res.headersSent) reply(500, { detail: 'Internal Server Error' });
        else res.destroy();
      });
      return;
    }
    if (req.method !== 'POST' || url !== RUNTIME_REQUEST_PATH) return reply(404, { detail: 'Not Found' });
    void readBody(req).then(async (body) => {
      const signature = req.headers[RUNTIME_SIGNATURE_HEADER];
      if (typeof signature !== 'string' || !ctx.secrets.verify(signedMessage(runtimeId, body), signature)) return reply(401, { detail: 'Bad signature' });
      try {
        reply(200, { result: await answerGraphRequest(ctx, JSON.parse(body) as GraphRequest) });
      } catch (error) {
        if (isAppError(error)) return reply(200, { error: { code: error.code, message: error.message, details: error.details } });
        ctx.logger.error({ err: error }, 'a graph request failed');
        reply(500, { detail: 'Internal Server Error' });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = advertisedHost(host, ctx.config.publicUrl);
  return {
    url: `http://${shownHost}:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
