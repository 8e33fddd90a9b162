// A deployed agent server's isolation. A deployment is its own unit: its agent server (the API, its
// graphs, runs, crons and store) runs in its sandbox on a database of its own, owned by a login of its
// own, behind the platform's gateway. Deployed code attacks from inside, with everything its process
// holds (DATABASE_URL, its signing key): the platform's database, another deployment's, the platform's
// event bus and advisory locks, the platform's API without a key, and the gateway's identity headers
// forged. Each attempt is shown to be made, and each fails or reaches only the deployment itself. The
// project's `http.app` and `ui` are served by that agent server, through the deployment's url.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploymentDatabaseName, dropDeploymentDatabase, ensureDeploymentDatabase, runtimeLoginRole } from '../../../src/platform/services/deployments/deployment-database.js';
import { probeSandbox } from '../../../src/platform/launcher/sandbox.js';
import { buildTenant } from '../../support/factories.js';
import { createClient } from 'graphql-ws';
import { WebSocket } from 'ws';
import { graphql, type TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, makeGitRepo, PLATFORM_CALLS_SOURCE, startControlPlanePlatform, stopControlPlanePlatform, waitForDeployed } from '../../support/deployments.js';

// What deployed code tries with its own login, in its own database; each answer is 'ok <rows>' or the SQLSTATE.
const PROBES: Record<string, string> = {
  // The platform's tables, which its database does not have (the agent server's schema is its own), and its own record of itself.
  api_keys: 'SELECT * FROM api_keys',
  deployments: 'SELECT * FROM deployments',
  served_deployments: 'SELECT * FROM served_deployments',
  own_database: 'SELECT 1 WHERE current_database() = current_setting(\'probe.database\')',
  // The platform's event bus channel: a forged stop of its own runtimes and a forged ping.
  forge_stop: "SELECT pg_notify('agent_platform_events', json_build_object('n', 'deployments.stop-runtimes', 'k', null, 'p', json_build_object('deploymentId', current_setting('probe.deployment')))::text)",
  forge_ping: "SELECT pg_notify('agent_platform_events', json_build_object('n', 'system.ping', 'k', null, 'p', json_build_object('message', 'forged', 'sentAt', now()))::text)",
  listen: 'LISTEN agent_platform_events',
  // An advisory lock the platform takes (its LangGraph set-up lock), held on a connection it keeps open.
  platform_lock: "SELECT pg_advisory_lock(hashtext('agent-platform:langgraph-setup'))",
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
  'platform-calls.ts': PLATFORM_CALLS_SOURCE,
  'agent.ts': `
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { directStatus, platformStatus } from './platform-calls.ts';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  input: Annotation<string>(),
  targets: Annotation<any>(),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  remembered: Annotation<unknown>(),
  probes: Annotation<Record<string, string>>(),
});

// Kept open: the lock it takes stays held while the test looks at the platform's.
let held: pg.Client | undefined;

/** Connects to another database of the same server with this process's own login. */
async function connectTo(database: string): Promise<string> {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = '/' + database;
  const client = new pg.Client({ connectionString: url.toString() });
  return client.connect().then(async () => { await client.end(); return 'connected'; }, (error) => String(error.code));
}

/** Logs in to its own database as another user, with a password it guesses. */
async function connectAs(user: string, password: string): Promise<string> {
  const url = new URL(process.env.DATABASE_URL!);
  url.username = user;
  url.password = password;
  const client = new pg.Client({ connectionString: url.toString() });
  return client.connect().then(async () => { await client.end(); return 'connected'; }, (error) => String(error.code));
}

async function probe(targets: { platformDatabase: string; otherDatabase: string; platformUrl: string }): Promise<Record<string, string>> {
  await held?.end();
  held = new pg.Client({ connectionString: process.env.DATABASE_URL });
  const client = held;
  await client.connect();
  const answers: Record<string, string> = {};
  await client.query("SELECT set_config('probe.deployment', $1, false), set_config('probe.database', $2, false)", [process.env.AGENT_PLATFORM_DEPLOYMENT_ID, 'agent_deployment_' + process.env.AGENT_PLATFORM_DEPLOYMENT_ID!.replace(/-/g, '')]);
  for (const [name, sql] of Object.entries(${JSON.stringify(PROBES)})) {
    answers[name] = await client.query(sql).then((result) => 'ok ' + result.rowCount, (error) => String(error.code));
  }
  answers.login = (await client.query('SELECT current_user AS name')).rows[0].name;
  // How it reaches the server: the socket's folder, when its URL names one, and what that folder holds.
  answers.unix_socket = String((await client.query('SELECT inet_client_addr() IS NULL AS unix')).rows[0].unix);
  const socketDir = new URL(process.env.DATABASE_URL!).searchParams.get('host');
  answers.socket_folder = socketDir ? readdirSync(socketDir).map((name) => name.replace(/\\d+/, 'N')).sort().join(' ') : 'none';
  answers.superuser = await connectAs('postgres', 'guessed');
  answers.platform_database = await connectTo(targets.platformDatabase);
  answers.other_database = await connectTo(targets.otherDatabase);
  // The platform's API from inside: no key, and the gateway's identity headers forged, at its own
  // deployment's url (the gateway takes them from no caller). Its address is not reachable from the
  // deployment's own network; the connection its launcher hands over (for its traces) is.
  const identity = Buffer.from(JSON.stringify({ userId: 'x', apiKeyId: 'x', access: 'write', expires: Date.now() + 60_000 })).toString('base64url');
  const forged = { 'content-type': 'application/json', 'x-agent-platform-identity': identity, 'x-agent-platform-signature': 'forged' };
  const ownUrl = targets.platformUrl + '/deployments/' + process.env.AGENT_PLATFORM_DEPLOYMENT_ID + '/threads/search';
  answers.platform_api_direct = await directStatus(ownUrl, { method: 'POST', headers: forged, body: '{}' });
  answers.platform_api = String(await platformStatus(ownUrl, { method: 'POST', headers: forged, body: '{}' }));
  answers.platform_graphql = String(await platformStatus(targets.platformUrl + '/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ deployments { id } }"}' }));
  return answers;
}

export const graph = new StateGraph(State)
  .addNode('remember', async (state, config) => {
    await config.store!.put(['notes'], 'last', { input: state.input });
    const item = await config.store!.get(['notes'], 'last');
    return { turns: 1, remembered: item?.value ?? null, probes: state.targets ? await probe(state.targets) : {} };
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
  await waitForDeployed(api, deployment.id, deployment.latest_revision_id);
}, 240_000);
let cleanupOther: (() => Promise<void>) | undefined;
afterAll(async () => {
  await cleanupOther?.();
  if (deployment) await api('DELETE', `/v2/deployments/${deployment.id}`);
  await stopControlPlanePlatform(platform);
});

describe("a deployed agent server's database", () => {
  it('runs, streams, checkpoints and uses the store on its own database, and reaches nothing of the platform or another deployment', async () => {
    const { pool } = platform.deps.db;
    // Another deployment's database and login, as its build makes them.
    const otherDeployment = randomUUID();
    await ensureDeploymentDatabase(platform.deps, otherDeployment);
    cleanupOther = () => dropDeploymentDatabase(platform.deps, otherDeployment);
    const platformDatabase = new URL(platform.deps.db.url).pathname.slice(1);
    // The platform's bus, listened to as its processes do: nothing the deployment sends may arrive.
    const heard: string[] = [];
    const listening = new AbortController();
    for (const name of ['deployments.stop-runtimes', 'system.ping'] as const) {
      void (async () => {
        for await (const event of platform.deps.events.subscribe(name, { signal: listening.signal })) heard.push(`${name} ${JSON.stringify(event)}`);
      })().catch(() => undefined);
    }

    const client = new Client({ apiUrl: deploymentUrl, defaultHeaders: { 'x-api-key': tenant.adminKey } });
    const thread = await client.threads.create();
    const chunks: { event: string; data: any }[] = [];
    const targets = { platformDatabase, otherDatabase: deploymentDatabaseName(otherDeployment), platformUrl: platform.url };
    for await (const chunk of client.runs.stream(thread.thread_id, 'agent', { input: { input: 'first', targets }, streamMode: 'values' })) chunks.push(chunk);
    const values = chunks.filter((chunk) => chunk.event === 'values').map((chunk) => chunk.data);
    expect(values.at(-1)).toMatchObject({ turns: 1, remembered: { input: 'first' } });

    const { probes } = values.at(-1);
    expect(probes).toEqual({
      login: runtimeLoginRole(deployment.id),
      // Through the server's Unix socket, whose folder its sandbox sees read-only and which holds nothing else.
      unix_socket: 'true',
      socket_folder: '.s.PGSQL.N .s.PGSQL.N.lock',
      // 28P01: the socket asks for a password as TCP does (no peer or trust login for anyone).
      superuser: '28P01',
      own_database: 'ok 1',
      // 42P01: no such table. Its own database has none of the platform's tables, and its own record of one deployment.
      api_keys: '42P01',
      deployments: '42P01',
      served_deployments: 'ok 1',
      // Made, and heard by no platform process (below).
      forge_stop: 'ok 1',
      forge_ping: 'ok 1',
      listen: 'ok null',
      platform_lock: 'ok 1',
      // 42501: permission denied for database (CONNECT is not its own there).
      platform_database: '42501',
      other_database: '42501',
      // The platform's address is its own network's loopback, where nothing listens; through the
      // connection its launcher hands over, the platform answers what any caller without a key gets.
      platform_api_direct: 'ECONNREFUSED',
      platform_api: '401',
      platform_graphql: '401',
    });
    // The attempts were aimed right: the platform has keys, the other database exists, the lock name is the platform's.
    expect((await pool.query('SELECT 1 FROM api_keys')).rowCount).toBeGreaterThan(0);
    expect((await pool.query('SELECT 1 FROM pg_database WHERE datname = $1', [deploymentDatabaseName(otherDeployment)])).rowCount).toBe(1);
    // The platform's lock of that name is free while the deployment holds its own.
    const { rows: lock } = await pool.query<{ free: boolean }>("SELECT pg_try_advisory_lock(hashtext('agent-platform:langgraph-setup')) AS free");
    expect(lock[0]!.free).toBe(true);
    await pool.query("SELECT pg_advisory_unlock(hashtext('agent-platform:langgraph-setup'))");
    // A platform event of the same kind does arrive: the listeners work.
    await platform.deps.events.publish('system.ping', { message: 'real', sentAt: new Date().toISOString() });
    await expect.poll(() => heard.length, { timeout: 5000 }).toBeGreaterThan(0);
    listening.abort();
    expect(heard).toEqual([expect.stringContaining('"message":"real"')]);

    // A second turn continues from the first's checkpoint: the deployment is still up (the forged stop reached no one).
    await client.runs.wait(thread.thread_id, 'agent', { input: { input: 'second' } });
    expect((await client.threads.getState(thread.thread_id)).values).toMatchObject({ turns: 2, remembered: { input: 'second' } });
    // The API serves what the graph put in the store.
    expect((await client.store.getItem(['notes'], 'last'))?.value).toEqual({ input: 'second' });
    // Runs record the platform user the gateway signed for.
    const [latest] = await client.runs.list(thread.thread_id, { limit: 1 });
    expect((latest as any).kwargs.config.configurable.langgraph_auth_user_id).toBe(tenant.admin.id);

    // Its data is in its own database; the platform's has no agent-server tables at all.
    expect((await pool.query("SELECT to_regclass('agent_threads') AS shared")).rows[0].shared).toBeNull();
    const own = new pg.Client({ connectionString: (await ensureDeploymentDatabase(platform.deps, deployment.id)).url });
    await own.connect();
    try {
      expect((await own.query('SELECT 1 FROM agent_threads WHERE id = $1', [thread.thread_id])).rowCount).toBe(1);
    } finally {
      await own.end();
    }
    // Its login is a member of no role.
    const { rows: memberships } = await pool.query('SELECT 1 FROM pg_auth_members WHERE member = $1::regrole', [runtimeLoginRole(deployment.id)]);
    expect(memberships).toEqual([]);
  }, 120_000);

  it("answers nothing that did not come through the gateway: a forged or missing identity is 401", async () => {
    const [server] = (await platform.deps.db.pool.query<{ url: string }>('SELECT url FROM deployment_runtimes WHERE deployment_id = $1', [deployment.id])).rows;
    const direct = await fetch(`${server!.url}/threads/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(direct.status).toBe(401);
    const identity = Buffer.from(JSON.stringify({ userId: 'x', apiKeyId: 'x', access: 'write', expires: Date.now() + 60_000 })).toString('base64url');
    const forged = await fetch(`${server!.url}/threads/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-agent-platform-identity': identity, 'x-agent-platform-signature': platform.deps.secrets.sign(identity) },
      body: '{}',
    });
    expect(forged.status).toBe(401);
  });
});

describe('WebSocket upgrades at the deployment url', () => {
  /** Sends a raw WebSocket upgrade for `path` (below the deployment url) and returns the response's head. */
  const upgrade = (path: string, key?: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(platform.url).port), new URL(platform.url).hostname);
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        if (received.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(received.split('\r\n\r\n')[0]!);
        }
      });
      socket.on('error', reject);
      socket.write(
        [
          `GET /deployments/${deployment.id}${path} HTTP/1.1`,
          `Host: ${new URL(platform.url).host}`,
          'Connection: Upgrade',
          'Upgrade: websocket',
          'Sec-WebSocket-Version: 13',
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
          ...(key ? [`x-api-key: ${key}`] : []),
          '',
          '',
        ].join('\r\n'),
      );
    });

  it("are checked like every request, and reach the deployment's agent server with the caller's signed identity", async () => {
    expect(await upgrade('/ok')).toMatch(/^HTTP\/1\.1 401 /);
    const other = await buildTenant(platform.system);
    expect(await upgrade('/ok', other.adminKey)).toMatch(/^HTTP\/1\.1 404 /);
    // Forwarded: the agent server (which takes no WebSocket at /ok) answers the request as a GET,
    // which it accepts only with the gateway's signature.
    expect(await upgrade('/ok', tenant.adminKey)).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("the platform's GraphQL on a deployed agent server", () => {
  it("reads and writes the deployment's threads, runs and store through its agent server, with the caller's role", async () => {
    const query = (text: string, variables: Record<string, unknown>, key = tenant.adminKey) => graphql(platform.url, text, { key, variables });
    const created = await query(`mutation($input: CreateThreadInput!) { createThread(input: $input) { ... on MutationCreateThreadSuccess { data { threadId } } } }`, {
      input: { deploymentId: deployment.id, metadata: { via: 'graphql' } },
    });
    const threadId = created.body.data.createThread.data.threadId;
    const run = await query(
      `mutation($input: CreateRunInput!) { createRun(input: $input) { ... on MutationCreateRunSuccess { data { runId status } } } }`,
      { input: { deploymentId: deployment.id, threadId, assistantId: 'agent', input: { input: 'via graphql' }, streamModes: ['values'] } },
    );
    const runId = run.body.data.createRun.data.runId;
    // The run's events over graphql-ws, from the deployment's agent server, until it ends.
    const events: any[] = [];
    const ws = createClient({ url: `${platform.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { 'x-api-key': tenant.adminKey } });
    await new Promise<void>((resolve, reject) =>
      ws.subscribe(
        { query: 'subscription($runId: ID!, $d: ID!) { runEvents(runId: $runId, deploymentId: $d) { seq event data } }', variables: { runId, d: deployment.id } },
        { next: (message) => (message.errors ? reject(new Error(JSON.stringify(message.errors))) : events.push(message.data!.runEvents)), error: reject, complete: resolve },
      ),
    );
    await ws.dispose();
    expect(events[0].event).toBe('metadata');
    expect(events.at(-1)).toMatchObject({ event: 'values', data: expect.objectContaining({ remembered: { input: 'via graphql' } }) });

    const read = await query(
      `query($d: ID!) { threads(deploymentId: $d) { threadId status metadata createdAt runs { runId status } } }`,
      { d: deployment.id },
    );
    const thread = read.body.data.threads.find((found: any) => found.threadId === threadId);
    expect(thread).toMatchObject({ status: 'idle', metadata: { via: 'graphql' }, runs: [{ runId, status: 'success' }] });
    expect(Number.isNaN(Date.parse(thread.createdAt))).toBe(false);
    const item = await query(`query($d: ID!) { storeItem(deploymentId: $d, namespace: ["notes"], key: "last") { value } }`, { d: deployment.id });
    expect(item.body.data.storeItem).toEqual({ value: { input: 'via graphql' } });

    // A viewer of the workspace reads, and may not write; another organization's key finds nothing.
    const viewer = await query(`query($d: ID!) { threads(deploymentId: $d) { threadId } }`, { d: deployment.id }, tenant.viewerKey);
    expect(viewer.body.data.threads.map((found: any) => found.threadId)).toContain(threadId);
    const denied = await query(`mutation($input: CreateThreadInput!) { createThread(input: $input) { __typename ... on AppError { message } } }`, { input: { deploymentId: deployment.id } }, tenant.viewerKey);
    expect(JSON.stringify(denied.body)).toMatch(/workspaces:write/);
    expect(denied.body.data?.createThread?.data).toBeUndefined();
    const other = await buildTenant(platform.system);
    const foreign = await query(`query($d: ID!) { threads(deploymentId: $d) { threadId } }`, { d: deployment.id }, other.adminKey);
    expect(foreign.body.errors?.[0]?.message).toMatch(/not found/i);
  }, 60_000);
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

    // Each answer names its request, as the platform's other routes do: the caller's id when it sent a sound one.
    expect((await call('/ok', { headers: { 'x-request-id': 'support-42' } })).headers.get('x-request-id')).toBe('support-42');
    expect((await call('/ok', { headers: { 'x-request-id': 'not an id' } })).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
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
    expect([unknown.status, await unknown.text()]).toEqual([404, 'Not found: GET /custom/nothing-here']);
    // A body over the limit is refused, not streamed on without end.
    const huge = await call('/custom/text', { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(platform.deps.config.bodyLimitBytes + 1) });
    expect(huge.status).toBe(413);
    // A chunked body (no declared length) is counted as it streams: cut at the limit, whole below it.
    const chunked = (bytes: number) =>
      call('/custom/text', {
        method: 'PUT',
        headers: { 'content-type': 'text/plain' },
        body: new Blob(['x'.repeat(bytes)]).stream(),
        duplex: 'half',
      } as RequestInit);
    expect((await chunked(platform.deps.config.bodyLimitBytes + 1)).status).toBe(413);
    const fits = await chunked(70_000);
    expect([fits.status, await fits.text()]).toEqual([202, 'got 70000 bytes']);
  });

  it("forwards a path that reads as another host's (//host/…) to the deployment's own agent server, nowhere else", async () => {
    let reached = 0;
    const elsewhere = createServer((_req, res) => {
      reached++;
      res.end('elsewhere');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await call(`//127.0.0.1:${(elsewhere.address() as AddressInfo).port}/probe`);
      expect([answer.status, await answer.text()]).toEqual([404, 'Not found: GET //127.0.0.1:' + (elsewhere.address() as AddressInfo).port + '/probe']);
      expect(reached).toBe(0);
    } finally {
      elsewhere.close();
    }
  });
});

describe('JSON-RPC routes (A2A, MCP) at the deployment url', () => {
  const rpc = (path: string, body: BodyInit, key: string | null = tenant.adminKey) =>
    fetch(`${deploymentUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key ? { 'x-api-key': key } : {}) }, body });

  it("answer what the gateway refuses in JSON-RPC's shape, as the agent server answers its own errors there", async () => {
    const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: randomUUID() } });
    const anonymous = await rpc('/a2a/agent', call, null);
    expect([anonymous.status, await anonymous.json()]).toEqual([401, { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/API key/) } }]);
    const foreign = await rpc('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), (await buildTenant(platform.system)).adminKey);
    expect([foreign.status, await foreign.json()]).toEqual([404, { jsonrpc: '2.0', id: null, error: { code: -32602, message: 'Deployment not found' } }]);
    // Cut at the body limit by the gateway, before the agent server parses it.
    for (const path of ['/a2a/agent', '/mcp']) {
      const huge = await rpc(path, new Uint8Array(platform.deps.config.bodyLimitBytes + 1).fill(32));
      expect([huge.status, await huge.json()]).toEqual([413, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'The request body is too large.' } }]);
    }
    // The agent server's own JSON-RPC errors pass through as they are.
    const unknown = await rpc('/a2a/nobody', call);
    expect([unknown.status, ((await unknown.json()) as { error: { message: string } }).error.message]).toEqual([404, expect.stringMatching(/Assistant not found/)]);
  });
});

/** The deployment's cgroups, wherever the platform made them (none where limits are not enforced). */
const cgroupsOf = (deploymentId: string) =>
  execFileSync('find', ['/sys/fs/cgroup', '-maxdepth', '8', '-type', 'd', '-name', deploymentId], { encoding: 'utf8' }).split('\n').filter(Boolean);

describe('deleting the deployment', () => {
  it('drops its database and login (its sessions end, nothing can log in as it again) and removes its files and cgroups from the machine', async () => {
    const role = runtimeLoginRole(deployment.id);
    const { dataDir } = platform.deps.config;
    const files = [join(dataDir, 'deployments', deployment.id), join(dataDir, 'revisions', deployment.latest_revision_id)];
    expect(files.filter(existsSync)).toEqual(files);
    const cgroups = cgroupsOf(deployment.id);
    // Aimed right: where the platform enforces limits, the deployment has cgroups to remove.
    const sandbox = probeSandbox(platform.deps.config.sandbox);
    if (sandbox.enabled && sandbox.limits.enforced) expect(cgroups).not.toEqual([]);
    const { pool } = platform.deps.db;
    const loginUrl = new URL((await ensureDeploymentDatabase(platform.deps, deployment.id)).url);
    // The login works while the deployment exists.
    const before = new pg.Client({ connectionString: loginUrl.toString() });
    await before.connect();
    await before.end();

    expect((await api('DELETE', `/v2/deployments/${deployment.id}`)).status).toBe(204);
    expect((await pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount).toBe(0);
    expect((await pool.query('SELECT 1 FROM pg_stat_activity WHERE usename = $1', [role])).rowCount).toBe(0);
    expect((await pool.query('SELECT 1 FROM pg_database WHERE datname = $1', [deploymentDatabaseName(deployment.id)])).rowCount).toBe(0);
    const after = new pg.Client({ connectionString: loginUrl.toString() });
    await expect(after.connect()).rejects.toMatchObject({ code: expect.stringMatching(/^28/) });
    await after.end().catch(() => undefined);

    // Its checkout, dependencies and caches, once its runtime stopped, and its cgroups.
    await expect.poll(() => files.filter(existsSync), { timeout: 30_000, interval: 200 }).toEqual([]);
    expect(cgroups.filter(existsSync)).toEqual([]);
  }, 60_000);
});
