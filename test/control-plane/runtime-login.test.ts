// The database login of a deployed runtime: least privilege. Deployed code connects with the
// DATABASE_URL its runtime was given and may read and write its own deployment's agent-server rows,
// checkpoints and store, and nothing else: no tenancy, keys, secrets, providers, integrations,
// exports or traces, no DDL, no other deployment's rows. The graph still runs, streams, checkpoints
// and uses the store with it.
import { randomUUID } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeLoginRole } from '../../src/runtime/runtime-database.js';
import { buildTenant } from '../factories.js';
import type { TestPlatform } from '../helpers.js';
import { type Api, controlPlaneApi, deploymentBody, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from './support.js';

// What deployed code tries with the runtime's own login; each answer is 'ok <rows>' or the SQLSTATE.
const PROBES: Record<string, string> = {
  api_keys: 'SELECT * FROM api_keys LIMIT 1',
  deployment_secrets: 'SELECT secrets FROM deployments LIMIT 1',
  revisions: 'SELECT * FROM deployment_revisions LIMIT 1',
  oauth_providers: 'SELECT * FROM oauth_providers LIMIT 1',
  integrations: 'SELECT * FROM integrations LIMIT 1',
  export_destinations: 'SELECT * FROM export_destinations LIMIT 1',
  workspaces: 'SELECT * FROM workspaces LIMIT 1',
  trace_runs: 'SELECT * FROM trace_runs LIMIT 1',
  pgboss_schedules: 'SELECT * FROM pgboss.schedule LIMIT 1',
  create_table: 'CREATE TABLE stolen (id int)',
  create_schema: 'CREATE SCHEMA stolen',
  other_threads: "SELECT * FROM agent_threads WHERE deployment_id <> current_setting('probe.deployment')::uuid",
  other_runs: "SELECT * FROM agent_runs WHERE deployment_id <> current_setting('probe.deployment')::uuid",
  own_threads: "SELECT * FROM agent_threads WHERE deployment_id = current_setting('probe.deployment')::uuid",
};

const probingGraph = {
  'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' } }),
  'agent.ts': `
import pg from 'pg';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  input: Annotation<string>(),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  remembered: Annotation<unknown>(),
  probes: Annotation<Record<string, string>>(),
});

async function probe(): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  const answers: Record<string, string> = {};
  try {
    await client.query("SELECT set_config('probe.deployment', $1, false)", [process.env.AGENT_PLATFORM_DEPLOYMENT_ID]);
    for (const [name, sql] of Object.entries(${JSON.stringify(PROBES)})) {
      answers[name] = await client.query(sql).then((result) => 'ok ' + result.rowCount, (error) => String(error.code));
    }
    answers.login = (await client.query('SELECT current_user AS name')).rows[0].name;
  } finally {
    await client.end();
  }
  return answers;
}

export const graph = new StateGraph(State)
  .addNode('remember', async (state, config) => {
    await config.store!.put(['notes'], 'last', { input: state.input });
    const item = await config.store!.get(['notes'], 'last');
    return { turns: 1, remembered: item?.value ?? null, probes: await probe() };
  })
  .addEdge(START, 'remember')
  .addEdge('remember', END)
  .compile();
`,
};

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let api: Api;

beforeAll(async () => {
  platform = await startControlPlanePlatform();
  tenant = await buildTenant(platform.system);
  api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
}, 60_000);
afterAll(() => stopControlPlanePlatform(platform));

describe("a deployed runtime's database login", () => {
  it('runs, streams, checkpoints and uses the store, but reads nothing of the platform, creates nothing and sees no other deployment', async () => {
    // Another deployment's thread and run, which the runtime must not see.
    const { pool } = platform.deps.db;
    const otherDeployment = randomUUID();
    await pool.query("INSERT INTO deployments (id, tenant_id, name, source, updated_at) VALUES ($1, $2, 'other', 'local', now())", [otherDeployment, tenant.workspace.id]);
    await pool.query('INSERT INTO agent_threads (id, deployment_id, updated_at) VALUES ($1, $2, now())', [randomUUID(), otherDeployment]);

    const repo = makeGitRepo(probingGraph);
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'probe' }) });
    expect(created.status).toBe(201);
    const deployment = created.body;
    expect((await waitForRevision(api, deployment.id, deployment.latest_revision_id)).status).toBe('DEPLOYED');

    const client = new Client({ apiUrl: `${platform.url}/deployments/${deployment.id}`, defaultHeaders: { 'x-api-key': tenant.adminKey } });
    const thread = await client.threads.create();
    const chunks: { event: string; data: any }[] = [];
    for await (const chunk of client.runs.stream(thread.thread_id, 'agent', { input: { input: 'first' }, streamMode: 'values' })) chunks.push(chunk);
    const values = chunks.filter((chunk) => chunk.event === 'values').map((chunk) => chunk.data);
    expect(values.at(-1)).toMatchObject({ turns: 1, remembered: { input: 'first' } });

    const { probes } = values.at(-1);
    expect(probes.login).toBe(runtimeLoginRole(deployment.id));
    for (const name of ['api_keys', 'deployment_secrets', 'revisions', 'oauth_providers', 'integrations', 'export_destinations', 'workspaces', 'trace_runs', 'pgboss_schedules']) {
      expect([name, probes[name]]).toEqual([name, '42501']); // insufficient_privilege
    }
    expect(probes.create_table).toBe('42501');
    expect(probes.create_schema).toBe('42501');
    expect(probes.other_threads).toBe('ok 0');
    expect(probes.other_runs).toBe('ok 0');
    expect(probes.own_threads).toBe('ok 1');

    // A second turn continues from the first's checkpoint.
    await client.runs.wait(thread.thread_id, 'agent', { input: { input: 'second' } });
    expect((await client.threads.getState(thread.thread_id)).values).toMatchObject({ turns: 2, remembered: { input: 'second' } });
    // The API serves what the graph put in the store.
    expect((await client.store.getItem(['notes'], 'last'))?.value).toEqual({ input: 'second' });

    // The runtime's own connections use the login, which is not a member of any role.
    const { rows: logins } = await pool.query<{ usename: string }>(
      "SELECT DISTINCT usename FROM pg_stat_activity WHERE application_name IN ('agent-platform-runtime', 'agent-platform-checkpoints', 'agent-platform-runs') AND usename LIKE 'agent\\_runtime\\_%'",
    );
    expect(logins.map((row) => row.usename)).toContain(runtimeLoginRole(deployment.id));
    const { rows: memberships } = await pool.query('SELECT 1 FROM pg_auth_members WHERE member = $1::regrole', [runtimeLoginRole(deployment.id)]);
    expect(memberships).toEqual([]);

    expect((await api('DELETE', `/v2/deployments/${deployment.id}`)).status).toBe(204);
  }, 240_000);
});
