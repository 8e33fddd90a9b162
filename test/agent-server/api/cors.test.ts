// Browser pages of other origins at the agent server (langgraph.json `http.cors`, as the reference
// server and the hosted Agent Server read it), and bodies read as the reference reads them. At
// `serve` with no `http.cors`, any origin may call it, as `langgraph dev` lets a chat UI on another
// port; at a deployment's url through the platform's gateway, the deployment's own policy answers,
// preflights included (forwarded without a platform key: browsers send none), and pages of origins it
// does not allow get no Access-Control-* headers. A JSON body labelled text/plain (what a proxy that
// forwards the body as a string sends) or not labelled runs as one labelled JSON; a body that is not
// JSON is a 422 in the agent server's plain-text shape. The platform's own APIs get no CORS.
import { writeFileSync, readFileSync } from 'node:fs';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildTenant } from '../../support/factories.js';
import { startTestLocalDeployment, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { collect, fixtureConfig, removeDir, startServe, type ServeProcess } from '../../support/serve.js';
import { startChatPage } from '../../support/chat-page.js';

const PAGE = 'http://localhost:5173';
const OTHER = 'https://elsewhere.example';

/** A browser's preflight for `method` at `url` from `origin`, asking to send `headers`. */
function preflight(url: string, origin: string, method = 'POST', headers = 'content-type,x-api-key') {
  return fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers } });
}

/** The Access-Control-* headers of an answer. */
function corsHeaders(response: Response): Record<string, string> {
  const found: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name.startsWith('access-control-')) found[name] = value;
  });
  return found;
}

const listed = (value: string | null) => (value ?? '').split(',').map((item) => item.trim().toLowerCase());

const say = (content: string) => ({ assistant_id: 'chat', input: { messages: [{ type: 'human', content }] } });

describe('at serve, without http.cors', () => {
  let serve: ServeProcess;
  let client: Client;
  beforeAll(async () => {
    serve = await startServe({ project: 'chat-ui' });
    client = serve.client;
  }, 120_000);
  afterAll(async () => {
    await serve?.stop();
    removeDir(serve?.dir ?? '');
  });

  it('answers the preflight of every route a chat UI uses, streams and the thread stream included, for any origin', async () => {
    const threadId = (await client.threads.create()).thread_id;
    const routes: [string, string][] = [
      ['GET', '/info'],
      ['POST', '/threads/search'],
      ['POST', '/threads'],
      ['POST', `/threads/${threadId}/runs/stream`],
      ['POST', `/threads/${threadId}/history`],
      ['GET', `/threads/${threadId}/state`],
      ['GET', `/threads/${threadId}/runs/00000000-0000-4000-8000-000000000000/stream`],
      ['POST', '/runs/stream'],
      ['POST', `/threads/${threadId}/stream/events`],
      ['POST', `/threads/${threadId}/commands`],
      ['DELETE', `/threads/${threadId}`],
      ['PATCH', `/threads/${threadId}`],
    ];
    for (const [method, path] of routes) {
      const response = await preflight(`${serve.url}${path}`, PAGE, method);
      expect(response.status, `${method} ${path}`).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(listed(response.headers.get('access-control-allow-methods'))).toContain(method.toLowerCase());
      expect(listed(response.headers.get('access-control-allow-headers'))).toEqual(['content-type', 'x-api-key']);
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it('lets a page read its answers, errors and streams included, and the headers the SDK reads', async () => {
    const info = await fetch(`${serve.url}/info`, { headers: { origin: PAGE } });
    expect(info.status).toBe(200);
    expect(info.headers.get('access-control-allow-origin')).toBe('*');
    expect(listed(info.headers.get('access-control-expose-headers'))).toEqual(expect.arrayContaining(['content-location', 'location', 'x-pagination-total', 'x-pagination-next']));
    const missing = await fetch(`${serve.url}/threads/00000000-0000-4000-8000-000000000000`, { headers: { origin: PAGE } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('access-control-allow-origin')).toBe('*');

    const threadId = (await client.threads.create()).thread_id;
    const stream = await fetch(`${serve.url}/threads/${threadId}/runs/stream`, {
      method: 'POST',
      headers: { origin: PAGE, 'content-type': 'application/json' },
      body: JSON.stringify({ ...say('hello'), stream_mode: ['messages-tuple'], stream_resumable: true }),
    });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('access-control-allow-origin')).toBe('*');
    expect(stream.headers.get('content-location')).toMatch(new RegExp(`/threads/${threadId}/runs/`));
    expect(stream.headers.get('location')).toMatch(/\/stream$/);
    expect(await stream.text()).toContain('event: messages');
  });

  it('runs a JSON body labelled text/plain, or not labelled, as one labelled JSON', async () => {
    const threadId = (await client.threads.create()).thread_id;
    const asText = await fetch(`${serve.url}/threads/${threadId}/runs/wait`, { method: 'POST', headers: { 'content-type': 'text/plain;charset=UTF-8' }, body: JSON.stringify(say('as text')) });
    expect(asText.status).toBe(200);
    expect(JSON.stringify(await asText.json())).toContain('You said: as text');
    // A body given as bytes goes without a Content-Type.
    const unlabelled = await fetch(`${serve.url}/threads/${threadId}/runs/wait`, { method: 'POST', body: new TextEncoder().encode(JSON.stringify(say('unlabelled'))) });
    expect(unlabelled.status).toBe(200);
    expect(JSON.stringify(await unlabelled.json())).toContain('You said: unlabelled');
    const state = await client.threads.getState<{ messages: { content: string }[] }>(threadId);
    expect(state.values.messages.map((message) => message.content)).toEqual(['as text', 'You said: as text', 'unlabelled', 'You said: unlabelled']);
  });

  it('answers a text/plain body that is not JSON with a 422 in its plain-text shape, and keeps the size and depth limits', async () => {
    const threadId = (await client.threads.create()).thread_id;
    const notJson = await fetch(`${serve.url}/threads/${threadId}/runs`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello there' });
    expect(notJson.status).toBe(422);
    expect(notJson.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await notJson.text()).toBe('Request body is not valid JSON.');
    expect(await client.runs.list(threadId)).toEqual([]);

    const deep = await fetch(`${serve.url}/threads/search`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `{"metadata":${'['.repeat(5000)}${']'.repeat(5000)}}` });
    expect(deep.status).toBe(422);
    const large = await fetch(`${serve.url}/threads`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ metadata: { big: 'x'.repeat(11 * 1024 * 1024) } }) });
    expect(large.status).toBe(413);
  });

  it('serves the SDK through a passthrough that forwards bodies as text, as agent-chat-ui’s proxy does', async () => {
    const page = await startChatPage({ passthrough: { apiUrl: serve.url } });
    try {
      const proxied = new Client({ apiUrl: `${page.url}/api`, callerOptions: { maxRetries: 0 } });
      const thread = await proxied.threads.create({ metadata: { via: 'passthrough' } });
      let runCreated: { run_id: string } | undefined;
      const parts = await collect(
        proxied.runs.stream(thread.thread_id, 'chat', { input: say('through the proxy').input, streamMode: ['values', 'messages-tuple'], onRunCreated: (run) => (runCreated = run) }),
      );
      const tokens = parts.filter((part) => part.event === 'messages').map((part) => (part.data as unknown as [{ content: string }])[0].content);
      expect(tokens.join('')).toContain('You said: through the proxy');
      expect(tokens.length).toBeGreaterThan(1);
      expect(runCreated?.run_id).toBeTruthy();
      const state = await proxied.threads.getState<{ messages: { content: string }[] }>(thread.thread_id);
      expect(state.values.messages.at(-1)?.content).toBe('You said: through the proxy');
      expect((await proxied.threads.getHistory(thread.thread_id)).length).toBeGreaterThan(0);
      const found = await proxied.threads.search({ metadata: { graph_id: 'chat', via: 'passthrough' } });
      expect(found.map((item) => item.thread_id)).toEqual([thread.thread_id]);
      expect(page.passthroughTypes.length).toBeGreaterThan(0);
      expect(new Set(page.passthroughTypes)).toEqual(new Set(['text/plain;charset=UTF-8']));
    } finally {
      await page.stop();
    }
  });
});

describe('at a deployment’s url through the gateway, with its own http.cors', () => {
  let platform: TestPlatform;
  let local: Awaited<ReturnType<typeof startTestLocalDeployment>>;
  let dir: string;
  let key: string;
  let base: string;

  beforeAll(async () => {
    platform = await startTestPlatform();
    const fixture = fixtureConfig('chat-ui');
    dir = fixture.dir;
    const config = JSON.parse(readFileSync(fixture.configPath, 'utf8'));
    config.http = { cors: { allow_origins: [PAGE], allow_headers: ['Content-Type'], max_age: 600, expose_headers: ['X-Request-Id'] } };
    writeFileSync(fixture.configPath, JSON.stringify(config));
    const tenant = await buildTenant(platform.system);
    key = tenant.adminKey;
    local = await startTestLocalDeployment(platform, { configPath: fixture.configPath, workspaceId: tenant.workspace.id });
    base = `${platform.url}/deployments/${local.deploymentId}`;
  }, 120_000);
  let stopped = false;
  afterAll(async () => {
    if (!stopped) await local?.stop();
    await platform?.stop();
    removeDir(dir);
  });

  it('forwards a preflight without a platform key, which the deployment’s policy answers, the key’s header allowed', async () => {
    for (const path of ['/threads/search', '/info', '/threads/00000000-0000-4000-8000-000000000000/runs/stream']) {
      const response = await preflight(`${base}${path}`, PAGE);
      expect(response.status, path).toBe(204);
      expect(corsHeaders(response)).toEqual({
        'access-control-allow-origin': PAGE,
        'access-control-allow-methods': 'GET, HEAD, PUT, POST, DELETE, PATCH',
        'access-control-allow-headers': 'Content-Type, X-Api-Key',
        'access-control-max-age': '600',
      });
      expect(listed(response.headers.get('vary'))).toContain('origin');
    }
  });

  it('gives an origin the policy does not allow no Access-Control-* headers', async () => {
    const refused = await preflight(`${base}/threads/search`, OTHER);
    expect(refused.status).toBe(403);
    expect(corsHeaders(refused)).toEqual({});
    const read = await fetch(`${base}/info`, { headers: { origin: OTHER, 'x-api-key': key } });
    expect(read.status).toBe(200);
    expect(corsHeaders(read)).toEqual({});
  });

  it('lets an allowed page read its answers and the headers the SDK reads, and its key reaches the gateway', async () => {
    const thread = await fetch(`${base}/threads`, { method: 'POST', headers: { origin: PAGE, 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' });
    expect(thread.status).toBe(200);
    expect(thread.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(listed(thread.headers.get('access-control-expose-headers'))).toEqual(['content-location', 'location', 'x-pagination-total', 'x-pagination-next', 'x-request-id']);
    const { thread_id: threadId } = (await thread.json()) as { thread_id: string };
    const run = await fetch(`${base}/threads/${threadId}/runs/wait`, { method: 'POST', headers: { origin: PAGE, 'x-api-key': key, 'content-type': 'text/plain;charset=UTF-8' }, body: JSON.stringify(say('through the gateway')) });
    expect(run.status).toBe(200);
    expect(run.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(JSON.stringify(await run.json())).toContain('You said: through the gateway');
    // Without a key, the gateway's refusal, which the page reads (its origin allowed); another origin's page does not.
    const refused = await fetch(`${base}/info`, { headers: { origin: PAGE } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(corsHeaders(await fetch(`${base}/info`, { headers: { origin: OTHER } }))).toEqual({});
    // No deployment there: nothing to answer for.
    const nowhere = await fetch(`${platform.url}/deployments/${crypto.randomUUID()}/info`, { headers: { origin: PAGE, 'x-api-key': key } });
    expect(nowhere.status).toBe(404);
    expect(corsHeaders(nowhere)).toEqual({});
  });

  it('refuses what a page of an origin it does not allow asks beyond reading, over HTTP and the thread stream’s WebSocket', async () => {
    const client = new Client({ apiUrl: base, apiKey: key, callerOptions: { maxRetries: 0 } });
    const { thread_id: threadId } = await client.threads.create();
    // A text/plain body goes without a preflight: the request itself is refused, not only its answer hidden.
    const run = await fetch(`${base}/threads/${threadId}/runs`, { method: 'POST', headers: { origin: OTHER, 'x-api-key': key, 'content-type': 'text/plain' }, body: JSON.stringify(say('unwanted')) });
    expect(run.status).toBe(403);
    expect(await run.text()).toContain(`Origin ${OTHER} is not allowed`);
    expect(await client.runs.list(threadId)).toEqual([]);

    const socket = (origin: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${base.replace('http', 'ws')}/threads/${threadId}/stream/events`, { headers: { origin, 'x-api-key': key } });
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('error', reject);
      });
    expect(await socket(OTHER)).toBe(403);
    expect(await socket(PAGE)).toBe(101);
  });

  it("answers for the deployment while its agent server is down: the preflight by its policy, the 503 readable by the page", async () => {
    await local.stop();
    stopped = true;
    // Each waits the gateway's while for the agent server to come back (15 s), then answers: at once, together.
    const [answered, refused, unavailable] = await Promise.all([
      preflight(`${base}/threads/search`, PAGE),
      preflight(`${base}/threads/search`, OTHER),
      fetch(`${base}/threads/search`, { method: 'POST', headers: { origin: PAGE, 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' }),
    ]);
    expect(answered.status).toBe(204);
    expect(answered.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(corsHeaders(refused)).toEqual({});
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('access-control-allow-origin')).toBe(PAGE);
  }, 60_000);

  it('adds no CORS to the platform’s own APIs', async () => {
    for (const path of ['/v2/deployments', '/api/v1/workspaces/current/usage', '/']) {
      const answered = await preflight(`${platform.url}${path}`, PAGE, 'GET');
      expect(corsHeaders(answered), path).toEqual({});
      const read = await fetch(`${platform.url}${path}`, { headers: { origin: PAGE, 'x-api-key': key } });
      expect(corsHeaders(read), path).toEqual({});
    }
  });
});
