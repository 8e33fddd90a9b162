// Custom auth at a deployed revision's url (/deployments/<id>, through the gateway to the revision's
// own agent server in its sandbox): the project's handlers run there and decide who its end users
// are, who call without any platform key, as an application in front of the deployment does. Each
// user sees only their own threads, assistants, runs and store items, and the user reaches the graph;
// the studio's scheme with a platform key sees everyone's; a deployment without custom auth still
// wants a platform key; nothing reaches the agent server's own port but through the gateway; a
// project whose auth module does not import fails its build.
import { readFileSync } from 'node:fs';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import {
  type Api,
  controlPlaneApi,
  deploymentBody,
  echoGraph,
  type GitRepo,
  makeGitRepo,
  startControlPlanePlatform,
  stopControlPlanePlatform,
  waitForDeployed, waitForRevision,
} from '../../support/deployments.js';
import { GATEWAY_IDENTITY_HEADER, GATEWAY_SIGNATURE_HEADER } from '../../../src/contracts/gateway-protocol.js';
import { openProtocolSocket, refusedUpgrade } from '../../support/protocol-socket.js';

const FIXTURE = new URL('../../fixtures/custom-auth/', import.meta.url).pathname;
const project = Object.fromEntries(['langgraph.json', 'auth.ts', 'whoami.ts'].map((file) => [file, readFileSync(`${FIXTURE}${file}`, 'utf8')]));

let platform: TestPlatform;
let api: Api;
let key: string;
let repo: GitRepo;
// The custom-auth deployment's url, and a deployment of the same workspace without custom auth.
let apiUrl: string;
let deploymentId: string;
let plainUrl: string;

/** Deploys `repoUrl` and waits until it serves; its id. */
async function deploy(repoUrl: string, name: string): Promise<string> {
  const created = await api('POST', '/v2/deployments', { body: deploymentBody(repoUrl, { name }) });
  expect(created.status).toBe(201);
  await waitForDeployed(api, created.body.id, created.body.latest_revision_id, 240_000);
  return created.body.id;
}

beforeAll(async () => {
  platform = await startControlPlanePlatform();
  const tenant = await buildTenant(platform.system);
  key = tenant.adminKey;
  api = controlPlaneApi(platform.url, { key, tenant: tenant.workspace.id });
  repo = makeGitRepo(project);
  repo.commit('broken', { 'auth.ts': readFileSync(`${FIXTURE}broken-auth.ts`, 'utf8') });
  const [withAuth, plain] = await Promise.all([deploy(repo.url, 'custom-auth'), deploy(makeGitRepo(echoGraph('v1')).url, 'plain')]);
  deploymentId = withAuth;
  apiUrl = `${platform.url}/deployments/${withAuth}`;
  plainUrl = `${platform.url}/deployments/${plain}`;
}, 300_000);
afterAll(async () => {
  await stopControlPlanePlatform(platform);
});

const status = (promise: Promise<unknown>) =>
  promise.then(
    () => 200,
    (error: unknown) => Number(/HTTP (\d{3})/.exec(String(error))?.[1] ?? 0),
  );

/** An end user's client: their token, and no platform key (`apiKey: null`: not even one from the environment). */
const as = (token: string) => new Client({ apiUrl, apiKey: null, defaultHeaders: { authorization: `Bearer ${token}` }, callerOptions: { maxRetries: 0 } });

describe('custom auth at a deployed revision', () => {
  it('lets end users in without a platform key: the handler answers unknown tokens 401 and a missing permission 403', async () => {
    const anonymous = await fetch(`${apiUrl}/threads/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([anonymous.status, await anonymous.text()]).toEqual([401, 'Invalid token']);
    expect(await status(as('token-nobody').threads.search())).toBe(401);
    expect(await status(as('token-reader').threads.create())).toBe(403);
    expect(await status(as('token-reader').store.putItem(['notes'], 'a', { text: 'x' }))).toBe(403);
    expect(await as('token-reader').threads.search()).toEqual([]);
  });

  it('shows each user only their own threads, runs, assistants and store items; the graph sees the user', async () => {
    const [alice, bob] = [as('token-alice'), as('token-bob')];
    const mine = await alice.threads.create();
    const theirs = await bob.threads.create();
    expect(await alice.runs.wait(mine.thread_id, 'whoami', { input: {} })).toEqual({ user: 'alice', user_id: 'alice', permissions: ['write'], org: 'acme' });
    expect(await bob.runs.wait(theirs.thread_id, 'whoami', { input: {} })).toMatchObject({ user: 'bob' });
    expect((await alice.threads.search()).map((thread) => thread.thread_id)).toEqual([mine.thread_id]);
    expect((await bob.threads.search()).map((thread) => thread.thread_id)).toEqual([theirs.thread_id]);
    const [bobRun] = await bob.runs.list(theirs.thread_id);
    expect(bobRun!.metadata).toMatchObject({ owner: 'bob' });
    const refusals = await Promise.all([
      status(alice.threads.get(theirs.thread_id)),
      status(alice.runs.list(theirs.thread_id)),
      status(alice.runs.get(theirs.thread_id, bobRun!.run_id)),
      status(alice.runs.wait(theirs.thread_id, 'whoami', { input: {} })),
      status(alice.threads.getState(theirs.thread_id)),
    ]);
    expect(refusals).toEqual(refusals.map(() => 404));

    const assistant = await alice.assistants.create({ graphId: 'whoami', name: 'alice’s' });
    expect((await alice.assistants.search()).map((found) => found.assistant_id)).toEqual([assistant.assistant_id]);
    expect(await bob.assistants.search()).toEqual([]);
    expect(await status(bob.assistants.get(assistant.assistant_id))).toBe(404);

    await alice.store.putItem(['notes'], 'todo', { text: 'alice’s' });
    await bob.store.putItem(['notes'], 'todo', { text: 'bob’s' });
    expect((await alice.store.getItem(['notes'], 'todo'))?.value).toEqual({ text: 'alice’s' });
    expect((await bob.store.searchItems(['notes'])).items.map((item) => [item.namespace, item.value])).toEqual([[['bob', 'notes'], { text: 'bob’s' }]]);
  });

  it('lets the studio in with a platform key of the workspace (x-auth-scheme: langsmith), and not without one', async () => {
    const studio = new Client({ apiUrl, apiKey: key, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    expect(new Set((await studio.threads.search({ limit: 100 })).map((thread) => thread.metadata?.owner))).toEqual(new Set(['alice', 'bob']));
    const keyless = new Client({ apiUrl, apiKey: null, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    expect(await status(keyless.threads.search())).toBe(401);
    const keylessText = await fetch(`${apiUrl}/threads/search`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-auth-scheme': 'langsmith' }, body: '{}' });
    expect(await keylessText.text()).toMatch(/^Studio access needs a valid API key/);
    const forged = new Client({ apiUrl, apiKey: 'lsv2_not_a_key', defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    expect(await status(forged.threads.search())).toBe(401);
  });

  it('streams a thread over the WebSocket through the gateway, for its user only', async () => {
    expect(await refusedUpgrade(apiUrl, crypto.randomUUID(), { authorization: 'Bearer token-nobody' })).toEqual({ status: 401, body: 'Invalid token' });
    const threadId = crypto.randomUUID();
    const mine = await openProtocolSocket(apiUrl, threadId, { authorization: 'Bearer token-alice' });
    try {
      expect(await mine.command('subscription.subscribe', { channels: ['values', 'lifecycle'] })).toMatchObject({ type: 'success' });
      expect(await mine.command('run.start', { assistant_id: 'whoami', input: {} })).toMatchObject({ type: 'success' });
      await mine.until(() => mine.events.some((event) => event.method === 'values' && event.params.data.user === 'alice'));
    } finally {
      mine.close();
    }
    const theirs = await openProtocolSocket(apiUrl, threadId, { authorization: 'Bearer token-bob' });
    try {
      expect(await theirs.command('subscription.subscribe', { channels: ['values'] })).toMatchObject({ type: 'error', error: 'permission_denied' });
      expect(theirs.events).toEqual([]);
    } finally {
      theirs.close();
    }
  });

  it('keeps a deployment without custom auth behind a platform key, and the agent server’s port behind the gateway', async () => {
    expect(await status(new Client({ apiUrl: plainUrl, apiKey: null, callerOptions: { maxRetries: 0 } }).threads.search())).toBe(401);
    expect(await status(new Client({ apiUrl: plainUrl, apiKey: null, defaultHeaders: { authorization: 'Bearer token-alice' }, callerOptions: { maxRetries: 0 } }).threads.search())).toBe(401);
    expect(await new Client({ apiUrl: plainUrl, apiKey: key, callerOptions: { maxRetries: 0 } }).threads.search()).toEqual([]);
    expect((await refusedUpgrade(plainUrl, crypto.randomUUID())).status).toBe(401);

    // The platform's own calls are never an end user's.
    const call = await fetch(`${apiUrl}/internal/platform-calls`, {
      method: 'POST',
      headers: { authorization: 'Bearer token-alice', 'content-type': 'application/json' },
      body: JSON.stringify({ op: 'listThreads', args: [{}] }),
    });
    expect([call.status, await call.text()]).toEqual([401, 'Only the platform makes these calls.']);

    // Straight to the agent server's own port, a valid user token is not enough: the gateway's signature is missing or forged.
    const [server] = (await platform.deps.db.pool.query<{ url: string }>('SELECT url FROM deployment_runtimes WHERE deployment_id = $1', [deploymentId])).rows;
    const direct = (headers: Record<string, string>) =>
      fetch(`${server!.url}/threads/search`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer token-alice', ...headers }, body: '{}' });
    const unsigned = await direct({});
    expect([unsigned.status, await unsigned.text()]).toEqual([401, 'This agent server answers only requests through the platform (/deployments/<id>).']);
    const anonymousIdentity = Buffer.from(JSON.stringify({ userId: null, apiKeyId: null, access: 'write', expires: Date.now() + 60_000 })).toString('base64url');
    expect((await direct({ [GATEWAY_IDENTITY_HEADER]: anonymousIdentity, [GATEWAY_SIGNATURE_HEADER]: 'forged' })).status).toBe(401);
    expect((await refusedUpgrade(server!.url, crypto.randomUUID(), { authorization: 'Bearer token-alice' })).status).toBe(401);
  });

  it('fails the build of a revision whose auth module does not import, with its error in the build log', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'broken-auth', repo_ref: 'broken' }) });
    expect(created.status).toBe(201);
    expect((await waitForRevision(api, created.body.id, created.body.latest_revision_id, 240_000)).status).toBe('BUILD_FAILED');
    const logs = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=build`);
    expect(JSON.stringify(logs.body)).toContain('the auth module is broken');
  }, 300_000);
});
