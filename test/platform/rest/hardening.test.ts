// Small hostile requests: each gets its 4xx in its surface's shape, the server keeps answering while
// one is in flight, and the same workspace works normally afterwards.
import { request as httpRequest, Agent } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  platform = await startTestPlatform({ config: { AGENT_PLATFORM_INGEST_BODY_LIMIT: '20mb', AGENT_PLATFORM_JSON_MAX_DEPTH: '64' } });
  const tenant = await buildTenant(platform.system);
  key = tenant.adminKey;
  workspaceId = tenant.workspace.id;
});
afterAll(() => platform?.stop());

const headers = (extra: Record<string, string> = {}) => ({ 'x-api-key': key, 'content-type': 'application/json', ...extra });
const post = (path: string, body: string | Buffer, extra: Record<string, string> = {}) =>
  fetch(`${platform.url}${path}`, { method: 'POST', headers: headers(extra), body: typeof body === 'string' ? body : new Uint8Array(body) });

/** A GraphQL request asking for the GraphQL-over-HTTP media type, whose request errors are 400 (application/json gets 200). */
async function gql(query: string, variables?: Record<string, unknown>) {
  const response = await fetch(`${platform.url}/graphql`, {
    method: 'POST',
    headers: headers({ accept: 'application/graphql-response+json' }),
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: (await response.json()) as { data?: any; errors?: { message: string; extensions?: Record<string, any> }[] } };
}

/** /ok answers (generously bounded: the event loop is free, not "fast") while `attack` is in flight. */
async function okWhileInFlight(attack: Promise<Response>): Promise<Response> {
  const ok = await fetch(`${platform.url}/ok`, { signal: AbortSignal.timeout(10_000) });
  expect(ok.status).toBe(200);
  return attack;
}

/** A normal request of the same workspace still works. */
async function workspaceStillWorks() {
  const created = await post('/sessions', JSON.stringify({ name: `after ${crypto.randomUUID()}` }));
  expect(created.status).toBe(200);
  const listed = await fetch(`${platform.url}/sessions`, { headers: headers() });
  expect(listed.status).toBe(200);
}

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

/** A zstd frame declaring a ~1.9 GiB window, followed by many one-byte raw blocks. */
function zstdHugeWindow(blocks: number): Buffer {
  const body = [...ZSTD_MAGIC, 0x00, 0xa7];
  for (let i = 0; i < blocks; i++) body.push(i === blocks - 1 ? 0x09 : 0x08, 0x00, 0x00, 0x7b);
  return Buffer.from(body);
}

/** A zstd frame with an 8 MiB window whose RLE blocks (4 bytes, 128 KiB each) decode to `blocks` × 128 KiB. */
function zstdRleBomb(blocks: number): Buffer {
  const body = [...ZSTD_MAGIC, 0x00, 13 << 3];
  for (let i = 0; i < blocks; i++) body.push(i === blocks - 1 ? 0x03 : 0x02, 0x00, 0x10, 0x20);
  return Buffer.from(body);
}

describe('decompression bombs', () => {
  it('a zstd frame declaring a huge window is refused before decoding (413 {error, details})', async () => {
    for (const path of ['/runs/query', '/runs', '/sessions']) {
      const response = await okWhileInFlight(post(path, zstdHugeWindow(20_000), { 'content-encoding': 'zstd' }));
      expect(response.status).toBe(413);
      expect(await response.json()).toEqual({ error: expect.stringMatching(/window/), details: expect.any(String) });
    }
    const multipart = await okWhileInFlight(
      post('/runs/multipart', zstdHugeWindow(20_000), { 'content-encoding': 'zstd', 'content-type': 'multipart/form-data; boundary=x' }),
    );
    expect(multipart.status).toBe(413);
    await workspaceStillWorks();
  });

  it('zstd and gzip bodies that inflate past the limit stop at it (413), in parallel too', async () => {
    const zstd = await okWhileInFlight(post('/runs/query', zstdRleBomb(1_000), { 'content-encoding': 'zstd' }));
    expect(zstd.status).toBe(413);
    // ~100 KB that inflates to 95 MB, eight at once, against a 20 MB ingest limit.
    const gzip = gzipSync(Buffer.alloc(95 * 1024 * 1024, 0x20));
    const attacks = Promise.all(Array.from({ length: 8 }, () => post('/runs', gzip, { 'content-encoding': 'gzip' })));
    const ok = await fetch(`${platform.url}/ok`, { signal: AbortSignal.timeout(10_000) });
    expect(ok.status).toBe(200);
    for (const response of await attacks) {
      expect(response.status).toBe(413);
      expect(await response.json()).toMatchObject({ error: expect.stringMatching(/exceeds/) });
    }
    await workspaceStillWorks();
  });

  it('well-formed compressed bodies still work', async () => {
    const body = gzipSync(JSON.stringify({ name: `gz ${crypto.randomUUID()}` }));
    expect((await post('/sessions', body, { 'content-encoding': 'gzip' })).status).toBe(200);
  });
});

/** JSON nested `depth` deep: {"a":{"a":…}}. */
const nested = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
const nestedList = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('JSON nesting limit, in every surface dialect', () => {
  it('ingestion answers 422 {error, details} for deep run inputs (batch and single), and stores nothing', async () => {
    const id = crypto.randomUUID();
    const run = `{"id":"${id}","name":"deep","run_type":"chain","start_time":"2026-01-01T00:00:00Z","trace_id":"${id}","dotted_order":"20260101T000000000000Z${id}","inputs":${nested(5_000)}}`;
    const batch = await okWhileInFlight(post('/runs/batch', `{"post":[${run}]}`));
    expect(batch.status).toBe(422);
    expect(await batch.json()).toEqual({ error: expect.stringMatching(/nested more than 64/), details: expect.any(String) });
    expect((await post('/runs', run)).status).toBe(422);
    expect((await fetch(`${platform.url}/runs/${id}`, { headers: headers() })).status).toBe(404);
    const query = await post('/runs/query', JSON.stringify({ session: [] }).replace('[]', nestedList(10_000)));
    expect(query.status).toBe(422);
    await workspaceStillWorks();
  });

  it('a deep multipart field is 422 naming the part', async () => {
    const id = crypto.randomUUID();
    const runPart = JSON.stringify({ id, name: 'deep', run_type: 'chain', start_time: '2026-01-01T00:00:00Z', trace_id: id, dotted_order: `20260101T000000000000Z${id}` });
    const body = [
      '--x', `Content-Disposition: form-data; name="post.${id}"`, 'Content-Type: application/json', '', runPart,
      '--x', `Content-Disposition: form-data; name="post.${id}.inputs"`, 'Content-Type: application/json', '', nested(5_000),
      '--x--', '',
    ].join('\r\n');
    const response = await post('/runs/multipart', body, { 'content-type': 'multipart/form-data; boundary=x' });
    expect(response.status).toBe(422);
    expect((await response.json()).error).toContain(`post.${id}.inputs`);
  });

  it('the platform API answers 422 {detail: [{loc, msg, type}]}', async () => {
    const response = await post('/api/v1/workspaces', `{"display_name":"x","extra":${nested(10_000)}}`);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ detail: [{ loc: ['body'], msg: expect.stringMatching(/nested more than 64/), type: 'json_too_deep' }] });
  });

  it('GraphQL answers 400 with a GraphQL error for deep variables, deep selections and huge documents', async () => {
    const deepVariables = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: headers(),
      body: `{"query":"{ viewer { user { email } } }","variables":${nested(10_000)}}`,
    });
    expect(deepVariables.status).toBe(400);
    expect((await deepVariables.json()).errors[0].message).toMatch(/nested more than 64/);

    const deepSelection = await gql(`{ ${'viewer { workspaces { '.repeat(1_500)}id${' } }'.repeat(1_500)} }`);
    expect(deepSelection.status).toBe(400);
    expect(deepSelection.body.errors?.[0]?.message).toMatch(/Document (contains more th.. 2000 tokens|is nested more than 64 levels)/);

    const deepList = await gql(`{ viewer { user { email } } } # ${'['.repeat(20_000)}`);
    expect(deepList.status).toBe(200); // a comment is not tokens
    const listLiteral = await gql(`query ($x: Int = ${'['.repeat(20_000)}${']'.repeat(20_000)}) { viewer { user { email } } }`);
    expect(listLiteral.status).toBe(400);

    const tooDeep = await gql(`{ viewer { workspaces { tracingProjects { edges { node { runs { edges { node { children { edges { node { children { edges { node { children { edges { node { id } } } } } } } } } } } } } } } } } }`);
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.errors?.[0]?.extensions?.code).not.toBe('INTERNAL_SERVER_ERROR');

    expect((await graphql(platform.url, '{ viewer { user { email } } }', { key })).status).toBe(200);
  });
});

describe('strings PostgreSQL refuses (U+0000, lone surrogates)', () => {
  it('are 422 naming the field on the platform API and tracing projects', async () => {
    const workspace = await post('/api/v1/workspaces', '{"display_name":"bad\\u0000name"}');
    expect(workspace.status).toBe(422);
    expect((await workspace.json()).detail[0]).toMatchObject({ loc: ['body', 'display_name'], type: 'string_unstorable' });

    const session = await post('/sessions', '{"name":"ok","extra":{"k\\ud800":1}}');
    expect(session.status).toBe(422);
    expect((await session.json()).error).toContain('extra');
    // A paired surrogate is a normal character.
    expect((await post('/sessions', `{"name":"emoji \\ud83d\\ude00 ${crypto.randomUUID()}"}`)).status).toBe(200);
    await workspaceStillWorks();
  });

  it('are a validation error in GraphQL, from variables or string literals, never INTERNAL_SERVER_ERROR', async () => {
    const fromVariables = await graphql(platform.url, 'mutation ($name: String!) { createTracingProject(input: { name: $name }) { __typename } }', {
      key,
      variables: { name: 'a\u0000b' },
    });
    expect(fromVariables.status).toBe(400);
    expect(JSON.stringify(fromVariables.body)).not.toContain('INTERNAL_SERVER_ERROR');

    const fromLiteral = await graphql(platform.url, 'mutation { createTracingProject(input: { name: "a\\u0000b" }) { __typename ... on AppError { message } } }', { key });
    expect(JSON.stringify(fromLiteral.body)).not.toContain('INTERNAL_SERVER_ERROR');
    expect(JSON.stringify(fromLiteral.body)).toMatch(/cannot be stored/);
  });
});

describe('keep-alive after 413', () => {
  it('the next request on a kept-alive connection is answered', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, path: string, body?: Buffer) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const request = httpRequest(`${platform.url}${path}`, { method, agent, headers: headers(), timeout: 10_000 }, (response) => {
          let text = '';
          response.on('data', (chunk) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode!, text }));
        });
        request.on('error', reject);
        request.on('timeout', () => request.destroy(new Error('timed out')));
        request.end(body);
      });
    const tooLarge = await send('POST', '/runs/query', Buffer.alloc(2 * 1024 * 1024, 0x20));
    expect(tooLarge.status).toBe(413);
    const next = await send('GET', '/sessions');
    expect(next.status).toBe(200);
    const platformTooLarge = await send('POST', '/api/v1/workspaces', Buffer.alloc(11 * 1024 * 1024, 0x20));
    expect(platformTooLarge.status).toBe(413);
    expect((await send('GET', '/api/v1/workspaces')).status).toBe(200);
    agent.destroy();
  });

  it('fetch gets the 413, not a reset, when the body is refused while it is still being sent', async () => {
    // Chunked (no declared length), sent in pieces: the parser refuses it after the first megabytes,
    // while the rest is still coming, as with a large upload on a real network.
    const chunk = new Uint8Array(256 * 1024).fill(0x20);
    const slowBody = (chunks: number) =>
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (chunks-- === 0) return controller.close();
          await new Promise((resolve) => setTimeout(resolve, 5));
          controller.enqueue(chunk);
        },
      });
    const refused = (path: string, chunks: number) =>
      fetch(`${platform.url}${path}`, { method: 'POST', headers: headers(), body: slowBody(chunks), duplex: 'half' } as RequestInit);
    const agentServer = await refused('/runs/query', 24);
    expect([agentServer.status, await agentServer.json()]).toMatchObject([413, { error: expect.stringMatching(/^Request body exceeds/) }]);
    const platformApi = await refused('/api/v1/workspaces', 64);
    expect([platformApi.status, await platformApi.json()]).toEqual([413, { detail: 'Request body is too large.' }]);
  });
});

describe('graphql-ws', () => {
  /** Opens a graphql-transport-ws socket, sends connection_init, and collects messages until it closes or `until` says so. */
  function session(connectionParams: Record<string, string>, after?: (socket: WebSocket, message: any) => boolean) {
    return new Promise<{ code?: number; messages: any[] }>((resolve, reject) => {
      const socket = new WebSocket(`${platform.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
      const messages: any[] = [];
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: connectionParams })));
      socket.on('message', (data) => {
        const message = JSON.parse(String(data));
        messages.push(message);
        if (after?.(socket, message)) {
          socket.close(1000);
        }
      });
      socket.on('close', (code) => resolve({ code, messages }));
      socket.on('error', reject);
    });
  }

  it('refuses a missing or unknown key at connection_init (4403), before any acknowledgement', async () => {
    for (const params of [{}, { 'x-api-key': 'lsv2_pt_nope' }] as Record<string, string>[]) {
      const { code, messages } = await session(params);
      expect(code).toBe(4403);
      expect(messages).toEqual([]);
    }
  });

  it('answers syntax errors, deep documents and bad variables with `error` messages on an open socket', async () => {
    const queries = [
      { id: '1', query: '{ viewer { ' },
      { id: '2', query: `{ ${'viewer { workspaces { '.repeat(1_500)}id${' } }'.repeat(1_500)} }` },
      { id: '3', query: 'query ($n: String) { viewer { user { email } } }', variables: JSON.parse(nested(200)) },
      { id: '4', query: '{ viewer { user { email } } }' },
    ];
    let finished = 0;
    const { code, messages } = await session({ 'x-api-key': key }, (socket, message) => {
      if (message.type === 'connection_ack') for (const { id, ...payload } of queries) socket.send(JSON.stringify({ id, type: 'subscribe', payload }));
      if (message.type === 'error' || message.type === 'complete') finished++;
      return finished === queries.length;
    });
    expect(code).toBe(1000);
    const byId = (id: string) => messages.filter((m) => m.id === id).map((m) => m.type);
    expect(byId('1')).toEqual(['error']);
    expect(byId('2')).toEqual(['error']);
    expect(byId('3')).toEqual(['error']);
    expect(byId('4')).toEqual(['next', 'complete']);
  });

  it('refuses the next operation of a socket whose key was revoked after connecting, and then the connection itself (4403)', async () => {
    const created = await fetch(`${platform.url}/api/v1/api-key`, { method: 'POST', headers: headers(), body: JSON.stringify({ description: 'revoked while connected' }) });
    expect(created.status).toBe(200);
    const { id: keyId, key: revocable } = (await created.json()) as { id: string; key: string };
    const query = { query: '{ viewer { user { email } } }' };
    let revoked = false;
    const { messages } = await session({ 'x-api-key': revocable }, (socket, message) => {
      if (message.type === 'connection_ack') socket.send(JSON.stringify({ id: 'before', type: 'subscribe', payload: query }));
      if (message.id === 'before' && message.type === 'complete') {
        void fetch(`${platform.url}/api/v1/api-key/${keyId}`, { method: 'DELETE', headers: headers() }).then((response) => {
          expect(response.status).toBe(200);
          revoked = true;
          socket.send(JSON.stringify({ id: 'after', type: 'subscribe', payload: query }));
        });
      }
      return message.id === 'after' && (message.type === 'error' || message.type === 'complete');
    });
    expect(revoked).toBe(true);
    expect(messages.filter((m) => m.id === 'before').map((m) => m.type)).toEqual(['next', 'complete']);
    const after = messages.filter((m) => m.id === 'after');
    expect(after.map((m) => m.type)).toEqual(['error']);
    expect(after[0].payload[0].extensions.code).toBe('UNAUTHENTICATED');

    const reconnect = await session({ 'x-api-key': revocable });
    expect(reconnect.code).toBe(4403);
    expect(reconnect.messages).toEqual([]);
  });

  it('closes a socket whose message is larger than the HTTP body limit (1009)', async () => {
    const { code } = await session({ 'x-api-key': key }, (socket, message) => {
      if (message.type === 'connection_ack') {
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `# ${'x'.repeat(11 * 1024 * 1024)}\n{ viewer { user { email } } }` } }));
      }
      return false;
    });
    expect(code).toBe(1009);
  });
});

describe('errors echo and log a bounded amount', () => {
  it('a 5 MB variable is not echoed whole', async () => {
    const response = await gql('query ($n: Int) { viewer { user { email } } }', { n: 'x'.repeat(5 * 1024 * 1024) });
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.body).length).toBeLessThan(10_000);
  });
});

describe('smaller ones', () => {
  it('/graphql with an unsupported content type says why in its 415', async () => {
    const response = await fetch(`${platform.url}/graphql`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'text/csv' }, body: 'a,b' });
    expect(response.status).toBe(415);
    expect(await response.text()).toMatch(/application\/json/);
  });

  it('/ok reflects the database', async () => {
    expect(await (await fetch(`${platform.url}/ok`)).json()).toMatchObject({ ok: true, checks: { postgres: { status: 'ok' }, event_bus: { status: 'ok' } } });
    expect(workspaceId).toBeTruthy();
  });
});
