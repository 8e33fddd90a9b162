// Who may call a deployment's agent server at /deployments/<id>: a key of its organization with a role
// in its workspace. Viewers read (GETs, searches, counts, history, version lists), editors and admins
// write, and a key with no role there (another organization, a member without a workspace role, a key
// bound to another workspace) gets 404 for reads and writes alike, as for any other tenant's row.
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { buildApiKey, buildTenant, buildUser, buildWorkspace } from '../../support/factories.js';
import { graphql, startTestLocalDeployment, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { fixtureConfig, removeDir } from '../../support/serve.js';

let platform: TestPlatform;
let local: Awaited<ReturnType<typeof startTestLocalDeployment>>;
let dir: string;
let deploymentId: string;
let keys: Record<'admin' | 'editor' | 'viewer' | 'memberWithoutRole' | 'boundElsewhere' | 'otherOrganization', string>;
const client = (key: string) => new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, apiKey: key, callerOptions: { maxRetries: 0 } });

beforeAll(async () => {
  platform = await startTestPlatform();
  const fixture = fixtureConfig();
  dir = fixture.dir;
  const [tenant, other] = [await buildTenant(platform.system), await buildTenant(platform.system)];
  const organizationId = tenant.organization.id;
  const secondWorkspace = await buildWorkspace(platform.system, organizationId);
  const editor = await buildUser(platform.system, organizationId, { workspaces: [{ workspaceId: tenant.workspace.id, role: 'WORKSPACE_EDITOR' }] });
  const member = await buildUser(platform.system, organizationId, { workspaces: [{ workspaceId: secondWorkspace.id, role: 'WORKSPACE_ADMIN' }] });
  // An editor of both workspaces whose key is bound to the second one.
  const both = await buildUser(platform.system, organizationId, {
    workspaces: [{ workspaceId: tenant.workspace.id, role: 'WORKSPACE_EDITOR' }, { workspaceId: secondWorkspace.id, role: 'WORKSPACE_EDITOR' }],
  });
  keys = {
    admin: tenant.adminKey,
    editor: (await buildApiKey(platform.system, organizationId, editor.id)).key,
    viewer: tenant.viewerKey,
    memberWithoutRole: (await buildApiKey(platform.system, organizationId, member.id)).key,
    boundElsewhere: (await buildApiKey(platform.system, organizationId, both.id, secondWorkspace.id)).key,
    otherOrganization: other.adminKey,
  };
  local = await startTestLocalDeployment(platform, { configPath: fixture.configPath, workspaceId: tenant.workspace.id });
  ({ deploymentId } = local);
}, 120_000);
afterAll(async () => {
  await local?.stop();
  await platform?.stop();
  removeDir(dir);
});

/** Every write a client of the SDK makes; each returns what it made, for the reads that follow. */
async function writeEverything(sdk: Client) {
  const assistant = await sdk.assistants.create({ graphId: 'agent', name: `a-${newId()}` });
  await sdk.assistants.update(assistant.assistant_id, { metadata: { touched: true } });
  const thread = await sdk.threads.create({ metadata: { by: 'test' } });
  await sdk.threads.update(thread.thread_id, { metadata: { touched: true } });
  // Due in an hour: it stays pending (the deployment's runtime runs), so a refused cancel shows.
  const run = await sdk.runs.create(thread.thread_id, 'agent', { input: { messages: [] }, afterSeconds: 3600 });
  const cron = await sdk.crons.create('agent', { schedule: '0 0 1 1 *', input: {} });
  await sdk.store.putItem(['roles', 'test'], 'k', { v: 1 });
  return { assistant, thread, run, cron };
}

async function readEverything(sdk: Client, made: Awaited<ReturnType<typeof writeEverything>>) {
  await sdk.assistants.get(made.assistant.assistant_id);
  await sdk.assistants.search({ graphId: 'agent' });
  await sdk.assistants.getVersions(made.assistant.assistant_id);
  await sdk.threads.get(made.thread.thread_id);
  await sdk.threads.search({ metadata: { by: 'test' } });
  await sdk.runs.list(made.thread.thread_id);
  await sdk.runs.get(made.thread.thread_id, made.run.run_id);
  await sdk.crons.search({});
  await sdk.store.getItem(['roles', 'test'], 'k');
  await sdk.store.searchItems(['roles']);
  await sdk.store.listNamespaces();
}

describe('roles at /deployments/<id>', () => {
  it('lets admins and editors write and read', async () => {
    for (const key of [keys.admin, keys.editor]) {
      const made = await writeEverything(client(key));
      await readEverything(client(key), made);
    }
  });

  it('lets a workspace viewer read everything and write nothing (403, nothing changed)', async () => {
    const made = await writeEverything(client(keys.admin));
    const viewer = client(keys.viewer);
    await readEverything(viewer, made);
    expect(await viewer.threads.count({ metadata: { by: 'test' } })).toBeGreaterThan(0);
    expect(await viewer.assistants.count({ graphId: 'agent' })).toBeGreaterThan(0);
    expect(await viewer.crons.count({})).toBeGreaterThan(0);

    const attempts: [string, () => Promise<unknown>][] = [
      ['create an assistant', () => viewer.assistants.create({ graphId: 'agent' })],
      ['update an assistant', () => viewer.assistants.update(made.assistant.assistant_id, { metadata: { by: 'viewer' } })],
      ['delete an assistant', () => viewer.assistants.delete(made.assistant.assistant_id)],
      ['create a thread', () => viewer.threads.create()],
      ['update a thread', () => viewer.threads.update(made.thread.thread_id, { metadata: { by: 'viewer' } })],
      ['delete a thread', () => viewer.threads.delete(made.thread.thread_id)],
      ['copy a thread', () => viewer.threads.copy(made.thread.thread_id)],
      ['create a run', () => viewer.runs.create(made.thread.thread_id, 'agent', { input: {} })],
      ['cancel a run', () => viewer.runs.cancel(made.thread.thread_id, made.run.run_id)],
      ['create a cron', () => viewer.crons.create('agent', { schedule: '0 0 1 1 *', input: {} })],
      ['delete a cron', () => viewer.crons.delete(made.cron.cron_id)],
      ['put a store item', () => viewer.store.putItem(['roles', 'test'], 'k', { v: 2 })],
      ['delete a store item', () => viewer.store.deleteItem(['roles', 'test'], 'k')],
    ];
    for (const [what, attempt] of attempts) await expect(attempt(), what).rejects.toThrow(/HTTP 403/);

    const admin = client(keys.admin);
    expect((await admin.assistants.get(made.assistant.assistant_id)).metadata).toEqual({ touched: true });
    expect((await admin.threads.get(made.thread.thread_id)).metadata).toMatchObject({ touched: true });
    expect((await admin.runs.get(made.thread.thread_id, made.run.run_id)).status).toBe('pending');
    expect((await admin.store.getItem(['roles', 'test'], 'k'))?.value).toEqual({ v: 1 });
    expect((await admin.crons.search({})).map((cron) => cron.cron_id)).toContain(made.cron.cron_id);
  });

  it('answers 404 to keys with no role in the deployment’s workspace, for reads and writes', async () => {
    const made = await writeEverything(client(keys.admin));
    for (const key of [keys.memberWithoutRole, keys.boundElsewhere, keys.otherOrganization]) {
      const stranger = client(key);
      await expect(stranger.threads.get(made.thread.thread_id)).rejects.toThrow(/HTTP 404/);
      await expect(stranger.assistants.search({})).rejects.toThrow(/HTTP 404/);
      await expect(stranger.threads.create()).rejects.toThrow(/HTTP 404/);
      await expect(stranger.store.putItem(['roles', 'test'], 'k', { v: 3 })).rejects.toThrow(/HTTP 404/);
    }
    expect(await client(keys.admin).threads.count({})).toBeGreaterThan(0);
  });

  it('classifies JSON-RPC calls: a viewer lists MCP tools but may not call one', async () => {
    const mcp = (key: string, method: string, params: unknown = {}) =>
      fetch(`${platform.url}/deployments/${deploymentId}/mcp`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
    expect((await mcp(keys.viewer, 'tools/list')).status).toBe(200);
    expect((await mcp(keys.viewer, 'tools/call', { name: 'agent', arguments: {} })).status).toBe(403);
    expect((await mcp(keys.memberWithoutRole, 'tools/list')).status).toBe(404);
  });

  it('applies the same rules to the platform’s GraphQL mutations of a deployment’s resources', async () => {
    const createThread = `mutation($input: CreateThreadInput!) { createThread(input: $input) { __typename ... on MutationCreateThreadSuccess { data { threadId } } ... on AppError { message } } }`;
    const variables = { input: { deploymentId } };
    const byEditor = await graphql(platform.url, createThread, { key: keys.editor, variables });
    expect(byEditor.body.data?.createThread.__typename).toBe('MutationCreateThreadSuccess');
    const threadId = byEditor.body.data!.createThread.data.threadId;

    const byViewer = await graphql(platform.url, createThread, { key: keys.viewer, variables });
    expect(JSON.stringify(byViewer.body)).toMatch(/workspaces:write/);
    expect(byViewer.body.data?.createThread?.data).toBeUndefined();
    const readByViewer = await graphql(platform.url, `query($d: ID!, $t: ID!) { thread(deploymentId: $d, id: $t) { ... on QueryThreadSuccess { data { threadId } } } }`, { key: keys.viewer, variables: { d: deploymentId, t: threadId } });
    expect(readByViewer.body.data?.thread?.data?.threadId).toBe(threadId);
  });
});
