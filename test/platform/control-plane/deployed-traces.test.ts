// A deployed revision's runs are traced: its agent server sends them to the platform's public ingest
// API with its deployment's trace key, into the project named after the deployment, where the
// workspace reads them with its own key. Deployed code holds that key (it is in its environment) and
// attacks with it from inside: writing into another project of its workspace, reading traces, listing
// API keys, the control plane, another deployment's gateway. Each attempt is made and refused (over the
// connections its launcher hands it, the one way its own network reaches the platform; the platform's
// address itself it cannot reach). Deleting the deployment revokes the key.
import { Client } from '@langchain/langgraph-sdk';
import { Client as LangSmith } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, PLATFORM_CALLS_SOURCE, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../../support/deployments.js';

const project = {
  'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' } }),
  'platform-calls.ts': PLATFORM_CALLS_SOURCE,
  'agent.ts': `
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { directStatus, platformStatus } from './platform-calls.ts';

const State = Annotation.Root({
  input: Annotation<string>(),
  targets: Annotation<any>(),
  reply: Annotation<string>(),
  attempts: Annotation<Record<string, unknown>>(),
});

/** What deployed code does with the trace key its environment holds; each answer is an HTTP status. */
async function attack(targets: { otherProjectId: string; otherDeploymentId: string; workspaceId: string }) {
  const url = process.env.AGENT_PLATFORM_TRACES_URL!;
  const key = process.env.AGENT_PLATFORM_TRACES_API_KEY!;
  const call = (path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
    platformStatus(url + path, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { 'content-type': 'application/json', 'x-api-key': key, ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  const run = (extra: Record<string, unknown>) => ({ id: crypto.randomUUID(), name: 'forged', run_type: 'chain', inputs: {}, start_time: new Date().toISOString(), ...extra });
  return {
    key,
    direct: await directStatus(url + '/sessions', { headers: { 'x-api-key': key } }),
    own_project: await call('/runs', { body: run({}) }),
    other_project_by_name: await call('/runs', { body: run({ session_name: 'other-project' }) }),
    other_project_by_id: await call('/runs/batch', { body: { post: [run({ session_id: targets.otherProjectId })] } }),
    new_project: await call('/runs', { body: run({ session_name: 'made-by-deployment' }) }),
    read_traces: await call('/runs/query', { body: { session: [targets.otherProjectId], limit: 10 } }),
    read_projects: await call('/sessions'),
    list_api_keys: await call('/graphql', { body: { query: '{ apiKeys { id shortKey } }' } }),
    control_plane: await call('/v2/deployments', { headers: { 'x-tenant-id': targets.workspaceId } }),
    other_gateway: await call('/deployments/' + targets.otherDeploymentId + '/threads/search', { body: {} }),
    own_gateway: await call('/deployments/' + process.env.AGENT_PLATFORM_DEPLOYMENT_ID + '/threads/search', { body: {} }),
  };
}

export const graph = new StateGraph(State)
  .addNode('answer', async (state) => ({
    reply: 'traced: ' + state.input,
    attempts: state.targets ? await attack(state.targets) : {},
  }))
  .addEdge(START, 'answer')
  .addEdge('answer', END)
  .compile();
`,
};

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let api: Api;
let traced: { id: string; latest_revision_id: string };
let neighbour: { id: string; latest_revision_id: string };

beforeAll(async () => {
  platform = await startControlPlanePlatform();
  tenant = await buildTenant(platform.system);
  api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  const [first, second] = await Promise.all([
    api('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(project).url, { name: 'traced' }) }),
    api('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(echoGraph('v1')).url, { name: 'neighbour' }) }),
  ]);
  expect([first.status, second.status]).toEqual([201, 201]);
  traced = first.body;
  neighbour = second.body;
  const revisions = await Promise.all([waitForRevision(api, traced.id, traced.latest_revision_id), waitForRevision(api, neighbour.id, neighbour.latest_revision_id)]);
  expect(revisions.map((revision) => revision.status)).toEqual(['DEPLOYED', 'DEPLOYED']);
}, 240_000);
afterAll(async () => {
  for (const deployment of [traced, neighbour]) if (deployment) await api('DELETE', `/v2/deployments/${deployment.id}`);
  await stopControlPlanePlatform(platform);
});

const gatewayClient = (deploymentId: string) => new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, defaultHeaders: { 'x-api-key': tenant.adminKey } });

describe("a deployed revision's traces", () => {
  it("reach the deployment's tracing project through the ingest API, with the user's inputs and outputs", async () => {
    const client = gatewayClient(traced.id);
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'agent', { input: { input: 'is it raining?' } });
    await client.runs.join(thread.thread_id, run.run_id);

    // Read as the workspace reads any trace: the langsmith SDK with the workspace's key.
    const langsmith = new LangSmith({ apiUrl: platform.url, apiKey: tenant.adminKey });
    const traceOf = async () => {
      const found = [];
      for await (const traced of langsmith.listRuns({ projectName: 'traced', traceId: run.run_id })) found.push(traced);
      return found;
    };
    await expect.poll(async () => (await traceOf()).find((r) => !r.parent_run_id)?.end_time ?? null, { timeout: 20_000, interval: 200 }).not.toBeNull();
    const runs = await traceOf();
    const root = runs.find((r) => !r.parent_run_id)!;
    expect(root.inputs).toMatchObject({ input: 'is it raining?' });
    expect(root.outputs).toMatchObject({ reply: 'traced: is it raining?' });
    expect(runs.map((r) => r.name)).toContain('answer');
  });

  it('give a run streamed with feedback_keys presigned feedback urls, made with the trace key, that record feedback on its trace', async () => {
    const client = gatewayClient(traced.id);
    const thread = await client.threads.create();
    let runId = '';
    const parts = [];
    for await (const part of client.runs.stream(thread.thread_id, 'agent', {
      input: { input: 'rate me' },
      feedbackKeys: ['thumbs'],
      onRunCreated: (run) => {
        runId = run.run_id;
      },
    })) parts.push(part);
    const last = parts[parts.length - 1]!;
    expect(last.event).toBe('feedback');
    const { thumbs } = last.data as Record<string, string>;
    // At the platform's url as the caller reached it, though made over the deployment's own connections.
    expect(thumbs).toMatch(new RegExp(`^${platform.url}/feedback/tokens/[0-9a-f-]{36}$`));

    const langsmith = new LangSmith({ apiUrl: platform.url, apiKey: tenant.adminKey });
    // The url takes feedback once the run's trace is stored (the runtime sends it just after the run).
    await expect.poll(async () => (await fetch(`${thumbs}?score=1&comment=deployed`)).status, { timeout: 20_000, interval: 200 }).toBe(200);
    const feedback = [];
    for await (const given of langsmith.listFeedback({ runIds: [runId] })) feedback.push(given);
    expect(feedback.map((given) => [given.key, given.score, given.comment])).toEqual([['thumbs', 1, 'deployed']]);
  });

  it('are written with a key that deployed code can use for nothing else', async () => {
    const other = await fetch(`${platform.url}/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tenant.adminKey },
      body: JSON.stringify({ name: 'other-project' }),
    }).then((response) => response.json() as Promise<{ id: string }>);
    const client = gatewayClient(traced.id);
    const thread = await client.threads.create();
    const state = (await client.runs.wait(thread.thread_id, 'agent', {
      input: { input: 'attack', targets: { otherProjectId: other.id, otherDeploymentId: neighbour.id, workspaceId: tenant.workspace.id } },
    })) as { attempts: Record<string, unknown> };
    const { key, ...attempts } = state.attempts;
    expect(key).toMatch(/^apk_/);
    expect(attempts).toEqual({
      // Its network reaches nothing of the host's: the platform's loopback address is its own namespace's.
      direct: 'ECONNREFUSED',
      // The key works, for its own project: the attempts below were aimed right.
      own_project: 202,
      other_project_by_name: 403,
      other_project_by_id: 403,
      new_project: 403,
      read_traces: 403,
      read_projects: 403,
      list_api_keys: 403,
      control_plane: 403,
      other_gateway: 403,
      own_gateway: 403,
    });
    const names = async () => {
      const found = [];
      for await (const project of new LangSmith({ apiUrl: platform.url, apiKey: tenant.adminKey }).listProjects()) found.push(project.name);
      return found;
    };
    expect(await names()).not.toContain('made-by-deployment');

    // Deleting the deployment revokes the key its runtime was given (and every other of its trace keys).
    expect((await api('DELETE', `/v2/deployments/${traced.id}`)).status).toBe(204);
    const afterDelete = await fetch(`${platform.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key as string },
      body: JSON.stringify({ name: 'late', run_type: 'chain', inputs: {}, start_time: new Date().toISOString() }),
    });
    expect(afterDelete.status).toBe(401);
    const { rows } = await platform.deps.db.pool.query('SELECT revoked_at FROM api_keys WHERE deployment_id = $1', [traced.id]);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.revoked_at !== null)).toBe(true);
  });
});
