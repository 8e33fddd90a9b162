// The official langsmith SDK, configured only with an endpoint and an API key, traces into the platform
// and reads its runs back: traceable nesting, RunTree, gzip multipart, the JSON batch fallback, and
// both the root and /api/v1 endpoints.
import { randomUUID } from 'node:crypto';
import { Client, RunTree } from 'langsmith';
import { traceable } from 'langsmith/traceable';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
});
afterAll(() => platform?.stop());

type Seen = { method: string; path: string; encoding: string | null };

/** A client that also records what it sent (the requests still go to the real server). */
function sdkClient(apiUrl: string, options: { failMultipart?: boolean } = {}) {
  const seen: Seen[] = [];
  const client = new Client({
    apiUrl,
    apiKey: tenant.adminKey,
    fetchImplementation: (async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = new URL(String(input));
      const headers = new Headers(init?.headers);
      seen.push({ method: init?.method ?? 'GET', path: url.pathname, encoding: headers.get('content-encoding') });
      // An older server without the multipart endpoint: the SDK falls back to POST /runs/batch.
      if (options.failMultipart && url.pathname.endsWith('/runs/multipart')) return new Response('Not Found', { status: 404 });
      return fetch(input, init);
    }) as typeof fetch,
  });
  return { client, seen };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** A traced pipeline: a chain calling a retriever and an LLM that reports token usage. */
function pipeline(client: Client, projectName: string) {
  const config = { client, project_name: projectName, tracingEnabled: true };
  const retrieve = traceable(async (query: string) => [`doc about ${query}`], { ...config, name: 'retrieve', run_type: 'retriever' });
  const llm = traceable(
    async (prompt: string) => {
      await new Promise((resolve) => setImmediate(resolve));
      return { content: `answer to ${prompt}`, usage_metadata: { input_tokens: 12, output_tokens: 30, total_tokens: 42 } };
    },
    { ...config, name: 'fake-llm', run_type: 'llm', metadata: { ls_model_name: 'fake-1' } },
  );
  return traceable(
    async (question: string) => {
      const docs = await retrieve(question);
      const answer = await llm(`${docs.join(' ')} ${question}`);
      return { answer: answer.content };
    },
    { ...config, name: 'qa-pipeline', run_type: 'chain', tags: ['sdk-test'], metadata: { user: 'alice' } },
  );
}

async function checkTree(client: Client, projectName: string) {
  const runs = await collect(client.listRuns({ projectName }));
  expect(runs).toHaveLength(3);
  const root = runs.find((run) => run.name === 'qa-pipeline')!;
  const retriever = runs.find((run) => run.name === 'retrieve')!;
  const llm = runs.find((run) => run.name === 'fake-llm')!;
  expect(root.parent_run_id ?? null).toBeNull();
  expect(retriever.parent_run_id).toBe(root.id);
  expect(llm.parent_run_id).toBe(root.id);
  for (const run of runs) {
    expect(run.trace_id).toBe(root.id);
    expect(run.status).toBe('success');
    expect(run.dotted_order?.startsWith(root.dotted_order!)).toBe(true);
    expect(new Date(run.end_time!).getTime()).toBeGreaterThanOrEqual(new Date(run.start_time as string).getTime());
  }
  expect(root.outputs).toEqual({ answer: expect.stringContaining('answer to doc about') });
  expect(root.tags).toContain('sdk-test');
  expect(root.extra?.metadata?.user).toBe('alice');
  expect(llm).toMatchObject({ prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 });

  // The filter language through the SDK: only the LLM run, and only roots with the user's metadata.
  const llmRuns = await collect(client.listRuns({ projectName, filter: 'and(eq(run_type, "llm"), gte(total_tokens, 40))' }));
  expect(llmRuns.map((run) => run.id)).toEqual([llm.id]);
  const alice = await collect(client.listRuns({ projectName, isRoot: true, filter: 'and(eq(metadata_key, "user"), eq(metadata_value, "alice"))' }));
  expect(alice.map((run) => run.id)).toEqual([root.id]);

  // readRun with children rebuilds the tree from the runs query.
  const tree = await client.readRun(root.id, { loadChildRuns: true });
  expect(tree.child_runs?.map((child) => child.name).sort()).toEqual(['fake-llm', 'retrieve']);
  return { root, llm };
}

describe('langsmith SDK against the platform', () => {
  it('traces nested traceable functions through compressed multipart and lists them with a filter', async () => {
    const { client, seen } = sdkClient(platform.url);
    const projectName = `sdk-${randomUUID().slice(0, 8)}`;
    await pipeline(client, projectName)('what is tracing?');
    await client.awaitPendingTraceBatches();

    expect(seen[0]).toMatchObject({ method: 'GET', path: '/info' });
    const multipart = seen.filter((request) => request.path === '/runs/multipart');
    expect(multipart.length).toBeGreaterThan(0);
    // The SDK compresses with zstd where Node's zlib has it (Node ≥ 22.15), with gzip elsewhere.
    expect(multipart.every((request) => request.encoding === 'gzip' || request.encoding === 'zstd')).toBe(true);
    await checkTree(client, projectName);

    // The project was created from the runs' session_name, in the key's default workspace.
    const project = await client.readProject({ projectName });
    expect(project.tenant_id).toBe(tenant.workspace.id);
  });

  it('posts and patches a RunTree, under /api/v1 as well', async () => {
    const { client, seen } = sdkClient(`${platform.url}/api/v1`);
    const projectName = `runtree-${randomUUID().slice(0, 8)}`;
    const root = new RunTree({ name: 'agent', run_type: 'chain', inputs: { task: 'plan' }, client, project_name: projectName, tracingEnabled: true });
    await root.postRun();
    const tool = root.createChild({ name: 'search-tool', run_type: 'tool', inputs: { q: 'x' } });
    await tool.postRun();
    await tool.end({ result: 'found' });
    await tool.patchRun();
    await root.end({ done: true });
    await root.patchRun();
    await client.awaitPendingTraceBatches();
    expect(seen.some((request) => request.path === '/api/v1/runs/multipart')).toBe(true);

    const runs = await collect(client.listRuns({ projectName }));
    expect(runs.map((run) => run.name).sort()).toEqual(['agent', 'search-tool']);
    const stored = runs.find((run) => run.name === 'search-tool')!;
    expect(stored).toMatchObject({ parent_run_id: root.id, trace_id: root.id, outputs: { result: 'found' }, status: 'success' });
    expect(runs.find((run) => run.name === 'agent')!.outputs).toEqual({ done: true });
  });

  it('falls back to POST /runs/batch when the multipart endpoint is missing', async () => {
    // Run compression would send gzip multipart from a buffer that is dropped on 404; the SDK's
    // documented fallback is for its uncompressed path.
    process.env.LANGSMITH_DISABLE_RUN_COMPRESSION = 'true';
    let sdk: ReturnType<typeof sdkClient>;
    try {
      sdk = sdkClient(platform.url, { failMultipart: true });
    } finally {
      delete process.env.LANGSMITH_DISABLE_RUN_COMPRESSION;
    }
    const projectName = `batch-${randomUUID().slice(0, 8)}`;
    await pipeline(sdk.client, projectName)('fallback?');
    await sdk.client.awaitPendingTraceBatches();
    expect(sdk.seen.some((request) => request.path === '/runs/batch')).toBe(true);
    await checkTree(sdk.client, projectName);
  });

  it('pages listRuns with cursors', async () => {
    const { client } = sdkClient(platform.url);
    const projectName = `paging-${randomUUID().slice(0, 8)}`;
    const step = traceable(async (i: number) => i * 2, { client, project_name: projectName, tracingEnabled: true, name: 'step', run_type: 'tool' });
    for (let i = 0; i < 7; i++) await step(i);
    await client.awaitPendingTraceBatches();
    const project = await client.readProject({ projectName });
    // Small pages through the raw endpoint show the cursor; the SDK follows it to the end.
    const response = await fetch(`${platform.url}/runs/query`, {
      method: 'POST',
      headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json' },
      body: JSON.stringify({ session: [project.id], limit: 3 }),
    });
    const page = await response.json();
    expect(page.runs).toHaveLength(3);
    expect(page.cursors.next).toEqual(expect.any(String));
    const all = await collect(client.listRuns({ projectId: project.id }));
    expect(all).toHaveLength(7);
    expect(new Set(all.map((run) => run.id)).size).toBe(7);
    const limited = await collect(client.listRuns({ projectId: project.id, limit: 5 }));
    expect(limited).toHaveLength(5);
  });
});
