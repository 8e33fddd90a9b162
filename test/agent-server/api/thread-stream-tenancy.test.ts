// Who may use a deployment's thread stream at /deployments/<id> on the platform: as every thread
// route, a key of its organization with a role in its workspace. A viewer subscribes and reads; only
// writers start runs; no key is 401 and another organization's key 404, over HTTP and the WebSocket.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { newId } from '../../../src/ids.js';
import { buildTenant } from '../../support/factories.js';
import { startTestLocalDeployment, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { fixtureConfig, removeDir } from '../../support/serve.js';

let platform: TestPlatform;
let local: Awaited<ReturnType<typeof startTestLocalDeployment>>;
let dir: string;
let deploymentId: string;
let keys: Record<'admin' | 'viewer' | 'otherOrganization', string>;

beforeAll(async () => {
  platform = await startTestPlatform();
  const fixture = fixtureConfig('thread-stream');
  dir = fixture.dir;
  const [tenant, other] = [await buildTenant(platform.system), await buildTenant(platform.system)];
  keys = { admin: tenant.adminKey, viewer: tenant.viewerKey, otherOrganization: other.adminKey };
  local = await startTestLocalDeployment(platform, { configPath: fixture.configPath, workspaceId: tenant.workspace.id });
  ({ deploymentId } = local);
}, 120_000);
afterAll(async () => {
  await local?.stop();
  await platform?.stop();
  removeDir(dir);
});

const base = () => `${platform.url}/deployments/${deploymentId}`;

async function command(threadId: string, key: string | undefined, body: unknown) {
  const response = await fetch(`${base()}/threads/${threadId}/commands`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** Opens the thread's WebSocket with a key; resolves with the socket, or the HTTP status it was refused with. */
function connect(threadId: string, key: string | undefined): Promise<WebSocket | number> {
  const ws = new WebSocket(`${base().replace('http', 'ws')}/threads/${threadId}/stream/events`, { headers: key ? { 'x-api-key': key } : {} });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', reject);
  });
}

function ask(ws: WebSocket, id: number, method: string, params: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      const message = JSON.parse(String(data)) as Record<string, unknown>;
      if (message.id !== id) return;
      ws.off('message', onMessage);
      resolve(message);
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ id, method, params }));
  });
}

describe('the thread stream at a deployment’s url', () => {
  it('lets writers start runs and viewers only read, over HTTP', async () => {
    const threadId = newId();
    const started = await command(threadId, keys.admin, { id: 1, method: 'run.start', params: { assistant_id: 'nested', input: { trail: [] } } });
    expect(started.status).toBe(200);
    expect(JSON.parse(started.text)).toMatchObject({ type: 'success', result: { run_id: expect.any(String) } });
    // A viewer's run.start is refused as any write of theirs is.
    expect((await command(threadId, keys.viewer, { id: 2, method: 'run.start', params: { assistant_id: 'nested', input: {} } })).status).toBe(403);
    // Reading commands and event streams are a viewer's.
    expect(JSON.parse((await command(threadId, keys.viewer, { id: 3, method: 'agent.getTree', params: {} })).text)).toMatchObject({ type: 'success', id: 3 });
    const abort = new AbortController();
    const stream = await fetch(`${base()}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keys.viewer },
      body: JSON.stringify({ channels: ['lifecycle'] }),
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    abort.abort();
    // No key; another organization's key (it learns nothing: 404, as for any other tenant's row).
    expect((await command(threadId, undefined, { id: 4, method: 'agent.getTree', params: {} })).status).toBe(401);
    expect((await command(threadId, keys.otherOrganization, { id: 5, method: 'agent.getTree', params: {} })).status).toBe(404);
    const foreign = await fetch(`${base()}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keys.otherOrganization },
      body: JSON.stringify({ channels: ['lifecycle'] }),
    });
    expect(foreign.status).toBe(404);
  });

  it('checks the WebSocket’s caller at the upgrade and each run-starting command', async () => {
    const threadId = newId();
    expect(await connect(threadId, undefined)).toBe(401);
    expect(await connect(threadId, keys.otherOrganization)).toBe(404);

    const viewer = (await connect(threadId, keys.viewer)) as WebSocket;
    expect(await ask(viewer, 1, 'run.start', { assistant_id: 'nested', input: {} })).toMatchObject({ type: 'error', id: 1, error: 'permission_denied' });
    expect(await ask(viewer, 2, 'subscription.subscribe', { channels: ['lifecycle'] })).toMatchObject({ type: 'success', id: 2 });

    const admin = (await connect(threadId, keys.admin)) as WebSocket;
    expect(await ask(admin, 1, 'run.start', { assistant_id: 'nested', input: { trail: [] } })).toMatchObject({ type: 'success', id: 1 });
    viewer.close();
    admin.close();
    // /graphql's WebSocket is still served on the same server.
    const graphql = new WebSocket(`${platform.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    await new Promise((resolve, reject) => graphql.once('open', resolve).once('error', reject));
    graphql.close();
  });
});
