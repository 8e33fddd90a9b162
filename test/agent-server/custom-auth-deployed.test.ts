// Custom auth at a deployed revision's url (/deployments/<id>, through the gateway to the revision's
// own agent server in its sandbox): the project's handlers run there, each user sees only their own
// threads and the user reaches the graph; a project whose auth module does not import fails its build.
// The gateway still asks for a platform key (x-api-key) on every request; the project's token rides
// beside it in Authorization.
import { readFileSync } from 'node:fs';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../factories.js';
import type { TestPlatform } from '../helpers.js';
import { type Api, controlPlaneApi, deploymentBody, type GitRepo, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../control-plane/support.js';

const FIXTURE = new URL('../fixtures/custom-auth/', import.meta.url).pathname;
const project = Object.fromEntries(['langgraph.json', 'auth.ts', 'whoami.ts'].map((file) => [file, readFileSync(`${FIXTURE}${file}`, 'utf8')]));

let platform: TestPlatform;
let api: Api;
let key: string;
let repo: GitRepo;
beforeAll(async () => {
  platform = await startControlPlanePlatform();
  const tenant = await buildTenant(platform.system);
  key = tenant.adminKey;
  api = controlPlaneApi(platform.url, { key, tenant: tenant.workspace.id });
  repo = makeGitRepo(project);
  repo.commit('broken', { 'auth.ts': readFileSync(`${FIXTURE}broken-auth.ts`, 'utf8') });
}, 120_000);
afterAll(async () => {
  await stopControlPlanePlatform(platform);
});

const status = (promise: Promise<unknown>) =>
  promise.then(
    () => 200,
    (error: unknown) => Number(/HTTP (\d{3})/.exec(String(error))?.[1] ?? 0),
  );

describe('custom auth at a deployed revision', () => {
  it('runs the project’s handlers in its agent server: users see only their own threads, the graph sees the user', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'custom-auth' }) });
    expect(created.status).toBe(201);
    expect((await waitForRevision(api, created.body.id, created.body.latest_revision_id, 240_000)).status).toBe('DEPLOYED');
    const apiUrl = `${platform.url}/deployments/${created.body.id}`;
    const as = (token: string) => new Client({ apiUrl, apiKey: key, defaultHeaders: { authorization: `Bearer ${token}` }, callerOptions: { maxRetries: 0 } });
    const [alice, bob] = [as('token-alice'), as('token-bob')];

    expect(await status(as('token-nobody').threads.search())).toBe(401);
    expect(await status(as('token-reader').threads.create())).toBe(403);
    const mine = await alice.threads.create();
    const theirs = await bob.threads.create();
    expect(await alice.runs.wait(mine.thread_id, 'whoami', { input: {} })).toEqual({ user: 'alice', user_id: 'alice', permissions: ['write'], org: 'acme' });
    expect((await alice.threads.search()).map((thread) => thread.thread_id)).toEqual([mine.thread_id]);
    expect(await status(alice.threads.get(theirs.thread_id))).toBe(404);
    expect(await status(alice.runs.wait(theirs.thread_id, 'whoami', { input: {} }))).toBe(404);
    // The studio: the platform key the gateway checked, with the studio's scheme, sees everyone's.
    const studio = new Client({ apiUrl, apiKey: key, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    expect((await studio.threads.search()).map((thread) => thread.metadata?.owner).sort()).toEqual(['alice', 'bob']);
  }, 300_000);

  it('fails the build of a revision whose auth module does not import, with its error in the build log', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'broken-auth', repo_ref: 'broken' }) });
    expect(created.status).toBe(201);
    expect((await waitForRevision(api, created.body.id, created.body.latest_revision_id, 240_000)).status).toBe('BUILD_FAILED');
    const logs = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=build`);
    expect(JSON.stringify(logs.body)).toContain('the auth module is broken');
  }, 300_000);
});
