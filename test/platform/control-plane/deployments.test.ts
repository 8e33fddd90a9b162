// The control plane over real HTTP, as the spec's CI/CD client drives it: deployments built from git
// repositories the test makes (`file://` urls), runtimes in child processes, the agent server at each
// deployment's url used with the official SDK.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DeployedRuntimes } from '../../../src/platform/launcher/deployed-runtimes.js';
import { findRevision } from '../../../src/platform/services/deployments/revisions.store.js';
import { revisionGraphConfigPath } from '../../../src/platform/launcher/source-checkout.js';
import { buildTenant } from '../../support/factories.js';
import { databaseUrl, type TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, type GitRepo, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForDeployed, waitForRevision } from '../../support/deployments.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let api: Api;
let otherApi: Api;
let repo: GitRepo;

beforeAll(async () => {
  platform = await startControlPlanePlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  otherApi = controlPlaneApi(platform.url, { key: other.adminKey, tenant: other.workspace.id });
  repo = makeGitRepo(echoGraph('v1'));
  // v2 says which pages may call it (http.cors): the gateway's own answers follow it once v2 is active.
  repo.commit('v2', { ...echoGraph('v2'), 'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' }, http: { cors: { allow_origins: ['https://app.example'] } } }) });
  repo.commit('broken', { 'agent.ts': "import { missing } from './does-not-exist.js';\nexport const graph = missing;\n" });
}, 60_000);
afterAll(() => stopControlPlanePlatform(platform));

const sdk = (url: string, key = tenant.adminKey) => new Client({ apiUrl: url, defaultHeaders: { 'x-api-key': key } });

async function ask(url: string, input: string): Promise<any> {
  const client = sdk(url);
  const thread = await client.threads.create();
  return client.runs.wait(thread.thread_id, 'agent', { input: { input } });
}

const revisionLog = async (type: 'build' | 'deploy', deploymentId: string, revisionId: string) =>
  (await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=${type}&limit=100`)).body.resources.map((line: any) => line.message).join('\n');
const buildLog = (deploymentId: string, revisionId: string) => revisionLog('build', deploymentId, revisionId);
const deployLog = (deploymentId: string, revisionId: string) => revisionLog('deploy', deploymentId, revisionId);

/** PATCHes and returns the new latest revision (resources[0] of the list, as the spec's client takes it). */
async function patchRevision(deploymentId: string, sourceRevisionConfig: Record<string, unknown>): Promise<string> {
  const patched = await api('PATCH', `/v2/deployments/${deploymentId}`, { body: { source_revision_config: sourceRevisionConfig } });
  expect(patched.status).toBe(200);
  const revisions = await api('GET', `/v2/deployments/${deploymentId}/revisions`);
  expect(revisions.body.resources[0].id).toBe(patched.body.latest_revision_id);
  return revisions.body.resources[0].id;
}

describe('the typical sequence', () => {
  it('creates, deploys, runs, survives kill -9, keeps serving through failed builds, patches to a new revision, deletes', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { secrets: [{ name: 'GREETING_SECRET', value: 's3cret-value' }] }) });
    expect(created.status).toBe(201);
    const deployment = created.body;
    expect(deployment).toMatchObject({ name: 'echo', source: 'github', secrets: [{ name: 'GREETING_SECRET' }] });
    expect(deployment.latest_revision_id).toEqual(expect.any(String));

    const first = await waitForRevision(api, deployment.id, deployment.latest_revision_id);
    expect(first.status).toBe('DEPLOYED');
    const url = (await api('GET', `/v2/deployments/${deployment.id}`)).body.url;
    expect(url).toBe(`${platform.url}/deployments/${deployment.id}`);
    const answer = await ask(url, 'hello');
    expect(answer.reply).toBe('v1: hello');

    // Secrets: the graph reads its own; the runtime's environment holds neither the platform's secret
    // key nor its database password; no control-plane response or log line shows the value.
    expect(answer.seen.secret).toBe('s3cret-value');
    expect(answer.seen.pid).not.toBe(process.pid);
    // A repository without package.json loads as ES modules, LangGraph's included (one copy, the runtime's).
    expect(answer.seen.module_system).toBe('module');
    const platformPassword = decodeURIComponent(new URL(databaseUrl()).password);
    expect(answer.seen.database_url).not.toContain(platformPassword);
    expect(answer.seen.secret_key).not.toBe(platform.deps.config.secretKey!.toString('base64'));
    // The runtime's output is in the revision's logs: while the build loads the graphs in the build
    // log, once it serves in the deploy log; the secret masked.
    expect(await buildLog(deployment.id, first.id)).toContain('loading graph v1 with secret [redacted]');
    await vi.waitFor(async () => expect(await deployLog(deployment.id, first.id)).toContain('answering hello with secret [redacted]'), { timeout: 10_000, interval: 100 });
    for (const path of [`/v2/deployments/${deployment.id}`, '/v2/deployments', `/v2/deployments/${deployment.id}/revisions/${first.id}/logs?type=build`, `/v2/deployments/${deployment.id}/revisions/${first.id}/logs?type=deploy`]) {
      expect(JSON.stringify((await api('GET', path)).body)).not.toContain('s3cret-value');
    }

    // Another organization's key: 404 on the deployment's routes and at its url.
    expect((await otherApi('GET', `/v2/deployments/${deployment.id}`)).status).toBe(404);
    expect((await otherApi('GET', `/v2/deployments/${deployment.id}/revisions/${first.id}`)).status).toBe(404);
    expect((await otherApi('PATCH', `/v2/deployments/${deployment.id}`, { body: { source_config: { build_on_push: true } } })).status).toBe(404);
    expect((await otherApi('DELETE', `/v2/deployments/${deployment.id}`)).status).toBe(404);
    await expect(sdk(url, other.adminKey).assistants.search()).rejects.toThrow(/404/);

    // kill -9 of the runtime: it comes back, and the run it was executing is executed again, never stuck.
    const client = sdk(url);
    const thread = await client.threads.create();
    const doomed = await client.runs.create(thread.thread_id, 'agent', { input: { input: 'slow' } });
    for (let i = 0; (await client.runs.get(thread.thread_id, doomed.run_id)).status !== 'running'; i++) {
      expect(i).toBeLessThan(300);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const pid = platform.deps.deployedRuntimes!.runtimeOf(first.id)!.pid!()!;
    process.kill(pid, 'SIGKILL');
    // Its second attempt announces itself on the run's stream (read again while the agent server is away).
    const secondAttempt = async () => {
      try {
        for await (const part of client.runs.joinStream(thread.thread_id, doomed.run_id)) {
          if (part.event === 'metadata' && (part.data as { attempt?: number }).attempt === 2) return true;
        }
      } catch {
        // the agent server is not back yet
      }
      return false;
    };
    for (let i = 0; !(await secondAttempt()); i++) {
      expect(i).toBeLessThan(60);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    // Cancelled there (rather than waited for, a minute), it ends.
    await client.runs.cancel(thread.thread_id, doomed.run_id, true);
    expect((await client.runs.get(thread.thread_id, doomed.run_id)).status).toBe('interrupted');
    const revived = await ask(url, 'again');
    expect(revived.reply).toBe('v1: again');
    expect(revived.seen.pid).not.toBe(pid);

    // Failed builds leave the active revision serving: a ref superseded before it deployed is SKIPPED,
    // a missing graph config and a graph that fails to import are BUILD_FAILED with the reason logged.
    const superseded = await patchRevision(deployment.id, { repo_ref: 'v2' });
    const missingConfig = await patchRevision(deployment.id, { repo_ref: 'main', graph_config_path: 'nope/langgraph.json' });
    expect((await waitForRevision(api, deployment.id, superseded)).status).toBe('SKIPPED');
    expect((await waitForRevision(api, deployment.id, missingConfig)).status).toBe('BUILD_FAILED');
    expect(await buildLog(deployment.id, missingConfig)).toContain('graph_config_path "nope/langgraph.json" does not exist');
    const broken = await patchRevision(deployment.id, { repo_ref: 'broken', graph_config_path: 'langgraph.json' });
    expect((await waitForRevision(api, deployment.id, broken)).status).toBe('BUILD_FAILED');
    expect(await buildLog(deployment.id, broken)).toMatch(/does-not-exist/);
    expect((await ask(url, 'still here')).reply).toBe('v1: still here');

    const latest = await patchRevision(deployment.id, { repo_ref: 'v2' });
    await waitForDeployed(api, deployment.id, latest);
    expect((await ask(url, 'hello')).reply).toBe('v2: hello');
    // The gateway's refusal of a keyless page carries the active revision's CORS: its page reads the 401, another's does not.
    const refusedAt = async (origin: string) => (await fetch(`${url}/info`, { headers: { origin } })).headers.get('access-control-allow-origin');
    expect(await refusedAt('https://app.example')).toBe('https://app.example');
    expect(await refusedAt('https://elsewhere.example')).toBeNull();
    expect((await api('GET', `/v2/deployments/${deployment.id}`)).body.active_revision_id).toBe(latest);
    expect(await buildLog(deployment.id, latest)).toContain('Build succeeded');
    // The checkouts and dependencies no runtime starts from again (the superseded revision's, the
    // skipped and failed builds') leave the disk; the active revision's stays.
    const checkout = (revisionId: string) => join(platform.deps.config.dataDir, 'revisions', revisionId);
    await vi.waitFor(() => expect([first.id, superseded, missingConfig, broken].map(checkout).filter(existsSync)).toEqual([]), { timeout: 30_000, interval: 200 });
    expect(existsSync(revisionGraphConfigPath(platform.deps.config.dataDir, (await findRevision(platform.deps.db, latest))!))).toBe(true);

    // A restart with two workers: their runtimes stop with them; on start one of them (whichever took
    // the revision's lock) brings the active revision back, and when that one goes away the other
    // takes it over on its next pass.
    await platform.deps.deployedRuntimes!.stop();
    const workers = [new DeployedRuntimes(platform.deps), new DeployedRuntimes(platform.deps)];
    const liveRuntimes = async () =>
      (await platform.deps.db.pool.query('SELECT id FROM deployment_runtimes WHERE deployment_id = $1 AND revision_id = $2', [deployment.id, latest])).rowCount;
    try {
      await Promise.all(workers.map((worker) => worker.restoreActive()));
      const running = workers.filter((worker) => worker.runtimeOf(latest));
      expect(running).toHaveLength(1);
      expect(await liveRuntimes()).toBe(1);
      expect((await ask(url, 'after restart')).reply).toBe('v2: after restart');

      const idle = workers.find((worker) => !worker.runtimeOf(latest))!;
      await running[0]!.stop();
      await idle.restoreActive();
      expect(idle.runtimeOf(latest)).toBeDefined();
      expect(await liveRuntimes()).toBe(1);
      expect((await ask(url, 'taken over')).reply).toBe('v2: taken over');

      expect((await api('DELETE', `/v2/deployments/${deployment.id}`)).status).toBe(204);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
    await expect(sdk(url).assistants.search()).rejects.toThrow(/404/);
    expect((await api('GET', `/v2/deployments/${deployment.id}`)).status).toBe(404);
  }, 900_000);

  it('DELETE during a build marks the revision INTERRUPTED and nothing deploys', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'short-lived' }) });
    expect(created.status).toBe(201);
    expect((await api('DELETE', `/v2/deployments/${created.body.id}`)).status).toBe(204);
    const revision = await findRevision(platform.deps.db, created.body.latest_revision_id);
    expect(revision?.status).toBe('INTERRUPTED');
    // The build job, whenever it runs, leaves it so and starts no runtime.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await findRevision(platform.deps.db, created.body.latest_revision_id))?.status).toBe('INTERRUPTED');
    expect(platform.deps.deployedRuntimes!.runtimeOf(created.body.latest_revision_id)).toBeUndefined();
  });
});

describe('bad input and tenancy', () => {
  const bad: [string, unknown][] = [
    ['unknown source', { ...deploymentBody('file:///tmp/x'), source: 'ftp' }],
    ['graph_config_path escaping the repository', deploymentBody('file:///tmp/x', { graph_config_path: '../../etc/passwd' })],
    ['absolute graph_config_path', deploymentBody('file:///tmp/x', { graph_config_path: '/etc/passwd' })],
    ['repo_url with shell metacharacters', deploymentBody('file:///tmp/x; rm -rf /')],
    ['repo_url that is an option', deploymentBody('--upload-pack=touch /tmp/pwned')],
    ['repo_ref that is an option', deploymentBody('file:///tmp/x', { repo_ref: '--output=/tmp/x' })],
    ['huge name', deploymentBody('file:///tmp/x', { name: 'x'.repeat(10_000) })],
    ['name of the wrong type', { ...deploymentBody('file:///tmp/x'), name: 42 }],
    ['secrets of the wrong type', { ...deploymentBody('file:///tmp/x'), secrets: 'no' }],
    ['a reserved secret name', deploymentBody('file:///tmp/x', { secrets: [{ name: 'DATABASE_URL', value: 'x' }] })],
    ['missing source_config', { name: 'x', source: 'github', source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' } }],
  ];
  it.each(bad)('POST with %s: 422 in the FastAPI dialect', async (_, body) => {
    const response = await api('POST', '/v2/deployments', { body });
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) })]));
  });

  it('refuses what this installation does not support, and immutable fields, with 400', async () => {
    const docker = await api('POST', '/v2/deployments', { body: { ...deploymentBody('file:///tmp/x'), source: 'external_docker' } });
    expect(docker).toMatchObject({ status: 400, body: { detail: expect.stringContaining('not supported') } });
    const created = await api('POST', '/v2/deployments', { body: deploymentBody('file:///tmp/does-not-exist', { name: 'immutable' }) });
    expect(created.status).toBe(201);
    for (const body of [{ name: 'renamed' }, { source_config: { repo_url: 'file:///elsewhere' } }, { source: 'github' }]) {
      const response = await api('PATCH', `/v2/deployments/${created.body.id}`, { body });
      expect(response.status).toBe(400);
      expect(response.body.detail).toContain('cannot be changed');
    }
    // build_on_push changes in place, without a revision.
    const toggled = await api('PATCH', `/v2/deployments/${created.body.id}`, { body: { source_config: { build_on_push: true } } });
    expect(toggled.status).toBe(200);
    expect(toggled.body.source_config.build_on_push).toBe(true);
    expect(toggled.body.latest_revision_id).toBe(created.body.latest_revision_id);
    // PATCHes of different fields at once all stay: none writes back what it read before the other.
    for (let round = 0; round < 5; round++) {
      const patch = (sourceConfig: Record<string, unknown>) => api('PATCH', `/v2/deployments/${created.body.id}`, { body: { source_config: sourceConfig } });
      const answers = await Promise.all([patch({ build_on_push: round % 2 === 0 }), patch({ custom_url: `https://agent-${round}.example.com` })]);
      expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
      expect((await api('GET', `/v2/deployments/${created.body.id}`)).body.source_config).toMatchObject({ build_on_push: round % 2 === 0, custom_url: `https://agent-${round}.example.com` });
    }
    // A clone that fails is BUILD_FAILED with git's message.
    expect((await waitForRevision(api, created.body.id, created.body.latest_revision_id)).status).toBe('BUILD_FAILED');
    expect(await buildLog(created.body.id, created.body.latest_revision_id)).toContain('git clone failed');
    expect((await api('DELETE', `/v2/deployments/${created.body.id}`)).status).toBe(204);
  }, 120_000);

  it("builds with the workspace's git integration; another workspace's integration is unknown (400)", async () => {
    const integration = await api('POST', '/v1/integrations', { body: { name: 'git host', host: 'git.example.com', access_token: 'tok-123' } });
    expect(integration.status).toBe(201);
    const withIntegration = (name: string) => {
      const body = deploymentBody(repo.url, { name });
      return { ...body, source_config: { ...body.source_config, integration_id: integration.body.id } };
    };
    const foreign = await otherApi('POST', '/v2/deployments', { body: withIntegration('foreign') });
    expect(foreign).toMatchObject({ status: 400, body: { detail: `Integration ${integration.body.id} not found.` } });
    // The build looks the token up for its clone (used for https urls of the integration's host only).
    const created = await api('POST', '/v2/deployments', { body: withIntegration('integrated') });
    expect(created.status).toBe(201);
    expect(created.body.source_config.integration_id).toBe(integration.body.id);
    await waitForDeployed(api, created.body.id, created.body.latest_revision_id);
    expect((await api('DELETE', `/v2/deployments/${created.body.id}`)).status).toBe(204);
  }, 180_000);

  it("keeps one deployment's threads, runs and state invisible at another deployment's url of the same workspace", async () => {
    const [first, second] = await Promise.all(['one', 'two'].map((name) => api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name }) })));
    for (const created of [first!, second!]) await waitForDeployed(api, created.body.id, created.body.latest_revision_id);
    const [a, b] = [sdk(first!.body.url), sdk(second!.body.url)];
    const thread = await a.threads.create();
    const run = await a.runs.create(thread.thread_id, 'agent', { input: { input: 'private' } });
    await a.runs.join(thread.thread_id, run.run_id);
    expect((await a.threads.getState(thread.thread_id)).values).toMatchObject({ reply: 'v1: private' });

    const notFound = { status: 404 };
    await expect(b.threads.get(thread.thread_id)).rejects.toMatchObject(notFound);
    await expect(b.threads.getState(thread.thread_id)).rejects.toMatchObject(notFound);
    await expect(b.threads.getHistory(thread.thread_id)).rejects.toMatchObject(notFound);
    await expect(b.runs.get(thread.thread_id, run.run_id)).rejects.toMatchObject(notFound);
    await expect(b.runs.create(thread.thread_id, 'agent', { input: { input: 'intrude' } })).rejects.toMatchObject(notFound);
    await expect(b.threads.updateState(thread.thread_id, { values: { reply: 'overwritten' } })).rejects.toMatchObject(notFound);
    expect((await b.threads.search()).map((found) => found.thread_id)).not.toContain(thread.thread_id);
    // Each deployment has a database of its own: the same thread id at the other one is a thread of
    // its own there, not a second view of the first.
    const intruder = await b.runs.create(thread.thread_id, 'agent', { input: { input: 'x' }, ifNotExists: 'create' });
    await b.runs.join(thread.thread_id, intruder.run_id);
    expect((await b.threads.getState(thread.thread_id)).values).toMatchObject({ reply: 'v1: x' });
    // The owner's state is untouched.
    expect((await a.threads.getState(thread.thread_id)).values).toMatchObject({ reply: 'v1: private' });
    for (const created of [first!, second!]) expect((await api('DELETE', `/v2/deployments/${created.body.id}`)).status).toBe(204);
  }, 180_000);

  it('answers bad query, bad JSON, unknown ids and missing credentials in the FastAPI dialect', async () => {
    expect((await api('GET', '/v2/deployments?limit=0')).status).toBe(422);
    expect((await api('GET', '/v2/deployments?limit=abc')).status).toBe(422);
    expect((await api('GET', '/v2/deployments?deployment_ids=not-a-uuid')).status).toBe(422);
    expect((await api('GET', '/v2/deployments?status=NOPE')).status).toBe(422);
    expect((await api('POST', '/v2/deployments', { raw: '{"name": ' })).status).toBe(422);
    expect(await api('GET', '/v2/deployments/not-a-uuid')).toMatchObject({ status: 404, body: { detail: 'Deployment ID not-a-uuid not found.' } });
    expect((await api('GET', `/v2/deployments/${crypto.randomUUID()}/revisions`)).status).toBe(404);
    expect((await api('GET', `/v2/deployments/${crypto.randomUUID()}/revisions/x/logs?type=nope`)).status).toBe(422);
    expect((await api('GET', '/v2/deployments', { key: 'nope' })).status).toBe(401);
    expect((await api('GET', '/v2/deployments', { tenant: null })).status).toBe(400);
    expect((await api('POST', '/v2/deployments', { key: tenant.viewerKey, body: deploymentBody('file:///tmp/x') })).status).toBe(403);
  });

  it('lists with the spec shape and filters, under /v2 and /api-host/v2, only the own workspace', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody('file:///tmp/does-not-exist', { name: 'Listed-Alpha' }) });
    const page = await api('GET', `/api-host/v2/deployments?name_contains=listed-alp&limit=5`);
    expect(page.status).toBe(200);
    expect(page.body).toEqual({ resources: [expect.objectContaining({ id: created.body.id, name: 'Listed-Alpha' })], offset: 1 });
    expect((await api('GET', `/v2/deployments?deployment_ids=${created.body.id}`)).body.resources).toHaveLength(1);
    expect((await otherApi('GET', `/v2/deployments?deployment_ids=${created.body.id}`)).body).toEqual({ resources: [], offset: 0 });
    const revisions = await api('GET', `/api-host/v2/deployments/${created.body.id}/revisions`);
    expect(revisions.body).toEqual({ resources: [expect.objectContaining({ id: created.body.latest_revision_id, status: expect.any(String) })], offset: 1 });
    expect((await otherApi('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs`)).status).toBe(404);
    expect((await otherApi('POST', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/redeploy`)).status).toBe(404);
    // Its agent server's public reference exists as long as the deployment does; an unknown id has none.
    expect((await fetch(`${platform.url}/deployments/${created.body.id}/openapi.json`)).status).toBe(200);
    await api('DELETE', `/v2/deployments/${created.body.id}`);
    expect((await fetch(`${platform.url}/deployments/${created.body.id}/openapi.json`)).status).toBe(404);
    expect((await fetch(`${platform.url}/deployments/${crypto.randomUUID()}/openapi.json`)).status).toBe(404);
    expect((await fetch(`${platform.url}/deployments/not-a-uuid/docs`)).status).toBe(404);
  });
});
