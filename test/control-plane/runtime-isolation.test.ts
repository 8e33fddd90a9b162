// A deployed runtime's isolation. Its database login has least privilege: deployed code connects with
// the DATABASE_URL its runtime was given and may read and write its own deployment's agent-server
// rows, its own threads' checkpoints and its store, and nothing else: no tenancy, keys, secrets, providers, integrations,
// exports or traces, no DDL, no other deployment's rows; the graph still runs, streams, checkpoints
// and uses the store with it. And the project's `http.app` and `ui` run in that runtime, reached
// through the deployment's url with a key of its organization.
import { randomUUID } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeLoginRole } from '../../src/services/deployments/deployment-database.js';
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
  // Checkpoints of threads that are not this deployment's (the test stores one of another deployment's).
  other_checkpoints: `SELECT * FROM langgraph.checkpoints c WHERE NOT EXISTS (SELECT 1 FROM agent_threads t WHERE t.id::text = c.thread_id AND t.deployment_id = current_setting('probe.deployment')::uuid)`,
  other_checkpoint_blobs: `SELECT * FROM langgraph.checkpoint_blobs c WHERE NOT EXISTS (SELECT 1 FROM agent_threads t WHERE t.id::text = c.thread_id AND t.deployment_id = current_setting('probe.deployment')::uuid)`,
  delete_other_checkpoints: `DELETE FROM langgraph.checkpoints c WHERE NOT EXISTS (SELECT 1 FROM agent_threads t WHERE t.id::text = c.thread_id AND t.deployment_id = current_setting('probe.deployment')::uuid)`,
  delete_checkpoint_migrations: 'DELETE FROM langgraph.checkpoint_migrations',
  delete_event_payloads: 'DELETE FROM event_payloads',
  // pg-boss: only its own run queue's jobs; no job for the platform's queues.
  other_queue_jobs: "SELECT * FROM pgboss.job_common WHERE name <> 'runs.execute.' || current_setting('probe.deployment')",
  all_jobs: 'SELECT * FROM pgboss.job',
  send_platform_job: "INSERT INTO pgboss.job_common (name, data) VALUES ('revisions.build', '{}')",
};

const project = {
  'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' }, http: { app: './app.ts:app' }, ui: { agent: './ui.tsx' } }),
  // Generative UI components, shaped like the conformance fixture's.
  'ui.tsx': `
import './ui.css';
const Card = (props: { city: string }) => <div className="card">Weather in {props.city}</div>;
export default { weather: Card };
`,
  'ui.css': '.card { padding: 8px; }\n',
  'app.ts': `
import { Hono } from 'hono';
import { streamText } from 'hono/streaming';

export const app = new Hono();
app.use('*', async (c, next) => {
  await next();
  c.header('x-project-middleware', 'seen');
});
app.get('/custom/hello', (c) => c.json({ pid: process.pid, secret: process.env.APP_SECRET ?? null, api_key: c.req.header('x-api-key') ?? null, query: c.req.query('q') ?? null }));
app.post('/custom/echo', async (c) => c.json({ echoed: await c.req.json() }, 201));
app.put('/custom/text', async (c) => c.text('got ' + (await c.req.text()).length + ' bytes', 202, { 'x-custom': 'yes' }));
app.get('/custom/stream', (c) =>
  streamText(c, async (stream) => {
    for (const part of ['one', 'two', 'three']) {
      await stream.writeln(part);
      await stream.sleep(20);
    }
  }),
);
`,
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
let deployment: { id: string; latest_revision_id: string };
let deploymentUrl: string;

beforeAll(async () => {
  platform = await startControlPlanePlatform();
  tenant = await buildTenant(platform.system);
  api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  const created = await api('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(project).url, { name: 'isolated', secrets: [{ name: 'APP_SECRET', value: 'app-s3cret' }] }) });
  expect(created.status).toBe(201);
  deployment = created.body;
  deploymentUrl = `${platform.url}/deployments/${deployment.id}`;
  expect((await waitForRevision(api, deployment.id, deployment.latest_revision_id)).status).toBe('DEPLOYED');
}, 240_000);
afterAll(async () => {
  if (deployment) await api('DELETE', `/v2/deployments/${deployment.id}`);
  await stopControlPlanePlatform(platform);
});

describe("a deployed runtime's database login", () => {
  it('runs, streams, checkpoints and uses the store, but reads nothing of the platform, creates nothing and sees no other deployment', async () => {
    // Another deployment's thread and run, which the runtime must not see.
    const { pool } = platform.deps.db;
    const otherDeployment = randomUUID();
    await pool.query("INSERT INTO deployments (id, tenant_id, name, source, updated_at) VALUES ($1, $2, 'other', 'local', now())", [otherDeployment, tenant.workspace.id]);
    const otherThread = randomUUID();
    await pool.query('INSERT INTO agent_threads (id, deployment_id, updated_at) VALUES ($1, $2, now())', [otherThread, otherDeployment]);
    // And that thread's state, which the runtime must neither read nor delete.
    await pool.query(`INSERT INTO langgraph.checkpoints (thread_id, checkpoint_ns, checkpoint_id, checkpoint, metadata) VALUES ($1, '', 'other', '{}', '{}')`, [otherThread]);
    await pool.query(`INSERT INTO langgraph.checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) VALUES ($1, '', 'messages', '1', 'json', 'secret')`, [otherThread]);

    const client = new Client({ apiUrl: deploymentUrl, defaultHeaders: { 'x-api-key': tenant.adminKey } });
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
    // 42501: insufficient_privilege (or a row-level security violation); 'ok <rows>': allowed, these rows.
    expect(probes).toMatchObject({
      create_table: '42501',
      create_schema: '42501',
      other_threads: 'ok 0',
      other_runs: 'ok 0',
      own_threads: 'ok 1',
      other_checkpoints: 'ok 0',
      other_checkpoint_blobs: 'ok 0',
      delete_other_checkpoints: 'ok 0',
      delete_checkpoint_migrations: '42501',
      delete_event_payloads: '42501',
      other_queue_jobs: 'ok 0',
      all_jobs: '42501',
      send_platform_job: '42501',
    });
    // Those 'ok 0' are not empty tables: another deployment's checkpoint and other queues' jobs are there.
    expect((await pool.query("SELECT 1 FROM pgboss.job WHERE name <> $1 LIMIT 1", [`runs.execute.${deployment.id}`])).rowCount).toBe(1);
    expect((await pool.query('SELECT 1 FROM langgraph.checkpoints WHERE thread_id = $1', [otherThread])).rowCount).toBe(1);

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
  }, 120_000);
});

describe("a deployed project's http.app", () => {
  const call = (path: string, init: RequestInit & { key?: string | null } = {}) =>
    fetch(`${deploymentUrl}${path}`, { ...init, headers: { ...(init.key === null ? {} : { 'x-api-key': init.key ?? tenant.adminKey }), ...(init.headers as Record<string, string>) } });

  it('answers its routes through the deployment url, from the runtime process, streaming, with status and headers', async () => {
    const hello = await call('/custom/hello?q=1');
    expect(hello.status).toBe(200);
    expect(hello.headers.get('x-project-middleware')).toBe('seen');
    const seen = await hello.json();
    // Run by the runtime (its secret is there), not the API process; the platform key is not passed on.
    expect(seen).toMatchObject({ secret: 'app-s3cret', api_key: null, query: '1' });
    expect(seen.pid).not.toBe(process.pid);

    const echoed = await call('/custom/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: [1, 2] }) });
    expect([echoed.status, await echoed.json()]).toEqual([201, { echoed: { a: [1, 2] } }]);

    const text = await call('/custom/text', { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(100_000) });
    expect([text.status, text.headers.get('x-custom'), await text.text()]).toEqual([202, 'yes', 'got 100000 bytes']);

    // Streamed: the first line arrives before the app finished writing.
    const stream = await call('/custom/stream');
    const reader = stream.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first.startsWith('one')).toBe(true);
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(first + rest).toBe('one\ntwo\nthree\n');

    // The agent server's own routes are still its own.
    expect((await call('/ok')).status).toBe(200);
  });

  it('serves the `ui` bundled in the runtime, its links at the deployment url', async () => {
    const client = new Client({ apiUrl: deploymentUrl, defaultHeaders: { 'x-api-key': tenant.adminKey } });
    const html = await client['~ui'].getComponent('agent', 'weather');
    const script = `${deploymentUrl}/ui/agent/entrypoint.js`;
    expect(html).toContain(`<link rel="stylesheet" href="${deploymentUrl}/ui/agent/entrypoint.css" />`);
    expect(html).toContain(`<script src="${script}" onload='__LGUI_agent.render("weather", "{{shadowRootId}}")'></script>`);
    const js = await call('/ui/agent/entrypoint.js');
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await js.text()).toContain('Weather in ');
    // Answered as `serve` answers: a graph without UI is 404, and another organization's key sees nothing.
    const missing = await call('/ui/nothing', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"weather"}' });
    expect([missing.status, await missing.text()]).toEqual([404, 'UI not found for agent "nothing"']);
    const other = await buildTenant(platform.system);
    expect((await call('/ui/agent/entrypoint.js', { key: other.adminKey })).status).toBe(404);
  });

  it("answers 404 to another organization's key, 401 without a key, and 404 for a path nobody owns", async () => {
    const other = await buildTenant(platform.system);
    const foreign = await call('/custom/hello', { key: other.adminKey });
    expect(foreign.status).toBe(404);
    expect(await foreign.text()).toBe('Deployment not found');
    expect((await call('/custom/hello', { key: null })).status).toBe(401);
    const unknown = await call('/custom/nothing-here');
    // The agent server's own 404, as for any path of a deployment without an app.
    expect([unknown.status, await unknown.text()]).toEqual([404, `Not found: GET /deployments/${deployment.id}/custom/nothing-here`]);
    // A body over the limit is refused, not streamed on without end.
    const huge = await call('/custom/text', { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(platform.deps.config.bodyLimitBytes + 1) });
    expect(huge.status).toBe(413);
  });
});

describe('deleting the deployment', () => {
  it('drops its runtime login: its sessions end and nothing can log in as it again', async () => {
    const role = runtimeLoginRole(deployment.id);
    const { pool } = platform.deps.db;
    const loginUrl = new URL(platform.deps.db.url);
    loginUrl.username = role;
    loginUrl.password = platform.deps.secrets.derive(`database-login:${deployment.id}`).key.toString('hex');
    loginUrl.searchParams.delete('options');
    // The login works while the deployment exists.
    const before = new pg.Client({ connectionString: loginUrl.toString() });
    await before.connect();
    await before.end();

    expect((await api('DELETE', `/v2/deployments/${deployment.id}`)).status).toBe(204);
    expect((await pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount).toBe(0);
    expect((await pool.query('SELECT 1 FROM pg_stat_activity WHERE usename = $1', [role])).rowCount).toBe(0);
    const after = new pg.Client({ connectionString: loginUrl.toString() });
    await expect(after.connect()).rejects.toMatchObject({ code: expect.stringMatching(/^28/) });
    await after.end().catch(() => undefined);
  }, 60_000);
});
