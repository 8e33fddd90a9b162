// Hostile or mistaken requests to the agent server: each is a 4xx in plain text (what the SDK reports
// as "HTTP 4xx: <message>"), and the same server keeps working for the next request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe();
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

const nested = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
const send = (method: string, path: string, body?: string) =>
  fetch(`${server.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body });

async function stillWorks() {
  const thread = await server.client.threads.create({ metadata: { after: 'attack' } });
  expect(await server.client.runs.wait(thread.thread_id, 'nested', { input: {} })).toEqual({ trail: ['parent', 'child', 'grandchild'] });
}

describe('graph errors on POST /threads/{id}/state', () => {
  it('an unknown as_node is 400 with LangGraph\'s message', async () => {
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'nested', { input: {} });
    await expect(server.client.threads.updateState(thread.thread_id, { values: { trail: ['x'] }, asNode: 'no_such_node' })).rejects.toThrow(
      /HTTP 400: .*no_such_node/,
    );
    await stillWorks();
  });

  it('values of the wrong type are a 4xx, not a 500', async () => {
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'nested', { input: {} });
    const response = await send('POST', `/threads/${thread.thread_id}/state`, JSON.stringify({ values: 42, as_node: 'parent' }));
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(response.headers.get('content-type')).toMatch(/text\/plain/);
    await stillWorks();
  });
});

describe('bodies', () => {
  it('JSON nested deeper than the limit is 422 in plain text, in thread metadata, search values and run input', async () => {
    const thread = await server.client.threads.create();
    for (const [path, body] of [
      ['/threads', `{"metadata":${nested(10_000)}}`],
      ['/threads/search', `{"values":${nested(10_000)}}`],
      [`/threads/${thread.thread_id}/runs`, `{"assistant_id":"nested","input":${nested(10_000)}}`],
    ] as const) {
      const response = await send('POST', path, body);
      expect(response.status).toBe(422);
      expect(await response.text()).toMatch(/nested more than 128 levels/);
    }
    await stillWorks();
  });

  it('U+0000 and lone surrogates are 422 naming the field', async () => {
    const metadata = await send('POST', '/threads', '{"metadata":{"note":"a\\u0000b"}}');
    expect(metadata.status).toBe(422);
    expect(await metadata.text()).toMatch(/body\.metadata\.note: .*cannot be stored/);
    const name = await send('POST', '/assistants', '{"graph_id":"nested","name":"bad \\udc00"}');
    expect(name.status).toBe(422);
    expect(await name.text()).toMatch(/body\.name/);
    await stillWorks();
  });
});

describe('smaller ones', () => {
  it('an unknown stream_mode on GET /threads/{id}/stream is refused like run create', async () => {
    const thread = await server.client.threads.create();
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/stream?stream_mode=bogus`);
    expect(response.status).toBe(422);
    expect(await response.text()).toMatch(/stream_mode/);
  });

  it('state at an unknown checkpoint is 404', async () => {
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'nested', { input: {} });
    const response = await fetch(`${server.url}/threads/${thread.thread_id}/state/${crypto.randomUUID()}`);
    expect(response.status).toBe(404);
    expect(await response.text()).toBe('Checkpoint not found');
  });

  it('a webhook at a loopback, link-local or private address is refused (SSRF)', async () => {
    const thread = await server.client.threads.create();
    for (const webhook of ['http://169.254.169.254/latest/meta-data', 'http://127.0.0.1:9/hook', 'http://localhost/hook', 'http://[::1]/hook', 'http://10.1.2.3/hook']) {
      await expect(server.client.runs.create(thread.thread_id, 'nested', { input: {}, webhook })).rejects.toThrow(/HTTP 422: body\.webhook/);
    }
    await stillWorks();
  });
});
