// The control plane's typical sequence over real HTTP, as the spec's CI/CD client runs it: create a
// deployment from a git repository the test made, poll its revision to DEPLOYED, run the graph at the
// deployment's url with the official SDK, PATCH repo_ref to a branch with a changed graph, take
// resources[0] of the revision list, poll it to DEPLOYED, see the new behaviour, DELETE, and the url
// answers 404. Builds really clone, and runtimes really run in child processes.
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../factories.js';
import { startTestPlatform, type TestPlatform } from '../helpers.js';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, type GitRepo, makeGitRepo, waitForRevision } from './support.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let api: Api;
let repo: GitRepo;

beforeAll(async () => {
  platform = await startTestPlatform({ jobs: true, config: { AGENT_PLATFORM_CONTROL_PLANE_WORKER: 'true' } });
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  repo = makeGitRepo(echoGraph('v1'));
  repo.commit('v2', echoGraph('v2'));
}, 60_000);
afterAll(async () => {
  await platform?.deps.deployedRuntimes?.stop();
  await platform?.stop();
});

const sdk = (url: string, key = tenant.adminKey) => new Client({ apiUrl: url, defaultHeaders: { 'x-api-key': key } });

async function ask(url: string, input: string): Promise<any> {
  const client = sdk(url);
  const thread = await client.threads.create();
  return client.runs.wait(thread.thread_id, 'agent', { input: { input } });
}

describe('the typical sequence', () => {
  it('creates, deploys, runs, patches to a new revision, runs the new graph, deletes', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { secrets: [{ name: 'GREETING_SECRET', value: 's3cret-value' }] }) });
    expect(created.status).toBe(201);
    const deployment = created.body;
    expect(deployment).toMatchObject({ name: 'echo', source: 'github', secrets: [{ name: 'GREETING_SECRET' }] });
    expect(deployment.latest_revision_id).toEqual(expect.any(String));
    expect(JSON.stringify(deployment)).not.toContain('s3cret-value');

    const first = await waitForRevision(api, deployment.id, deployment.latest_revision_id);
    expect(first.status).toBe('DEPLOYED');
    const url = (await api('GET', `/v2/deployments/${deployment.id}`)).body.url;
    expect(url).toBe(`${platform.url}/deployments/${deployment.id}`);
    expect((await ask(url, 'hello')).reply).toBe('v1: hello');

    const patched = await api('PATCH', `/v2/deployments/${deployment.id}`, { body: { source_revision_config: { repo_ref: 'v2' } } });
    expect(patched.status).toBe(200);
    const revisions = await api('GET', `/v2/deployments/${deployment.id}/revisions`);
    expect(revisions.status).toBe(200);
    const latest = revisions.body.resources[0];
    expect(latest.id).not.toBe(first.id);
    expect(latest.id).toBe(patched.body.latest_revision_id);
    expect((await waitForRevision(api, deployment.id, latest.id)).status).toBe('DEPLOYED');
    expect((await ask(url, 'hello')).reply).toBe('v2: hello');
    expect((await api('GET', `/v2/deployments/${deployment.id}`)).body.active_revision_id).toBe(latest.id);

    const logs = await api('GET', `/v2/deployments/${deployment.id}/revisions/${latest.id}/logs?type=build`);
    expect(logs.body.resources.map((line: any) => line.message).join('\n')).toContain('Build succeeded');

    expect((await api('DELETE', `/v2/deployments/${deployment.id}`)).status).toBe(204);
    const gone = await fetch(`${url}/assistants/search`, { method: 'POST', headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json' }, body: '{}' });
    expect(gone.status).toBe(404);
    expect((await api('GET', `/v2/deployments/${deployment.id}`)).status).toBe(404);
  }, 240_000);
});
