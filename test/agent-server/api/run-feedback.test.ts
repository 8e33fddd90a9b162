// A run created with feedback_keys ends its stream with a `feedback` event: one presigned feedback url
// per key, for the run's trace (its root run has the run's id), as the hosted agent server sends it.
// Each url takes feedback without a key, which the workspace then reads through the langsmith SDK.
// Three agent servers: a local deployment (its host's platform stores its traces and makes the urls),
// one tracing as a deployed revision does (the platform's ingest API and POST /feedback/tokens, with
// its deployment's trace key), and `serve` (whose port answers the urls it gives).
import { Client } from '@langchain/langgraph-sdk';
import { Client as LangSmith } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { registerLocalDeployment } from '../../../src/platform/services/deployments/local-deployments.js';
import { createDeploymentTraceKey } from '../../../src/platform/services/tenancy/api-keys.service.js';
import { runLocalDeployment } from '../../../src/start.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { atDeployed, fixtureConfig, removeDir, startServe } from '../../support/serve.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let dir: string;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  dir = fixtureConfig().dir;
}, 120_000);
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await platform?.stop();
  removeDir(dir);
});

/** A local deployment's agent server at the platform's /deployments/<id>; `traced`: as a deployed revision traces. */
async function deployment(traced: 'by-host' | 'through-ingest-api') {
  const { configPath } = fixtureConfig();
  const { deploymentId } = await registerLocalDeployment(platform.system, { deploymentId: newId(), configPath, workspaceId: tenant.workspace.id });
  let deps = platform.deps;
  if (traced === 'through-ingest-api') {
    const traceKey = await createDeploymentTraceKey(platform.deps, deploymentId);
    deps = { ...deps, config: { ...deps.config, deploymentTraces: { url: platform.url, apiKey: traceKey.key, project: traceKey.project } } };
  }
  const running = await runLocalDeployment(deps, deploymentId);
  stops.push(running.stop);
  return new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, apiKey: tenant.adminKey, callerOptions: { maxRetries: 0 } });
}

const langsmith = () => new LangSmith({ apiUrl: platform.url, apiKey: tenant.adminKey, callerOptions: { maxRetries: 0 } });

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** Waits until the run's trace is stored (the agent server sends it just after the run). */
async function traceStored(runId: string) {
  const client = langsmith();
  for (let attempt = 0; attempt < 100; attempt++) {
    const runs = await collect(client.listRuns({ id: [runId] }));
    if (runs.length) return runs[0]!;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`run ${runId} was not traced`);
}

async function streamWithFeedback(client: Client) {
  const thread = await client.threads.create();
  let runId: string | undefined;
  const parts = await collect(
    client.runs.stream(thread.thread_id, 'agent', {
      input: { messages: [{ role: 'user', content: 'weather?' }] },
      streamMode: 'values',
      feedbackKeys: ['thumbs', 'correctness'],
      onRunCreated: (run) => {
        runId = run.run_id;
      },
    }),
  );
  return { parts, runId: runId! };
}

describe('feedback_keys on agent server runs', () => {
  for (const traced of ['by-host', 'through-ingest-api'] as const) {
    it(`ends the stream with feedback urls that record feedback on the run's trace (traced ${traced})`, async () => {
      const client = await deployment(traced);
      const { parts, runId } = await streamWithFeedback(client);
      const last = parts[parts.length - 1]!;
      expect(last.event).toBe('feedback');
      const urls = last.data as Record<string, string>;
      expect(Object.keys(urls).sort()).toEqual(['correctness', 'thumbs']);
      for (const url of Object.values(urls)) expect(url).toMatch(new RegExp(`^${platform.url}/feedback/tokens/[0-9a-f-]{36}$`));
      expect(parts.filter((part) => part.event === 'feedback')).toHaveLength(1);

      const root = await traceStored(runId);
      expect(root.trace_id).toBe(runId);
      expect((await fetch(`${urls.thumbs}?score=1&comment=great`)).status).toBe(200);
      expect((await fetch(urls.correctness!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ score: 0.5 }) })).status).toBe(200);

      const feedback = await collect(langsmith().listFeedback({ runIds: [runId] }));
      expect(feedback.map((f) => [f.key, f.score, f.comment ?? null]).sort()).toEqual([['correctness', 0.5, null], ['thumbs', 1, 'great']]);
      expect(((await langsmith().readRun(runId)).feedback_stats as Record<string, { n: number }>).thumbs!.n).toBe(1);
    });
  }

  it.skipIf(atDeployed)('gives urls of serve’s own port at serve, which answers them', async () => {
    const server = await startServe({ env: { AGENT_SERVER_TRACING: 'true', AGENT_SERVER_TRACE_WORKSPACE_ID: tenant.workspace.id } });
    stops.push(async () => {
      await server.stop();
      removeDir(server.dir);
    });
    const { parts, runId } = await streamWithFeedback(server.client);
    const urls = parts[parts.length - 1]!.data as Record<string, string>;
    expect(urls.thumbs).toMatch(new RegExp(`^${server.url}/feedback/tokens/[0-9a-f-]{36}$`));
    await traceStored(runId);
    expect((await fetch(`${urls.thumbs}?score=0&value=bad`)).status).toBe(200);
    const feedback = await collect(langsmith().listFeedback({ runIds: [runId] }));
    expect(feedback.map((f) => [f.key, f.score, f.value])).toEqual([['thumbs', 0, 'bad']]);
  });

  it('lets a deployment’s trace key make tokens that take feedback only on its own project’s runs, and read no feedback', async () => {
    const { configPath } = fixtureConfig();
    const { deploymentId } = await registerLocalDeployment(platform.system, { deploymentId: newId(), configPath, workspaceId: tenant.workspace.id });
    const traceKey = await createDeploymentTraceKey(platform.deps, deploymentId);
    const elsewhere = newId();
    const post = await fetch(`${platform.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tenant.adminKey },
      body: JSON.stringify({ id: elsewhere, name: 'not-its-own', run_type: 'chain', inputs: {}, start_time: new Date().toISOString(), session_name: 'someone-else' }),
    });
    expect(post.status).toBe(202);
    await traceStored(elsewhere);
    const asTraceKey = new LangSmith({ apiUrl: platform.url, apiKey: traceKey.key, callerOptions: { maxRetries: 0 } });
    const token = await asTraceKey.createPresignedFeedbackToken(elsewhere, 'thumbs');
    expect((await fetch(`${token.url}?score=1`)).status).toBe(404);
    await expect(asTraceKey.readFeedback(newId())).rejects.toThrow(/40[13]/);
    await expect(collect(asTraceKey.listFeedback({ runIds: [elsewhere] }))).rejects.toThrow(/40[13]/);
  });

  it('sends no feedback event without feedback_keys, and refuses bad ones', async () => {
    const client = await deployment('by-host');
    const thread = await client.threads.create();
    const parts = await collect(client.runs.stream(thread.thread_id, 'agent', { input: { messages: [] }, streamMode: 'values' }));
    expect(parts.some((part) => part.event === 'feedback')).toBe(false);
    await expect(collect(client.runs.stream(thread.thread_id, 'agent', { input: { messages: [] }, feedbackKeys: [''] }))).rejects.toThrow(/422/);
  });
});
