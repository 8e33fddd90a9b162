// A machine where deployed code cannot be sandboxed (here: AGENT_PLATFORM_SANDBOX=none, as on a
// machine without bubblewrap or user namespaces): the platform says so in /info and refuses to build
// customers' code, with the reason in the build log, unless the operator allowed unsandboxed deployments.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, stopControlPlanePlatform, waitForDeployed, waitForRevision } from '../../support/deployments.js';

// One platform at a time: both would work the build queue of the file's one database.
let running: TestPlatform | undefined;
const start = async (allow: boolean) => {
  await stopControlPlanePlatform(running);
  const platform = await startTestPlatform({ jobs: true, config: { AGENT_PLATFORM_CONTROL_PLANE_WORKER: 'true', AGENT_PLATFORM_SANDBOX: 'none', AGENT_PLATFORM_ALLOW_UNSANDBOXED: String(allow) } });
  running = platform;
  const tenant = await buildTenant(platform.system);
  return { platform, api: controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id }) };
};
let repoUrl: string;
beforeAll(() => {
  repoUrl = makeGitRepo(echoGraph('v1')).url;
});
afterAll(() => stopControlPlanePlatform(running));

describe('no sandbox on this machine', () => {
  it('is said in /info and refuses to build deployed code, saying why', async () => {
    const { platform, api } = await start(false);
    expect((await (await fetch(`${platform.url}/info`)).json()).deployments).toEqual({ sandbox: null, unsandboxed_allowed: false });
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repoUrl) });
    expect(created.status).toBe(201);
    expect((await waitForRevision(api, created.body.id, created.body.latest_revision_id)).status).toBe('BUILD_FAILED');
    const logs = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=build`);
    expect(logs.body.resources.map((line: { message: string }) => line.message).join('\n')).toMatch(/cannot sandbox deployed code.*AGENT_PLATFORM_ALLOW_UNSANDBOXED=true/s);
  }, 60_000);

  it('deploys anyway where the operator allowed it, saying so in the build log', async () => {
    const { platform, api } = await start(true);
    expect((await (await fetch(`${platform.url}/info`)).json()).deployments).toEqual({ sandbox: null, unsandboxed_allowed: true });
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repoUrl) });
    await waitForDeployed(api, created.body.id, created.body.latest_revision_id);
    const logs = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=build`);
    expect(logs.body.resources[0].message).toMatch(/NOT sandboxed/);
    await api('DELETE', `/v2/deployments/${created.body.id}`);
  }, 120_000);
});
