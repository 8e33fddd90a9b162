// Custom auth (langgraph.json `auth`) at `serve`, through the official SDK: the fixture project's
// auth.ts issues per-user tokens, stamps `owner` on what each user creates and filters on it, and
// scopes store items to the user's namespace.
import { readFileSync, writeFileSync } from 'node:fs';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { openProtocolSocket, refusedUpgrade } from '../../support/protocol-socket.js';
import { collect, fixtureConfig, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let platform: TestPlatform;
let server: ServeProcess;
let dir: string;
let platformKey: string;
let strangerKey: string;
let env: Record<string, string>;
const as = (token: string, headers: Record<string, string> = {}) =>
  new Client({ apiUrl: server.url, defaultHeaders: { authorization: `Bearer ${token}`, ...headers }, callerOptions: { maxRetries: 0 } });
let alice: Client;
let bob: Client;
let reader: Client;

beforeAll(async () => {
  const fixture = fixtureConfig('custom-auth');
  dir = fixture.dir;
  // The deployment belongs to a workspace whose key is the studio's credential; another's key is not.
  platform = await startTestPlatform();
  const [tenant, stranger] = [await buildTenant(platform.system), await buildTenant(platform.system)];
  platformKey = tenant.adminKey;
  strangerKey = stranger.adminKey;
  env = { AGENT_SERVER_TRACE_WORKSPACE_ID: tenant.workspace.id };
  server = await startServe({ configPath: fixture.configPath, dir, env, readyTimeoutMs: 170_000 });
  alice = as('token-alice');
  bob = as('token-bob');
  reader = as('token-reader');
}, 180_000);
afterAll(async () => {
  await server?.stop();
  await platform?.stop();
  removeDir(dir);
});

/** A key of another organization: serve refuses it (403); a deployment's url does not show that the deployment exists (404, as to any key without a role there). */
const strangerStatus = () => (server.deployed ? 404 : 403);

const status = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return 200;
  } catch (error) {
    return Number(/HTTP (\d{3})/.exec(String(error))?.[1] ?? 0);
  }
};

describe('custom auth at serve', () => {
  it('answers unknown callers 401 with the handler’s message, a crashing handler 401, and /info to anyone', async () => {
    const anonymous = await fetch(`${server.url}/threads/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([anonymous.status, await anonymous.text()]).toEqual([401, 'Invalid token']);
    expect(await status(as('token-nobody').threads.search())).toBe(401);
    const crash = await fetch(`${server.url}/assistants/search`, { method: 'POST', headers: { authorization: 'Bearer crash', 'content-type': 'application/json' }, body: '{}' });
    expect([crash.status, await crash.text()]).toEqual([401, 'Unauthorized']);
    expect((await fetch(`${server.url}/info`)).status).toBe(200);
    // GraphQL does not run the project's handlers, so at serve it needs a platform key too.
    const graphql = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
    expect(graphql.status).toBe(401);
  });

  it('refuses an action the handler denies (missing permission): 403', async () => {
    expect(await status(reader.threads.create())).toBe(403);
    expect(await status(reader.assistants.create({ graphId: 'whoami' }))).toBe(403);
    expect(await status(reader.store.putItem(['notes'], 'a', { text: 'x' }))).toBe(403);
    // Reading is allowed, and finds nothing of anyone else.
    expect(await reader.threads.search()).toEqual([]);
  });

  it('shows each user only their own threads and runs, across every route', async () => {
    const mine = await alice.threads.create({ metadata: { topic: 'a' } });
    const theirs = await bob.threads.create({ metadata: { topic: 'b' } });
    expect(mine.metadata).toMatchObject({ topic: 'a', owner: 'alice' });
    const result = (await alice.runs.wait(mine.thread_id, 'whoami', { input: {} })) as Record<string, unknown>;
    expect(result).toEqual({ user: 'alice', user_id: 'alice', permissions: ['write'], org: 'acme' });
    await bob.runs.wait(theirs.thread_id, 'whoami', { input: {} });

    expect((await alice.threads.search()).map((t) => t.thread_id)).toEqual([mine.thread_id]);
    expect(await alice.threads.count()).toBe(1);
    expect((await bob.threads.search({ metadata: { topic: 'a' } })).length).toBe(0);
    const [run] = await alice.runs.list(mine.thread_id);
    expect(run!.metadata).toMatchObject({ owner: 'alice' });
    // The user is recorded on the run, in the config its graph was given.
    expect(((run as unknown as { kwargs: unknown }).kwargs as { config: { configurable: Record<string, unknown> } }).config.configurable).toMatchObject({
      langgraph_auth_user_id: 'alice',
      langgraph_auth_user: { identity: 'alice', display_name: 'Alice', org: 'acme' },
    });

    const other = theirs.thread_id;
    const [bobRun] = await bob.runs.list(other);
    const refusals = await Promise.all([
      status(alice.threads.get(other)),
      status(alice.threads.update(other, { metadata: { topic: 'mine now' } })),
      status(alice.threads.copy(other)),
      status(alice.threads.getState(other)),
      status(alice.threads.getHistory(other)),
      status(alice.threads.updateState(other, { values: {} })),
      status(alice.runs.list(other)),
      status(alice.runs.get(other, bobRun!.run_id)),
      status(alice.runs.join(other, bobRun!.run_id)),
      status(alice.runs.cancel(other, bobRun!.run_id)),
      status(alice.runs.delete(other, bobRun!.run_id)),
      status(alice.runs.wait(other, 'whoami', { input: {} })),
      fetch(`${server.url}/runs/cancel`, {
        method: 'POST',
        headers: { authorization: 'Bearer token-alice', 'content-type': 'application/json' },
        body: JSON.stringify({ run_ids: [bobRun!.run_id] }),
      }).then((response) => response.status),
      status(alice.threads.delete(other)),
    ]);
    expect(refusals).toEqual(refusals.map(() => 404));
    const stream = await fetch(`${server.url}/threads/${other}/stream`, { headers: { authorization: 'Bearer token-alice' } });
    expect(stream.status).toBe(404);
    // Bob's thread and run are untouched.
    expect((await bob.threads.get(other)).metadata).toMatchObject({ topic: 'b', owner: 'bob' });
    expect((await bob.runs.get(other, bobRun!.run_id)).status).toBe('success');
    // A copy is the copier's own.
    const copy = await alice.threads.copy(mine.thread_id);
    expect(copy.metadata).toMatchObject({ owner: 'alice' });
    // A stateless run reads the user too.
    expect(await alice.runs.wait(null, 'whoami', { input: {} })).toMatchObject({ user: 'alice' });
  });

  // The Agent Server's advisories: `if_not_exists: "create"` on a run let a caller past the thread's
  // ownership, and a handler's changes to the value (the owner it stamps) were not applied.
  it('creates a run with if_not_exists=create only on a new thread, its own; never on another user’s', async () => {
    const theirs = await bob.threads.create();
    expect(await status(alice.runs.create(theirs.thread_id, 'whoami', { input: {}, ifNotExists: 'create' }))).toBe(404);
    expect(await status(alice.runs.wait(theirs.thread_id, 'whoami', { input: {}, ifNotExists: 'create' }))).toBe(404);
    expect(await bob.runs.list(theirs.thread_id)).toEqual([]);
    expect((await bob.threads.get(theirs.thread_id)).metadata).toMatchObject({ owner: 'bob' });

    const fresh = crypto.randomUUID();
    expect(await alice.runs.wait(fresh, 'whoami', { input: {}, ifNotExists: 'create' })).toMatchObject({ user: 'alice' });
    // The thread it made is stamped by the handler as any thread alice creates, and is hers alone.
    expect((await alice.threads.get(fresh)).metadata).toMatchObject({ owner: 'alice' });
    expect(await status(bob.threads.get(fresh))).toBe(404);
    expect(await status(bob.runs.create(fresh, 'whoami', { input: {}, ifNotExists: 'create' }))).toBe(404);
  });

  it('answers joining the stream of another user’s run with an error event saying 404, as the reference', async () => {
    const theirs = await bob.threads.create();
    const run = await bob.runs.create(theirs.thread_id, 'whoami', { input: {} });
    const parts = await collect(alice.runs.joinStream(theirs.thread_id, run.run_id));
    expect(parts).toEqual([{ event: 'error', data: { error: 'Error', message: `404: Thread ${theirs.thread_id} not found` } }]);
    // The owner's join streams the run.
    expect((await collect(bob.runs.joinStream(theirs.thread_id, run.run_id))).every((part) => part.event !== 'error')).toBe(true);
  });

  it('ends a thread stream with an error event when its user loses access to the thread mid-way', async () => {
    const thread = await alice.threads.create();
    const stream = await fetch(`${server.url}/threads/${thread.thread_id}/stream?stream_mode=values`, { headers: { authorization: 'Bearer token-alice' } });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = '';
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) return;
        text += new TextDecoder().decode(value);
      }
    };
    await alice.runs.wait(thread.thread_id, 'whoami', { input: {} });
    await readUntil(/"user":"alice"/);
    // The studio hands the thread to bob, who runs it: alice's stream must not show his run.
    const studio = new Client({ apiUrl: server.url, apiKey: platformKey, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    await studio.threads.update(thread.thread_id, { metadata: { owner: 'bob' } });
    await bob.runs.wait(thread.thread_id, 'whoami', { input: {} });
    await readUntil(/event: error[\s\S]*$/);
    await readUntil(/$^/); // to the end: the server closes the stream
    expect(text).toMatch(/event: error\ndata: \{"error":"NotFound","message":"Thread with ID [^"]+ not found"\}/);
    expect(text).not.toContain('"user":"bob"');
  });

  it('shows each user only their own assistants', async () => {
    const mine = await alice.assistants.create({ graphId: 'whoami', name: 'mine' });
    const theirs = await bob.assistants.create({ graphId: 'whoami', name: 'theirs' });
    expect(mine.metadata).toMatchObject({ owner: 'alice' });
    expect((await alice.assistants.search()).map((a) => a.assistant_id)).toEqual([mine.assistant_id]);
    expect(await bob.assistants.count()).toBe(1);
    const refusals = await Promise.all([
      status(alice.assistants.get(theirs.assistant_id)),
      status(alice.assistants.update(theirs.assistant_id, { name: 'stolen' })),
      status(alice.assistants.getVersions(theirs.assistant_id)),
      status(alice.assistants.setLatest(theirs.assistant_id, 1)),
      status(alice.assistants.getSchemas(theirs.assistant_id)),
      status(alice.assistants.delete(theirs.assistant_id)),
    ]);
    expect(refusals).toEqual(refusals.map(() => 404));
    expect((await bob.assistants.get(theirs.assistant_id)).name).toBe('theirs');
  });

  it('shows each user only their own crons', async () => {
    const mine = await alice.crons.create('whoami', { schedule: '0 0 1 1 *', input: {} });
    const theirs = await bob.crons.create('whoami', { schedule: '0 0 1 1 *', input: {} });
    expect((await alice.crons.search()).map((c) => c.cron_id)).toEqual([mine.cron_id]);
    expect(await bob.crons.count()).toBe(1);
    expect(await status(alice.crons.update(theirs.cron_id, { enabled: false }))).toBe(404);
    expect(await status(alice.crons.delete(theirs.cron_id))).toBe(404);
    // Its firings run as its creator.
    expect((mine.payload as { config: { configurable: Record<string, unknown> } }).config.configurable.langgraph_auth_user_id).toBe('alice');
    const bobsThread = await bob.threads.create();
    expect(await status(alice.crons.createForThread(bobsThread.thread_id, 'whoami', { schedule: '0 0 1 1 *', input: {} }))).toBe(404);
    expect((await bob.crons.search()).map((c) => c.cron_id)).toEqual([theirs.cron_id]);
  });

  it('keeps each user’s store items in their own namespace', async () => {
    await alice.store.putItem(['notes'], 'todo', { text: 'alice’s' });
    await bob.store.putItem(['notes'], 'todo', { text: 'bob’s' });
    expect((await alice.store.getItem(['notes'], 'todo'))?.value).toEqual({ text: 'alice’s' });
    expect((await bob.store.getItem(['notes'], 'todo'))?.value).toEqual({ text: 'bob’s' });
    expect((await alice.store.searchItems(['notes'])).items.map((item) => [item.namespace, item.value])).toEqual([[['alice', 'notes'], { text: 'alice’s' }]]);
    expect((await bob.store.listNamespaces()).namespaces).toEqual([['bob', 'notes']]);
    await alice.store.deleteItem(['notes'], 'todo');
    expect((await bob.store.getItem(['notes'], 'todo'))?.value).toEqual({ text: 'bob’s' });
  });

  it('authenticates the thread stream’s WebSocket on its upgrade, and shows a user only their own threads on it', async () => {
    expect(await refusedUpgrade(server.url, crypto.randomUUID())).toEqual({ status: 401, body: 'Invalid token' });
    expect((await refusedUpgrade(server.url, crypto.randomUUID(), { authorization: 'Bearer token-nobody' })).status).toBe(401);

    const threadId = crypto.randomUUID();
    const mine = await openProtocolSocket(server.url, threadId, { authorization: 'Bearer token-alice' });
    try {
      // Subscribed before the thread exists: run.start makes it, as alice's.
      expect(await mine.command('subscription.subscribe', { channels: ['values', 'lifecycle'] })).toMatchObject({ type: 'success' });
      expect(await mine.command('run.start', { assistant_id: 'whoami', input: {} })).toMatchObject({ type: 'success' });
      await mine.until(() => mine.events.some((event) => event.method === 'values' && event.params.data.user === 'alice'));
      expect((await alice.threads.get(threadId)).metadata).toMatchObject({ owner: 'alice' });
    } finally {
      mine.close();
    }

    // Bob is a user, so his socket opens; alice's thread is not his to follow, read or run.
    const theirs = await openProtocolSocket(server.url, threadId, { authorization: 'Bearer token-bob' });
    try {
      expect(await theirs.command('subscription.subscribe', { channels: ['values', 'lifecycle'] })).toMatchObject({ type: 'error', error: 'permission_denied' });
      expect(await theirs.command('state.get', {})).toMatchObject({ type: 'error' });
      expect(await theirs.command('run.start', { assistant_id: 'whoami', input: {} })).toMatchObject({ type: 'error' });
      expect(theirs.events).toEqual([]);
    } finally {
      theirs.close();
    }
    expect(await alice.runs.list(threadId)).toHaveLength(1);

    // A user without the write permission starts no run over the socket either.
    const readOnly = await openProtocolSocket(server.url, crypto.randomUUID(), { authorization: 'Bearer token-reader' });
    try {
      expect(await readOnly.command('run.start', { assistant_id: 'whoami', input: {} })).toMatchObject({ type: 'error', error: 'permission_denied' });
    } finally {
      readOnly.close();
    }

    // The studio follows anyone's thread: subscribing replays alice's run.
    const studio = await openProtocolSocket(server.url, threadId, { 'x-api-key': platformKey, 'x-auth-scheme': 'langsmith' });
    try {
      expect(await studio.command('subscription.subscribe', { channels: ['values'] })).toMatchObject({ type: 'success' });
      await studio.until(() => studio.events.some((event) => event.params.data.user === 'alice'));
    } finally {
      studio.close();
    }
    expect((await refusedUpgrade(server.url, threadId, { 'x-api-key': strangerKey, 'x-auth-scheme': 'langsmith' })).status).toBe(strangerStatus());
  });

  // langgraph-api 1.5: two callers' run.start at once on one thread, over sockets of their own: each
  // run is made for its own caller, never for the other's (no auth shared through the thread).
  it('runs two callers’ concurrent run.start on one thread each as its own caller', async () => {
    const studioHeaders = { 'x-api-key': platformKey, 'x-auth-scheme': 'langsmith' };
    const studioClient = new Client({ apiUrl: server.url, apiKey: platformKey, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    const studioIdentity = ((await studioClient.runs.wait(null, 'whoami', { input: {} })) as { user: string | null }).user;
    expect(studioIdentity).not.toBe('alice');
    const thread = await alice.threads.create();
    const [mine, studio] = await Promise.all([
      openProtocolSocket(server.url, thread.thread_id, { authorization: 'Bearer token-alice' }),
      openProtocolSocket(server.url, thread.thread_id, studioHeaders),
    ]);
    try {
      const started = await Promise.all(
        Array.from({ length: 3 }, () => [mine.command('run.start', { assistant_id: 'whoami', input: {} }), studio.command('run.start', { assistant_id: 'whoami', input: {} })]).flat(),
      );
      const runIds = started.map((answer) => (answer as { result: { run_id: string } }).result.run_id);
      const users = await Promise.all(runIds.map(async (runId) => ((await studioClient.runs.join(thread.thread_id, runId)) as { user: string | null }).user));
      expect(users).toEqual(['alice', studioIdentity, 'alice', studioIdentity, 'alice', studioIdentity]);
    } finally {
      mine.close();
      studio.close();
    }
  });

  it('lets the studio in with a platform key (x-auth-scheme: langsmith), and no other key', async () => {
    const studio = new Client({ apiUrl: server.url, apiKey: platformKey, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    const owners = new Set((await studio.threads.search({ limit: 100 })).map((thread) => thread.metadata?.owner));
    expect(owners).toEqual(new Set(['alice', 'bob']));
    const forged = new Client({ apiUrl: server.url, apiKey: 'lsv2_not_a_key', defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    expect(await status(forged.threads.search())).toBe(401);
    const foreign = new Client({ apiUrl: server.url, apiKey: strangerKey, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    expect(await status(foreign.threads.search())).toBe(strangerStatus());
  });
});

describe('custom auth with disable_studio_auth', () => {
  let strict: ServeProcess | undefined;
  afterAll(async () => {
    await strict?.stop();
  });

  it('refuses the studio’s scheme: the request must authenticate like any other', async () => {
    const config = JSON.parse(readFileSync(server.configPath, 'utf8')) as { auth: Record<string, unknown> };
    config.auth.disable_studio_auth = true;
    const strictDir = fixtureConfig('custom-auth').dir;
    const configPath = `${strictDir}/langgraph.json`;
    writeFileSync(configPath, JSON.stringify(config));
    strict = await startServe({ configPath, dir: strictDir, env, readyTimeoutMs: 170_000 });
    const studio = new Client({ apiUrl: strict.url, apiKey: platformKey, defaultHeaders: { 'x-auth-scheme': 'langsmith' }, callerOptions: { maxRetries: 0 } });
    expect(await status(studio.threads.search())).toBe(401);
    const user = new Client({ apiUrl: strict.url, defaultHeaders: { authorization: 'Bearer token-alice' }, callerOptions: { maxRetries: 0 } });
    expect(await status(user.threads.search())).toBe(200);
    removeDir(strictDir);
  }, 180_000);
});

describe('custom auth with allow_langsmith_api_keys', () => {
  let open: ServeProcess | undefined;
  afterAll(async () => {
    await open?.stop();
  });

  it('takes a platform key of the workspace beside the project’s tokens, as its user; another key goes to the handler', async () => {
    // Without the setting, a platform key (no studio scheme) is no credential: the handler refuses it.
    const keyOnly = (url: string, apiKey: string) => new Client({ apiUrl: url, apiKey, callerOptions: { maxRetries: 0 } });
    expect(await status(keyOnly(server.url, platformKey).threads.search())).toBe(401);

    const config = JSON.parse(readFileSync(server.configPath, 'utf8')) as { auth: Record<string, unknown> };
    config.auth.allow_langsmith_api_keys = true;
    const openDir = fixtureConfig('custom-auth').dir;
    const configPath = `${openDir}/langgraph.json`;
    writeFileSync(configPath, JSON.stringify(config));
    open = await startServe({ configPath, dir: openDir, env, readyTimeoutMs: 170_000 });

    const platformUser = keyOnly(open.url, platformKey);
    const made = await platformUser.threads.create();
    // The project's handlers see a platform user (and stamp what it makes with its identity).
    const owner = made.metadata?.owner;
    expect(typeof owner).toBe('string');
    expect((await platformUser.threads.search()).map((thread) => thread.thread_id)).toEqual([made.thread_id]);
    expect(await platformUser.runs.wait(made.thread_id, 'whoami', { input: {} })).toMatchObject({ user: owner });
    // The project's own users go on as before, and do not see the platform user's thread.
    const aliceThere = new Client({ apiUrl: open.url, defaultHeaders: { authorization: 'Bearer token-alice' }, callerOptions: { maxRetries: 0 } });
    expect(await status(aliceThere.threads.get(made.thread_id))).toBe(404);
    // A key of another workspace, or no key at all, is the handler's to judge: no token, 401.
    expect(await status(keyOnly(open.url, strangerKey).threads.search())).toBe(401);
    expect(await status(keyOnly(open.url, 'lsv2_not_a_key').threads.search())).toBe(401);
    removeDir(openDir);
  }, 240_000);
});
