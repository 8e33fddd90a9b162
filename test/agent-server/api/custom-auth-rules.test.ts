// The rules of custom-auth handlers, through the runtime's loader and the real services on the test
// database: which handler answers an event, what each kind of answer does (an HTTPException's status,
// a crash: 403 and a log line, never a 500), `$eq` and `$contains` filters in SQL, and a project whose
// auth module does not import failing to load.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryStore, MemorySaver } from '@langchain/langgraph';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGraphConfig } from '../../../src/contracts/graph-config.js';
import { newId } from '../../../src/ids.js';
import { loadCustomAuth } from '../../../src/agent-server/runtime/custom-auth.js';
import { GraphRegistry } from '../../../src/agent-server/runtime/graph-registry.js';
import { createAssistant, searchAssistants, updateAssistant } from '../../../src/agent-server/services/assistants/assistants.service.js';
import { createCron, deleteCron, getCron, searchCrons } from '../../../src/agent-server/services/crons/crons.service.js';
import { getRun } from '../../../src/agent-server/services/runs/run-reads.service.js';
import { createRun } from '../../../src/agent-server/services/runs/runs.service.js';
import { type AuthorizedContext, AuthRefusal, type CustomAuth } from '../../../src/agent-server/services/custom-auth/custom-auth.js';
import { agentContext } from '../../../src/agent-server/services/served-deployment/served-deployment.js';
import { countThreads, createThread, deleteThread, getThread, searchThreads, updateThread } from '../../../src/agent-server/services/threads/threads.service.js';
import { getItem, putItem, searchItems } from '../../../src/agent-server/services/store/store.service.js';
import { buildTenant } from '../../support/factories.js';
import { startTestLocalDeployment, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { fixtureConfig, removeDir } from '../../support/serve.js';

const FIXTURE = new URL('../../fixtures/custom-auth/', import.meta.url).pathname;
const logLines: string[] = [];
const logger = pino({ level: 'warn' }, { write: (line: string) => void logLines.push(line) });
const load = (exportName: string, file = 'rules.ts') => loadCustomAuth({ auth: { file: join(FIXTURE, file), exportName, disableStudioAuth: false, allowPlatformKeys: false } }, logger);
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => 'allowed',
    (error: unknown) => (error instanceof AuthRefusal ? `${error.status} ${error.message}` : `not a refusal: ${String(error)}`),
  );

describe('custom-auth handlers', () => {
  it('answer an event with the most specific handler: resource:action, resource, *:action, *', async () => {
    const auth = (await load('precedence'))!;
    const identity = (await auth.authenticate(new Request('http://x/')))!;
    expect(identity.user).toEqual({ identity: 'someone', display_name: 'someone', is_authenticated: true, permissions: [] });
    const handlerOf = async (resource: 'threads' | 'assistants' | 'crons' | 'store', action: string) =>
      (await auth.authorize(identity, resource, action, {}))?.handler;
    expect(await handlerOf('threads', 'read')).toBe('threads:read');
    expect(await handlerOf('threads', 'search')).toBe('threads');
    expect(await handlerOf('assistants', 'read')).toBe('*:read');
    expect(await handlerOf('crons', 'delete')).toBe('*');
    expect(await handlerOf('store', 'put')).toBe('store:get|put');
    expect(await handlerOf('store', 'search')).toBe('*');
  });

  it('turn an HTTPException into its status, message and headers; a crash, false or a bad answer into 401/403 and a log line', async () => {
    const auth = (await load('answers'))!;
    const teapot = await auth.authenticate(new Request('http://x/', { headers: { authorization: 'teapot' } })).catch((error: AuthRefusal) => error);
    expect([(teapot as AuthRefusal).status, (teapot as AuthRefusal).message, (teapot as AuthRefusal).headers]).toEqual([418, 'I brew', { 'x-brew': 'tea' }]);
    logLines.length = 0;
    expect(await refusal(auth.authenticate(new Request('http://x/', { headers: { authorization: 'nothing' } })))).toBe('401 Unauthorized');
    expect(logLines.join('')).toMatch(/authenticate handler returned neither a string nor an object/);

    const identity = (await auth.authenticate(new Request('http://x/')))!;
    // Extra fields of the user are kept; permissions and the display name are filled in.
    expect(identity).toEqual({ user: { identity: 'dana', display_name: 'dana', is_authenticated: true, permissions: ['read'], tier: 'gold' }, permissions: ['read'] });
    logLines.length = 0;
    expect(await refusal(auth.authorize(identity, 'threads', 'create', {}))).toBe('403 Forbidden');
    expect(logLines.join('')).toMatch(/an `on` handler threw.*a bug in the handler|a bug in the handler.*an `on` handler threw/);
    expect(await refusal(auth.authorize(identity, 'threads', 'read', {}))).toBe('403 Forbidden');
    expect(logLines.join('')).toMatch(/returned something other than a boolean or a filter/);
    expect(await refusal(auth.authorize(identity, 'threads', 'delete', {}))).toBe('403 Forbidden');
    expect(await refusal(auth.authorize(identity, 'threads', 'update', {}))).toBe('418 I brew');
    expect(await refusal(auth.authorize(identity, 'crons', 'search', {}))).toBe('403 Forbidden');
    // No handler for the event: allowed, unfiltered.
    expect(await auth.authorize(identity, 'assistants', 'read', {})).toBeUndefined();
  });
});

describe('a project whose auth module does not load', () => {
  const dir = mkdtempSync(join(tmpdir(), 'custom-auth-broken-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const projectWith = (authPath: string) => {
    const configPath = join(dir, `${newId()}.json`);
    writeFileSync(configPath, JSON.stringify({ graphs: { whoami: join(FIXTURE, 'whoami.ts:graph') }, auth: { path: authPath } }));
    return readGraphConfig(configPath);
  };
  const persistence = { checkpointer: new MemorySaver(), store: new InMemoryStore() };

  it('fails loading (what a build runs) naming the module and its error', async () => {
    await expect(GraphRegistry.load(projectWith(join(FIXTURE, 'broken-auth.ts:auth')), persistence, logger)).rejects.toThrow(
      /Could not load the auth "auth" from .*broken-auth\.ts: the auth module is broken/,
    );
    await expect(GraphRegistry.load(projectWith(join(FIXTURE, 'not-auth.ts:auth')), persistence, logger)).rejects.toThrow(/is not an Auth object/);
    await expect(GraphRegistry.load(projectWith(join(FIXTURE, 'auth.ts:missing')), persistence, logger)).rejects.toThrow(/is not an Auth object/);
    const loaded = await GraphRegistry.load(projectWith(join(FIXTURE, 'auth.ts:auth')), persistence, logger);
    expect(loaded.auth).toBeDefined();
  });
});

describe('filters in the services, on the database', () => {
  let platform: TestPlatform;
  let local: Awaited<ReturnType<typeof startTestLocalDeployment>>;
  let dir: string;
  let system: AuthorizedContext;
  let dana: AuthorizedContext;
  beforeAll(async () => {
    platform = await startTestPlatform();
    const tenant = await buildTenant(platform.system);
    const fixture = fixtureConfig('custom-auth');
    dir = fixture.dir;
    local = await startTestLocalDeployment(platform, { configPath: fixture.configPath, workspaceId: tenant.workspace.id });
    // The services on its agent server's own database.
    system = await agentContext(local.system, local.deploymentId);
    const handlers: CustomAuth = (await load('answers'))!;
    dana = { ...system, auth: { ...(await handlers.authenticate(new Request('http://x/')))!, handlers } };
  }, 120_000);
  afterAll(async () => {
    await local?.stop();
    await platform?.stop();
    removeDir(dir);
  });

  it('$contains keeps the rows whose array holds the value; $eq the rows equal to it', async () => {
    const shared = await createThread(system, { metadata: { members: ['dana', 'eve'] } });
    await createThread(system, { metadata: { members: ['eve'] } });
    await createThread(system, { metadata: { members: 'dana' } });
    expect((await searchThreads(dana, {})).items.map((thread) => thread.threadId)).toEqual([shared.threadId]);
    expect(await countThreads(dana, {})).toBe(1);

    const owned = await createAssistant(system, { graph_id: 'whoami', metadata: { owner: 'dana' } });
    await createAssistant(system, { graph_id: 'whoami', metadata: { owner: ['dana'] } });
    await createAssistant(system, { graph_id: 'whoami', metadata: { owner: 'eve' } });
    expect((await searchAssistants(dana, {})).items.map((assistant) => assistant.assistantId)).toEqual([owned.assistantId]);
  });

  // The Agent Server's advisory "store filters dropped": a store handler's filter narrowed nothing.
  it("a store handler's filter is applied to searches and reads of items, not dropped", async () => {
    const namespace = ['shared', crypto.randomUUID()];
    await putItem(system, { namespace, key: 'dana', value: { owner: 'dana', text: 'mine' } });
    await putItem(system, { namespace, key: 'eve', value: { owner: 'eve', text: 'not mine' } });
    expect((await searchItems(dana, { namespace_prefix: namespace })).map((item) => item.key)).toEqual(['dana']);
    expect((await getItem(dana, { namespace: namespace.join('.'), key: 'dana' }))?.value).toEqual({ owner: 'dana', text: 'mine' });
    await expect(getItem(dana, { namespace: namespace.join('.'), key: 'eve' })).rejects.toThrow('Item not found');
  });

  // The Agent Server's advisory "auth mutations not applied": what a handler changed was not stored.
  it("stores what a handler changed on every create and update, not the request as sent", async () => {
    const handlers: CustomAuth = (await load('stamps'))!;
    const stamper: AuthorizedContext = { ...system, auth: { ...(await handlers.authenticate(new Request('http://x/')))!, handlers } };
    const thread = await createThread(stamper, { metadata: { mine: true } });
    expect((await getThread(system, thread.threadId)).metadata).toEqual({ mine: true, stamped: 'threads:create' });
    await updateThread(stamper, thread.threadId, { metadata: { more: 1 } });
    expect((await getThread(system, thread.threadId)).metadata).toMatchObject({ more: 1, stamped: 'threads:update' });
    const assistant = await createAssistant(stamper, { graph_id: 'whoami' });
    expect(assistant.metadata).toMatchObject({ stamped: 'assistants:create' });
    expect((await updateAssistant(stamper, assistant.assistantId, { metadata: { more: 1 } })).metadata).toMatchObject({ stamped: 'assistants:update' });
    const run = await createRun(stamper, thread.threadId, { assistant_id: 'whoami', input: {} });
    expect((await getRun(system, thread.threadId, run.runId)).metadata).toMatchObject({ stamped: 'threads:create_run' });
    const cron = await createCron(stamper, null, { assistant_id: 'whoami', schedule: '0 0 1 1 *' });
    expect((await getCron(system, cron.cronId)).metadata).toMatchObject({ stamped: 'crons:create' });
    await deleteCron(system, cron.cronId);
    const key = crypto.randomUUID();
    await putItem(stamper, { namespace: ['notes'], key, value: { text: 'scoped' } });
    expect((await getItem(system, { namespace: 'stamped.notes', key }))?.value).toEqual({ text: 'scoped' });
  });

  it('a refusal of the handler stops the action: the service throws it, nothing changes', async () => {
    const thread = await createThread(system, { metadata: { members: ['dana'] } });
    expect(await refusal(createThread(dana, {}))).toBe('403 Forbidden');
    expect(await refusal(getThread(dana, thread.threadId))).toBe('403 Forbidden');
    expect(await refusal(updateThread(dana, thread.threadId, { metadata: { x: 1 } }))).toBe('418 I brew');
    expect(await refusal(deleteThread(dana, thread.threadId))).toBe('403 Forbidden');
    expect(await refusal(searchCrons(dana, {}))).toBe('403 Forbidden');
    expect((await getThread(system, thread.threadId)).metadata).toEqual({ members: ['dana'] });
  });
});
