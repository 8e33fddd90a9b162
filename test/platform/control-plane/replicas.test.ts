// A deployment with `resource_spec.replicas: 2` runs two agent servers of its active revision: the
// gateway sends requests to them in turn; when one dies in the middle of a run, the other serves every
// request meanwhile, the run ends (as an error, not hanging) and the thread takes its next run, and
// the launcher starts the dead one again.
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../../support/deployments.js';

// A graph whose slow run says (in the store) which agent server runs it, and routes of the project's
// own that say which agent server answered, or make it die. Processes in a sandbox all see their own
// pid as small numbers: an agent server is told apart by its runtime's key id instead.
const project = {
  'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' }, http: { app: './app.ts:app' } }),
  'agent.ts': `
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({ input: Annotation<string>(), reply: Annotation<string>() });

export const graph = new StateGraph(State)
  .addNode('answer', async (state, config) => {
    if (state.input === 'slow') {
      await config.store!.put(['where'], config.configurable!.run_id, { runtime: process.env.AGENT_PLATFORM_RUNTIME_KEY_ID });
      await new Promise((resolve) => setTimeout(resolve, 120_000));
    }
    return { reply: 'v1: ' + state.input };
  })
  .addEdge(START, 'answer')
  .addEdge('answer', END)
  .compile();
`,
  'app.ts': `
import { Hono } from 'hono';
export const app = new Hono();
app.get('/whoami', (c) => c.json({ runtime: process.env.AGENT_PLATFORM_RUNTIME_KEY_ID }));
app.post('/die', () => process.kill(process.pid, 'SIGKILL'));
`,
};

let platform: TestPlatform;
let api: Api;
let key: string;
beforeAll(async () => {
  platform = await startControlPlanePlatform();
  const tenant = await buildTenant(platform.system);
  key = tenant.adminKey;
  api = controlPlaneApi(platform.url, { key, tenant: tenant.workspace.id });
}, 120_000);
afterAll(async () => stopControlPlanePlatform(platform));

const liveRuntimes = async (deploymentId: string) =>
  (await platform.deps.db.pool.query<{ id: string }>('SELECT r.id FROM deployment_runtimes r JOIN deployments d ON d.id = r.deployment_id WHERE r.deployment_id = $1 AND r.revision_id = d.active_revision_id', [deploymentId])).rows;

describe('a deployment with two replicas', () => {
  it('refuses a replica count it cannot run', async () => {
    const body = deploymentBody(makeGitRepo(echoGraph('v1')).url);
    const refused = await api('POST', '/v2/deployments', { body: { ...body, source_config: { ...body.source_config, resource_spec: { replicas: 50 } } } });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain('replicas');
  });

  it('runs two agent servers, spreads requests over them, and survives losing one mid-run', async () => {
    const body = deploymentBody(makeGitRepo(project).url, { name: 'twice' });
    const created = await api('POST', '/v2/deployments', { body: { ...body, source_config: { ...body.source_config, resource_spec: { replicas: 2 } } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const deploymentId: string = created.body.id;
    expect((await waitForRevision(api, deploymentId, created.body.latest_revision_id)).status).toBe('DEPLOYED');
    expect(await liveRuntimes(deploymentId)).toHaveLength(2);

    const base = `${platform.url}/deployments/${deploymentId}`;
    const whoami = async () => ((await (await fetch(`${base}/whoami`, { headers: { 'x-api-key': key } })).json()) as { runtime: string }).runtime;
    // The gateway sends requests to the two in turn.
    const answered = [];
    for (let i = 0; i < 6; i++) answered.push(await whoami());
    expect(new Set(answered).size).toBe(2);

    const client = new Client({ apiUrl: base, defaultHeaders: { 'x-api-key': key } });
    const thread = await client.threads.create();
    expect(await client.runs.wait(thread.thread_id, 'agent', { input: { input: 'one' } })).toMatchObject({ reply: 'v1: one' });

    // The agent server running a slow run dies (the OOM killer, say) in the middle of it.
    const slow = await client.runs.create(thread.thread_id, 'agent', { input: { input: 'slow' } });
    await expect.poll(async () => (await client.store.getItem(['where'], slow.run_id))?.value ?? null, { timeout: 30_000, interval: 200 }).not.toBeNull();
    const victim = ((await client.store.getItem(['where'], slow.run_id))!.value as { runtime: string }).runtime;
    // The next request after the victim's answer goes to the other; the one after that to the victim.
    while ((await whoami()) !== victim);
    expect(await whoami()).not.toBe(victim);
    await fetch(`${base}/die`, { method: 'POST', headers: { 'x-api-key': key } }).catch(() => undefined);

    // The other replica serves every request meanwhile, through the same url.
    for (let i = 0; i < 4; i++) expect(await whoami()).not.toBe(victim);
    // The run does not hang: it ends (as an error: the runtime running it died), and the thread takes
    // its next run, served by the replica that lives.
    await expect.poll(async () => (await client.runs.get(thread.thread_id, slow.run_id)).status, { timeout: 120_000, interval: 500 }).toBe('error');
    expect(await client.runs.wait(thread.thread_id, 'agent', { input: { input: 'two' } })).toMatchObject({ reply: 'v1: two' });
    // Its launcher starts the dead one again: two replicas once more.
    await expect.poll(async () => (await liveRuntimes(deploymentId)).length, { timeout: 60_000, interval: 500 }).toBe(2);

    expect((await api('DELETE', `/v2/deployments/${deploymentId}`)).status).toBe(204);
  }, 400_000);
});
