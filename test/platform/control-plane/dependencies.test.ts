// A repository with its own package.json and lockfile: the build runs `npm ci`, the graph imports the
// installed package (one real, tiny npm dependency), and LangGraph still resolves from the platform's
// packages, which the repository does not declare.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { controlPlaneApi, deploymentBody, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../../support/deployments.js';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startControlPlanePlatform();
}, 60_000);
afterAll(() => stopControlPlanePlatform(platform));

it('builds with npm ci from the lockfile and runs a graph that imports its dependency', async () => {
  const tenant = await buildTenant(platform.system);
  const api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  const repo = makeGitRepo({
    'package.json': JSON.stringify({ name: 'with-deps', private: true, type: 'module', dependencies: { ms: '2.1.3' } }),
    'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' } }),
    'agent.ts': `
import ms from 'ms';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ input: Annotation<string>(), millis: Annotation<number>() });
export const graph = new StateGraph(State)
  .addNode('convert', (state) => ({ millis: ms(state.input) }))
  .addEdge(START, 'convert')
  .addEdge('convert', END)
  .compile();
`,
  });
  // The lockfile, made by npm itself, committed like a real project's.
  execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: repo.dir });
  repo.commit('locked', { 'package-lock.json': readFileSync(join(repo.dir, 'package-lock.json'), 'utf8') });

  const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'with-deps', repo_ref: 'locked' }) });
  expect(created.status).toBe(201);
  const revision = await waitForRevision(api, created.body.id, created.body.latest_revision_id, 300_000);
  const logs = (await api('GET', `/v2/deployments/${created.body.id}/revisions/${revision.id}/logs?type=build`)).body.resources.map((line: any) => line.message).join('\n');
  expect(revision.status, logs).toBe('DEPLOYED');
  expect(logs).toContain('npm ci');

  const client = new Client({ apiUrl: created.body.url, defaultHeaders: { 'x-api-key': tenant.adminKey } });
  const thread = await client.threads.create();
  expect(await client.runs.wait(thread.thread_id, 'agent', { input: { input: '2 minutes' } })).toMatchObject({ millis: 120_000 });
  expect((await api('DELETE', `/v2/deployments/${created.body.id}`)).status).toBe(204);
}, 400_000);
