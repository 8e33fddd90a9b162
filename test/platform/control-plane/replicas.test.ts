// A deployment with `resource_spec.replicas: 2` runs two agent servers of its active revision: the
// gateway sends requests to them in turn; when one dies in the middle of a run, the other serves every
// request meanwhile, the run is executed again to its end (by whichever runtime takes it back from the
// queue) while a client following it from the dead one resumes its stream with Last-Event-ID and sees
// that end, the thread takes its next run, and the launcher starts the dead one again.
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForDeployed } from '../../support/deployments.js';

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
      await new Promise((resolve) => setTimeout(resolve, 15_000));
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
    await waitForDeployed(api, deploymentId, created.body.latest_revision_id);
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

    // The agent server running a slow run dies (the OOM killer, say) in the middle of it, while a
    // client follows the run's stream from it.
    const slow = await client.runs.create(thread.thread_id, 'agent', { input: { input: 'slow' } });
    await expect.poll(async () => (await client.store.getItem(['where'], slow.run_id))?.value ?? null, { timeout: 30_000, interval: 200 }).not.toBeNull();
    const victim = ((await client.store.getItem(['where'], slow.run_id))!.value as { runtime: string }).runtime;
    // The next request after the other's answer goes to the victim: the stream's.
    while ((await whoami()) === victim);
    type Part = { id?: string; event: string; data: unknown };
    const before: Part[] = [];
    const stream = client.runs.joinStream(thread.thread_id, slow.run_id)[Symbol.asyncIterator]();
    const first = await stream.next();
    before.push(first.value as Part);
    // Then the other, and the victim again: the one told to die.
    expect(await whoami()).not.toBe(victim);
    await fetch(`${base}/die`, { method: 'POST', headers: { 'x-api-key': key } }).catch(() => undefined);
    // The stream from the dead one breaks off (or ends) without the run's end. (It may have carried the
    // values of the run's input step, sent as the run started, depending on when the join caught up.)
    try {
      for (let part = await stream.next(); !part.done; part = await stream.next()) before.push(part.value as Part);
    } catch {
      // the connection was cut
    }
    expect(before.filter((part) => part.event === 'values').map((part) => part.data)).not.toContainEqual(expect.objectContaining({ reply: 'v1: slow' }));

    // The other replica serves every request meanwhile, through the same url.
    for (let i = 0; i < 4; i++) expect(await whoami()).not.toBe(victim);
    // The client resumes from the last event it had; the run is executed again and the stream ends with it.
    const after: Part[] = [];
    for await (const part of client.runs.joinStream(thread.thread_id, slow.run_id, { lastEventId: before.at(-1)!.id })) after.push(part as Part);
    const ids = [...before, ...after].map((part) => Number(part.id));
    expect(ids.every((id, index) => index === 0 || id > ids[index - 1]!)).toBe(true);
    expect(after.filter((part) => part.event === 'metadata').map((part) => part.data)).toEqual([expect.objectContaining({ attempt: 2 })]);
    expect(after.at(-1)).toMatchObject({ event: 'values', data: { reply: 'v1: slow' } });
    expect((await client.runs.get(thread.thread_id, slow.run_id)).status).toBe('success');
    const rerunBy = ((await client.store.getItem(['where'], slow.run_id))!.value as { runtime: string }).runtime;
    console.log(`the run was executed again by ${rerunBy === victim ? 'the restarted victim' : 'the other replica'}`);
    // The thread takes its next run.
    expect(await client.runs.wait(thread.thread_id, 'agent', { input: { input: 'two' } })).toMatchObject({ reply: 'v1: two' });
    // Its launcher starts the dead one again: two replicas once more.
    await expect.poll(async () => (await liveRuntimes(deploymentId)).length, { timeout: 60_000, interval: 500 }).toBe(2);

    expect((await api('DELETE', `/v2/deployments/${deploymentId}`)).status).toBe(204);
  }, 400_000);
});
