// Repositories shaped as people have them, deployed unchanged through the control plane and run
// through the official SDK. Each fixture under test/fixtures/repositories/ reproduces what public
// LangGraph.js templates and examples do (made for this suite, not copied):
//   - `env-missing`: `"env": ".env"` with the file kept out of git; its value comes as a secret;
//   - `yarn-classic`, `yarn-berry` (node-modules linker), `yarn-berry-pnp` (no .yarnrc.yml: Plug'n'Play),
//     `pnpm`: lockfiles whose packages npm refuses (ERESOLVE: `ajv-keywords@5.1.0` asks for ajv 8 as a
//     peer, the lockfile settled ajv 6), installed frozen with the package manager they name;
//   - `monorepo-yarn`, `monorepo-pnpm`: langgraph.json in `apps/agent`, the lockfile at the workspace's
//     root, the graph importing a workspace package;
//   - `langgraph-025`: a graph on @langchain/langgraph 0.2.5 (npm ci), exported compiled, as a
//     StateGraph, and as sync and async factories;
//   - `python`: a Python project, refused at once with a sentence.
// And a redeploy whose lockfile did not change takes the serving revision's packages instead of
// installing again.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, type GitRepo, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../../support/deployments.js';

const FIXTURES = new URL('../../fixtures/repositories/', import.meta.url).pathname;

/**
 * A fixture's files, dotfiles included, as makeGitRepo takes them; the graph several fixtures share
 * (shared/) is written where each one's langgraph.json names it.
 */
function fixture(name: string, extra: Record<string, string> = {}): Record<string, string> {
  const shared = (file: string) => readFileSync(join(FIXTURES, 'shared', file), 'utf8');
  const graphs: Record<string, Record<string, string>> = {
    'yarn-classic': { 'agent.ts': shared('ajv-agent.ts') },
    'yarn-berry': { 'agent.ts': shared('ajv-agent.ts') },
    'yarn-berry-pnp': { 'agent.ts': shared('ajv-agent.ts') },
    pnpm: { 'agent.ts': shared('ajv-agent.ts') },
    'monorepo-yarn': { 'apps/agent/src/graph.ts': shared('workspace-agent.ts') },
    'monorepo-pnpm': { 'apps/agent/src/graph.ts': shared('workspace-agent.ts') },
  };
  const root = join(FIXTURES, name);
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else files[relative(root, path)] = readFileSync(path, 'utf8');
    }
  };
  walk(root);
  return { ...files, ...graphs[name], ...extra };
}

let platform: TestPlatform;
let api: Api;
let adminKey: string;
const created: string[] = [];

beforeAll(async () => {
  platform = await startControlPlanePlatform();
  const tenant = await buildTenant(platform.system);
  adminKey = tenant.adminKey;
  api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
}, 60_000);
afterAll(async () => {
  for (const id of created) await api('DELETE', `/v2/deployments/${id}`);
  await stopControlPlanePlatform(platform);
});

type Deployed = { id: string; url: string; revision: any; logs: string; client: Client };

/** Deploys a repository and waits for its revision; the build log comes back with it. */
async function deploy(repo: GitRepo, options: { name: string; graph_config_path?: string; secrets?: { name: string; value: string }[] }): Promise<Deployed> {
  const response = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, options) });
  expect(response.status).toBe(201);
  created.push(response.body.id);
  const revision = await waitForRevision(api, response.body.id, response.body.latest_revision_id, 400_000);
  const logs = await buildLog(response.body.id, revision.id);
  return { id: response.body.id, url: response.body.url, revision, logs, client: new Client({ apiUrl: response.body.url, defaultHeaders: { 'x-api-key': adminKey } }) };
}

async function buildLog(deploymentId: string, revisionId: string): Promise<string> {
  const { body } = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`);
  return body.resources.map((line: { message: string }) => line.message).join('\n');
}

/** DEPLOYED, its graphs listed, their schemas served, and a run that answers as the graph's code says. */
async function expectServes(deployed: Deployed, graphs: string[], input: string, reply: string | RegExp): Promise<void> {
  expect(deployed.revision.status, deployed.logs).toBe('DEPLOYED');
  const assistants = await deployed.client.assistants.search({ limit: 20 });
  expect(assistants.map((assistant) => assistant.graph_id).sort()).toEqual([...graphs].sort());
  for (const assistant of assistants) {
    const schemas = await deployed.client.assistants.getSchemas(assistant.assistant_id);
    expect(schemas.graph_id).toBe(assistant.graph_id);
    expect(schemas.input_schema).toBeTruthy();
  }
  for (const graph of graphs) {
    const thread = await deployed.client.threads.create();
    const state = (await deployed.client.runs.wait(thread.thread_id, graph, { input: { input } })) as { reply: string };
    expect(state.reply).toMatch(typeof reply === 'string' ? new RegExp(`^${reply.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) : reply);
  }
}

const AJV = 'ajv 6.12.6, ajv-keywords 5.1.0';

// Concurrent: the pipeline builds two at a time, so the file takes about half as long.
describe.concurrent('repositories as people have them', () => {
  it("an env file kept out of git: the build says so and carries on; the value comes from the deployment's secrets", async () => {
    const deployed = await deploy(makeGitRepo(fixture('env-missing')), { name: 'env-missing', secrets: [{ name: 'GREETING', value: 'Hello' }] });
    expect(deployed.logs).toContain('env file ".env" is not in the repository');
    await expectServes(deployed, ['agent'], 'there', 'Hello there');
  }, 120_000);

  it.each([
    ['yarn-classic', /yarn@1\.22\.22 install --frozen-lockfile/],
    ['yarn-berry', /yarn@4\.9\.1 install --immutable/],
    ['yarn-berry-pnp', /yarn@4\.9\.1 install --immutable/],
    ['pnpm', /pnpm@10\.5\.1 install --frozen-lockfile/],
  ])('%s: installs frozen with the package manager its lockfile names (npm would refuse these packages)', async (name, command) => {
    const deployed = await deploy(makeGitRepo(fixture(name)), { name });
    expect(deployed.logs).toMatch(command);
    await expectServes(deployed, ['agent'], 'hi', `hi: ${AJV}`);
  }, 400_000);

  it.each(['monorepo-yarn', 'monorepo-pnpm'])('%s: a config in a workspace installs at the workspace root and imports its workspace package', async (name) => {
    const deployed = await deploy(makeGitRepo(fixture(name)), { name, graph_config_path: 'apps/agent/langgraph.json' });
    expect(deployed.logs).toMatch(/install .* in \.$/m);
    await expectServes(deployed, ['agent'], 'hi', /^hello hi from @fx\/shared/);
  }, 400_000);

  it('a graph on LangGraph.js 0.2.5: compiled, uncompiled, and sync and async factories run, stream, keep state and resume', async () => {
    const deployed = await deploy(makeGitRepo(fixture('langgraph-025')), { name: 'langgraph-025' });
    expect(deployed.logs).toMatch(/npm ci/);
    expect(deployed.logs).toMatch(/node_version 20: served by Node\.js/);
    expect(deployed.revision.status, deployed.logs).toBe('DEPLOYED');
    const { client } = deployed;
    const graphs = { compiled: 'compiled', uncompiled: 'uncompiled', factory: 'sync factory', async_factory: 'async factory' };
    expect((await client.assistants.search()).map((assistant) => assistant.graph_id).sort()).toEqual(Object.keys(graphs).sort());
    for (const [graph, how] of Object.entries(graphs)) {
      const reply = `${how} on @langchain/langgraph 0.2.5: hi`;
      const thread = await client.threads.create();
      expect(await client.runs.wait(thread.thread_id, graph, { input: { input: 'hi' } })).toMatchObject({ reply });
      // Checkpointed: the thread's state and history are the graph's.
      expect((await client.threads.getState(thread.thread_id)).values).toMatchObject({ input: 'hi', reply });
      expect((await client.threads.getHistory(thread.thread_id)).length).toBeGreaterThan(1);
      // A values stream and a stateless run (one stream mode: LangGraph.js 0.2 tags chunks only for two).
      const chunks: { event: string; data: any }[] = [];
      for await (const chunk of client.runs.stream(thread.thread_id, graph, { input: { input: 'again' }, streamMode: 'values' })) chunks.push(chunk);
      expect(chunks.filter((chunk) => chunk.event === 'values').at(-1)?.data).toMatchObject({ reply: `${how} on @langchain/langgraph 0.2.5: again` });
      expect(await client.runs.wait(null, graph, { input: { input: 'alone' } })).toMatchObject({ reply: `${how} on @langchain/langgraph 0.2.5: alone` });
      expect((await client.assistants.getSchemas(graph)).graph_id).toBe(graph);
    }
    // An interrupt before the node, then a resume.
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'compiled', { input: { input: 'paused' }, interruptBefore: ['answer'] });
    expect((await client.threads.getState(thread.thread_id)).next).toEqual(['answer']);
    expect(await client.runs.wait(thread.thread_id, 'compiled', { input: null })).toMatchObject({ reply: 'compiled on @langchain/langgraph 0.2.5: paused' });
  }, 400_000);

  it('a redeploy whose lockfile did not change takes the packages of the revision serving now, and serves its new code', async () => {
    const repo = makeGitRepo(fixture('yarn-classic'));
    const first = await deploy(repo, { name: 'redeploy' });
    await expectServes(first, ['agent'], 'one', `one: ${AJV}`);
    const changed = repo.commit('reply-changed', { 'agent.ts': fixture('yarn-classic')['agent.ts']!.replace('${state.input}: ajv', '${state.input} (v2): ajv') });
    const patched = await api('PATCH', `/v2/deployments/${first.id}`, { body: { source_revision_config: { repo_ref: changed } } });
    expect(patched.status).toBe(200);
    const revision = await waitForRevision(api, first.id, patched.body.latest_revision_id, 400_000);
    const logs = await buildLog(first.id, revision.id);
    expect(revision.status, logs).toBe('DEPLOYED');
    expect(logs).toMatch(/lockfile and package manager unchanged since the revision serving now: its packages taken as they are/);
    expect(logs).not.toMatch(/install --frozen-lockfile in/);
    const thread = await first.client.threads.create();
    expect(await first.client.runs.wait(thread.thread_id, 'agent', { input: { input: 'two' } })).toMatchObject({ reply: `two (v2): ${AJV}` });
  }, 400_000);
});

describe.concurrent('what cannot run is refused at once, saying why', () => {
  const refused = async (name: string, files: Record<string, string>, graphConfigPath?: string) => {
    const deployed = await deploy(makeGitRepo(files), { name, graph_config_path: graphConfigPath });
    expect(deployed.revision.status).toBe('BUILD_FAILED');
    return deployed.logs;
  };

  it('a Python project, before anything installs', async () => {
    const logs = await refused('python', fixture('python'));
    expect(logs).toContain('This is a Python LangGraph project (python_version 3.11): this platform runs LangGraph.js graphs (TypeScript or JavaScript) only');
    expect(logs).not.toMatch(/npm|yarn|pnpm/);
  });

  it('an env file or dependency outside the repository, a newer Node.js, a bun lockfile, an export that is no graph', async () => {
    const base = fixture('env-missing');
    expect(await refused('env-outside', { ...base, 'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' }, env: '/etc/hostname' }) })).toContain(
      'env file "/etc/hostname" is outside the repository',
    );
    expect(await refused('dependency-outside', { ...base, 'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' }, dependencies: ['../..'] }) })).toContain(
      'dependency "../.." is outside the repository',
    );
    expect(await refused('newer-node', { ...base, 'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' }, node_version: '99' }) })).toMatch(
      /langgraph.json asks for Node.js 99; this platform runs deployed code on Node.js \d+/,
    );
    expect(await refused('bun', { ...base, 'package.json': '{"name":"bun-project","private":true}', 'bun.lock': '{}' })).toContain("bun.lock: bun's lockfile is not supported here");
    const noGraph = await refused('no-graph', { ...base, 'agent.ts': 'export const graph = { nodes: ["a"] };\nexport const make = () => 42;\n' });
    expect(noGraph).toMatch(/Graph "agent" is not a LangGraph graph: expected a compiled graph, a StateGraph or a function returning one, got an object with keys nodes/);
    // The build log names the repository's file, not the platform's code.
    expect(noGraph).not.toMatch(/\/src\/agent-server\//);
  }, 120_000);
});
