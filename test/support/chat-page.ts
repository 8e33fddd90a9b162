// A chat front-end of our own in place of LangChain's agent-chat-ui (test/fixtures/chat-page/page.js:
// the same requests, through the official SDK's Client in the browser), served from an origin of its
// own (its own port), with the UI's server-side passthrough at /api as `langgraph-nextjs-api-passthrough`
// forwards: the body as a string (so fetch labels it text/plain;charset=UTF-8), only the request's
// x-* and authorization headers, and the server's key added.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { build, type Rolldown } from 'vite';

const PAGE_SCRIPT = new URL('../fixtures/chat-page/page.js', import.meta.url).pathname;
const ROOT = new URL('../../', import.meta.url).pathname;

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Chat</title><link rel="icon" href="data:,"></head>
<body>
  <p id="status" aria-label="Server">connecting</p>
  <ul id="threads" aria-label="Threads"></ul>
  <ol id="messages" aria-label="Messages"></ol>
  <form id="composer" hidden><input id="input" aria-label="Message"><button>Send</button></form>
  <p id="error" role="alert"></p>
  <script type="module" src="/page.js"></script>
</body>
</html>`;

let script: Promise<string> | undefined;

/** The page's script with the SDK, bundled once per test file. */
function pageScript(): Promise<string> {
  script ??= build({
    configFile: false,
    logLevel: 'silent',
    root: ROOT,
    build: { write: false, minify: false, lib: { entry: PAGE_SCRIPT, formats: ['es'], fileName: 'page' } },
  }).then((output) => {
    const bundle = (Array.isArray(output) ? output[0] : output) as Rolldown.RolldownOutput;
    return (bundle.output[0] as Rolldown.OutputChunk).code;
  });
  return script;
}

export type ChatPage = {
  /** The page's origin; open `${url}/?apiUrl=…`. */
  url: string;
  /** The Content-Type of each body the passthrough sent on. */
  passthroughTypes: string[];
  stop(): Promise<void>;
};

// What of a caller's request the passthrough copies: x-* headers (the SDK's x-api-key among them) and authorization.
const COPIED = /^(x-.*|authorization)$/;
// What of the server's answer it does not copy: fetch has already decoded and de-chunked the body.
const NOT_COPIED = new Set(['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/**
 * Serves the chat page, and with `passthrough` its /api proxy to that server (its key added, as the
 * UI's server holds it). Listens on a port of its own: a page of another origin than the server's.
 */
export async function startChatPage(options: { passthrough?: { apiUrl: string; apiKey?: string } } = {}): Promise<ChatPage> {
  const code = await pageScript();
  const passthroughTypes: string[] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (path === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(code);
    if (options.passthrough && (path === '/api' || path.startsWith('/api/') || path.startsWith('/api?'))) {
      return void passthrough(req, res, options.passthrough, passthroughTypes).catch(() => res.destroy());
    }
    if (path === '/' || path.startsWith('/?')) return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    passthroughTypes,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function passthrough(req: IncomingMessage, res: ServerResponse, to: { apiUrl: string; apiKey?: string }, sentTypes: string[]): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (COPIED.test(name) && typeof value === 'string') headers[name] = value;
  if (to.apiKey) headers['x-api-key'] = to.apiKey;
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const aborted = new AbortController();
  res.once('close', () => aborted.abort());
  const request = new Request(`${to.apiUrl}${(req.url ?? '').replace(/^\/api/, '')}`, {
    method: req.method,
    headers,
    // As the UI's passthrough forwards it: the body as text, which fetch labels text/plain.
    body: hasBody ? Buffer.concat(chunks).toString('utf8') : undefined,
    signal: aborted.signal,
  });
  if (hasBody) sentTypes.push(request.headers.get('content-type') ?? '');
  const answer = await fetch(request);
  const answerHeaders: Record<string, string> = {};
  answer.headers.forEach((value, name) => {
    if (!NOT_COPIED.has(name)) answerHeaders[name] = value;
  });
  res.writeHead(answer.status, answerHeaders);
  res.flushHeaders();
  if (answer.body) Readable.fromWeb(answer.body as never).pipe(res);
  else res.end();
}
