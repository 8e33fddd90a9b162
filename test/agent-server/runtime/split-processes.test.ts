// The api and runtime roles as two OS processes on one PostgreSQL, serving one deployment: the api
// finds the deployment and its live runtime in the database, enqueues runs the runtime executes, and
// asks the runtime what needs the graph. The graph module refuses to load in the api process, so every
// answer below proves the api never imported it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { registerLocalDeployment } from '../../../src/platform/services/deployments/local-deployments.js';
import { buildTenant } from '../../support/factories.js';
import { adminLoginUrl, databaseUrl, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { type PlatformProcess, spawnPlatform } from '../../support/processes.js';
import { collect } from '../../support/serve.js';
import { inject } from 'vitest';

const FIXTURE = new URL('../../fixtures/graphs/runtime-only.ts', import.meta.url).pathname;

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let stranger: Awaited<ReturnType<typeof buildTenant>>;
let api: PlatformProcess;
let runtime: PlatformProcess;
let client: Client;
let deploymentUrl: string;
const dir = mkdtempSync(join(tmpdir(), 'split-processes-'));

beforeAll(async () => {
  platform = await startTestPlatform();
  [tenant, stranger] = await Promise.all([buildTenant(platform.system), buildTenant(platform.system)]);
  const configPath = join(dir, 'langgraph.json');
  writeFileSync(configPath, JSON.stringify({ graphs: { nested: `${FIXTURE}:nested`, slow: `${FIXTURE}:slow` } }));
  const deployment = await registerLocalDeployment(platform.system, { configPath, workspaceId: tenant.workspace.id, deploymentId: newId() });
  const env = {
    DATABASE_URL: databaseUrl(),
    // The runtime process makes the deployment's own database with it.
    AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl(),
    AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    AGENT_PLATFORM_DATA_DIR: inject('dataDir'),
    AGENT_SERVER_TRACING: 'false',
    AGENT_PLATFORM_INGEST_THREADS: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
  };
  [api, runtime] = await Promise.all([
    spawnPlatform(['start', '--role', 'api', '--port', '0'], { ...env, AGENT_PLATFORM_TEST_API_PROCESS: 'true' }, 150_000),
    spawnPlatform(['start', '--role', 'runtime', '--deployment', deployment.deploymentId], env, 150_000),
  ]);
  deploymentUrl = `${api.url}/deployments/${deployment.deploymentId}`;
  client = new Client({ apiUrl: deploymentUrl, apiKey: tenant.adminKey, callerOptions: { maxRetries: 0 } });
}, 180_000);

afterAll(async () => {
  await Promise.all([api?.stop(), runtime?.stop()]);
  await platform?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('an api process and a runtime process serving one deployment', () => {
  it('streams a run, reads state with subgraphs and history, resumes the interrupt', async () => {
    const thread = await client.threads.create();
    const parts = await collect(client.runs.stream(thread.thread_id, 'nested', { input: {}, streamMode: ['updates'], streamSubgraphs: true }));
    expect(parts[0]?.event).toBe('metadata');
    expect(parts.map((part) => part.event)).toContain('updates');
    expect(parts.some((part) => part.event.startsWith('updates|child:'))).toBe(true);

    const state = await client.threads.getState(thread.thread_id, undefined, { subgraphs: true });
    expect(state.next).toEqual(['child']);
    const task = state.tasks[0] as { name: string; state: { next: string[]; values: { trail: string[] } } | null; interrupts: { value: unknown }[] };
    expect(task.name).toBe('child');
    expect(task.interrupts[0]?.value).toEqual({ question: 'Go on?' });
    // The subgraph's own snapshot, read from the checkpoints by the runtime's graph.
    expect(task.state?.next).toEqual(['ask']);
    expect(task.state?.values.trail).toEqual(['parent']);

    expect((await client.threads.get(thread.thread_id)).status).toBe('interrupted');
    const resumed = await client.runs.wait(thread.thread_id, 'nested', { command: { resume: 'yes' } });
    expect(resumed).toEqual({ trail: ['parent', 'child'], answer: 'yes' });
    const history = await client.threads.getHistory(thread.thread_id);
    expect(history.length).toBeGreaterThan(2);
    expect(history[0]?.values).toEqual({ trail: ['parent', 'child'], answer: 'yes' });
  });

  it('runs stateless waits and cancels a running run', async () => {
    expect(await client.runs.wait(null, 'slow', { input: { label: 'quick', delay_ms: 1 } })).toMatchObject({ log: ['quick:first', 'quick:second', 'quick:third'] });

    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'slow', { input: { label: 'long', delay_ms: 30_000 }, streamMode: ['custom'] });
    for await (const part of client.runs.joinStream(thread.thread_id, run.run_id)) if (part.event === 'custom') break;
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe('running');
    await client.runs.cancel(thread.thread_id, run.run_id, true);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe('interrupted');
  });

  it('answers another organization’s key as if the deployment did not exist', async () => {
    const response = await fetch(`${deploymentUrl}/assistants/search`, {
      method: 'POST',
      headers: { 'x-api-key': stranger.adminKey, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(404);
    expect(await response.text()).toBe('Deployment not found');
  });

  it('never loaded the graph module in the api process', () => {
    expect(api.output()).not.toContain('graph module was loaded');
    expect(runtime.output()).toContain('running at');
  });
});
