// The langsmith SDK's v2 runs API (client.runs.query, retrieve and getURL, which replace the deprecated
// listRuns, readRun and getRunUrl) against the platform: traces with children ingested by the SDK and
// read back a small page at a time through the cursor, with filters, is_root, selects and time
// windows; one run by id within its project; a run's console url; another workspace's key sees
// nothing; bad input is a 4xx.
import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { traceable } from 'langsmith/traceable';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let client: Client;
let projectId: string;

const sdk = (apiKey: string, apiUrl = platform.url) => new Client({ apiUrl, apiKey });

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** Three answered questions and one whose LLM call fails: four traces of a chain, a retriever and an LLM. */
async function traceQuestions(projectName: string) {
  const config = { client, project_name: projectName, tracingEnabled: true };
  const retrieve = traceable(async (query: string) => [`doc about ${query}`], { ...config, name: 'retrieve', run_type: 'retriever' });
  const llm = traceable(
    async (prompt: string) => {
      if (prompt.includes('fail')) throw new Error('the model refused');
      return { content: `answer to ${prompt}`, usage_metadata: { input_tokens: 12, output_tokens: 30, total_tokens: 42 } };
    },
    { ...config, name: 'fake-llm', run_type: 'llm', metadata: { ls_model_name: 'fake-1' } },
  );
  const pipeline = traceable(
    async (question: string) => {
      const docs = await retrieve(question);
      return { answer: (await llm(`${docs.join(' ')} ${question}`)).content };
    },
    { ...config, name: 'qa-pipeline', run_type: 'chain', tags: ['v2-test'], metadata: { user: 'alice' } },
  );
  for (const question of ['one', 'two', 'three']) await pipeline(question);
  await expect(pipeline('fail')).rejects.toThrow('refused');
  await client.awaitPendingTraceBatches();
}

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  client = sdk(tenant.adminKey);
  const projectName = `runs-v2-${randomUUID().slice(0, 8)}`;
  await traceQuestions(projectName);
  projectId = (await client.readProject({ projectName })).id;
});
afterAll(() => platform?.stop());

/** The ids of every run a query returns, through every page. */
const ids = async (params: Parameters<Client['runs']['query']>[0]) => (await collect(client.runs.query({ project_ids: [projectId], ...params }))).map((run) => run.id!);

describe('v2 runs API through the langsmith SDK', () => {
  it('pages through a project newest first with the cursor, returning only id unless fields are selected', async () => {
    let page = await client.runs.query({ project_ids: [projectId], page_size: 5 });
    const sizes = [page.items.length];
    const seen = [...page.items];
    while (page.hasNextPage()) {
      page = await page.getNextPage();
      sizes.push(page.items.length);
      seen.push(...page.items);
    }
    expect(sizes).toEqual([5, 5, 2]);
    expect(new Set(seen.map((run) => run.id)).size).toBe(12);
    expect(seen.every((run) => Object.keys(run).join() === 'id')).toBe(true);

    // The SDK's iterator follows next_cursor itself; start_time then id, descending.
    const runs = await collect(client.runs.query({ project_ids: [projectId], page_size: 4, selects: ['START_TIME', 'NAME'] }));
    expect(runs.map((run) => run.id)).toEqual(seen.map((run) => run.id));
    const keys = runs.map((run) => `${run.start_time}|${run.id}`);
    expect(keys).toEqual([...keys].sort().reverse());
  });

  it('narrows by is_root, run_type, has_error, trace, ids and the filter language', async () => {
    const roots = await collect(client.runs.query({ project_ids: [projectId], is_root: true, page_size: 3, selects: ['NAME', 'IS_ROOT', 'TRACE_ID', 'STATUS', 'TAGS'] }));
    expect(roots).toHaveLength(4);
    for (const root of roots) expect(root).toMatchObject({ name: 'qa-pipeline', is_root: true, trace_id: root.id, tags: ['v2-test'] });
    expect(roots.map((root) => root.status).sort()).toEqual(['ERROR', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
    expect(await ids({ is_root: false })).toHaveLength(8);

    const llms = await ids({ run_type: 'LLM' });
    expect(llms).toHaveLength(4);
    expect(await ids({ filter: 'eq(run_type, "llm")', page_size: 2 })).toEqual(llms);
    // The SDK hands a run's metadata on to its children: 12 runs, 4 of them roots.
    expect(await ids({ filter: 'and(eq(metadata_key, "user"), eq(metadata_value, "alice"))' })).toHaveLength(12);
    expect(await ids({ is_root: true, filter: 'and(eq(metadata_key, "user"), eq(metadata_value, "alice"))' })).toEqual(roots.map((root) => root.id));

    const failed = await collect(client.runs.query({ project_ids: [projectId], has_error: true, selects: ['NAME', 'ERROR', 'ERROR_PREVIEW'] }));
    expect(failed.map((run) => run.name).sort()).toEqual(['fake-llm', 'qa-pipeline']);
    for (const run of failed) expect(run.error_preview).toBe(run.error?.slice(0, 500));
    expect(failed.find((run) => run.name === 'fake-llm')?.error).toContain('the model refused');
    expect(await ids({ has_error: false })).toHaveLength(10);

    const failedTrace = roots.find((root) => root.status === 'ERROR')!.id!;
    // trace_filter reads each run's root; tree_filter any run of its trace.
    expect((await ids({ trace_filter: 'eq(status, "error")' })).sort()).toEqual((await ids({ trace_id: failedTrace })).sort());
    expect(await ids({ trace_id: failedTrace })).toHaveLength(3);
    expect(await ids({ tree_filter: 'eq(name, "retrieve")' })).toHaveLength(12);
    expect(await ids({ ids: [failedTrace, llms[0]!] })).toEqual(expect.arrayContaining([failedTrace, llms[0]]));
  });

  it('reads only within [min_start_time, max_start_time], the last day by default', async () => {
    const [oldest] = await collect(client.runs.query({ project_ids: [projectId], is_root: true, selects: ['START_TIME'] })).then((runs) => runs.slice(-1));
    const start = oldest!.start_time!;
    // Both bounds are inclusive.
    expect(await ids({ max_start_time: start })).toContain(oldest!.id);
    expect(await ids({ max_start_time: new Date(Date.parse(start) - 1000).toISOString() })).toEqual([]);
    expect(await ids({ min_start_time: new Date(Date.now() + 60_000).toISOString() })).toEqual([]);
    expect(await ids({ min_start_time: new Date(Date.now() - 3600_000).toISOString(), max_start_time: new Date(Date.now() + 60_000).toISOString() })).toHaveLength(12);
    expect(await ids({ min_start_time: '2020-01-01T00:00:00Z', max_start_time: '2020-01-02T00:00:00Z' })).toEqual([]);
  });

  it('selects the stored fields by their v2 names and omits the rest', async () => {
    const [llm] = await collect(
      client.runs.query({
        project_ids: [projectId],
        filter: 'eq(run_type, "llm")',
        has_error: false,
        page_size: 1,
        selects: ['ID', 'NAME', 'RUN_TYPE', 'INPUTS', 'OUTPUTS', 'METADATA', 'EXTRA', 'TOTAL_TOKENS', 'PROMPT_TOKENS', 'COMPLETION_TOKENS', 'LATENCY_SECONDS', 'END_TIME', 'START_TIME', 'PARENT_RUN_IDS', 'PROJECT_ID', 'DOTTED_ORDER', 'SHARE_URL', 'INPUTS_PREVIEW'],
      }),
    );
    expect(llm).toMatchObject({
      name: 'fake-llm',
      run_type: 'LLM',
      inputs: expect.any(Object),
      outputs: expect.objectContaining({ content: expect.stringContaining('answer to doc about') }),
      metadata: expect.objectContaining({ ls_model_name: 'fake-1' }),
      extra: expect.objectContaining({ metadata: expect.any(Object) }),
      total_tokens: 42,
      prompt_tokens: 12,
      completion_tokens: 30,
      project_id: projectId,
      parent_run_ids: [expect.any(String)],
      dotted_order: expect.stringContaining('.'),
    });
    expect(llm!.latency_seconds).toBeCloseTo((Date.parse(llm!.end_time!) - Date.parse(llm!.start_time!)) / 1000, 2);
    // Not stored here: left out rather than made up.
    expect(llm).not.toHaveProperty('share_url');
    expect(llm).not.toHaveProperty('inputs_preview');
  });

  it('retrieves one run of a project, id only unless fields are selected', async () => {
    const [root] = await collect(client.runs.query({ project_ids: [projectId], is_root: true, has_error: false, page_size: 1, selects: ['START_TIME'] }));
    expect(await client.runs.retrieve(root!.id!, { project_id: projectId })).toEqual({ id: root!.id });
    const full = await client.runs.retrieve(root!.id!, { project_id: projectId, start_time: root!.start_time, selects: ['NAME', 'INPUTS', 'OUTPUTS', 'TAGS', 'STATUS', 'IS_ROOT'] });
    expect(full).toEqual({
      id: root!.id,
      name: 'qa-pipeline',
      inputs: expect.any(Object),
      outputs: { answer: expect.stringContaining('answer to') },
      tags: ['v2-test'],
      status: 'SUCCESS',
      is_root: true,
    });
    // A single select is one query parameter, not a list.
    expect(await client.runs.retrieve(root!.id!, { project_id: projectId, selects: ['NAME'] })).toEqual({ id: root!.id, name: 'qa-pipeline' });
    // Not in that project: 404.
    await expect(client.runs.retrieve(root!.id!, { project_id: randomUUID() })).rejects.toMatchObject({ status: 404 });
    await expect(client.runs.retrieve(randomUUID(), { project_id: projectId })).rejects.toMatchObject({ status: 404 });
  });

  it("links a run to the console's page of its trace", async () => {
    const [run] = await collect(client.runs.query({ project_ids: [projectId], is_root: false, page_size: 1, selects: ['TRACE_ID', 'START_TIME'] }));
    const { url } = await client.runs.getURL(run!.id!, { project_id: projectId, trace_id: run!.trace_id!, start_time: run!.start_time });
    expect(url).toBe(`${platform.url}/#/traces/${run!.trace_id}?run=${run!.id}`);
    // Not that project's or that trace's run, or another workspace's: 404; bad ids: 422.
    await expect(client.runs.getURL(run!.id!, { project_id: randomUUID(), trace_id: run!.trace_id! })).rejects.toMatchObject({ status: 404 });
    await expect(client.runs.getURL(run!.id!, { project_id: projectId, trace_id: randomUUID() })).rejects.toMatchObject({ status: 404 });
    await expect(sdk(other.adminKey).runs.getURL(run!.id!, { project_id: projectId, trace_id: run!.trace_id! })).rejects.toMatchObject({ status: 404 });
    await expect(client.runs.getURL(run!.id!, { project_id: projectId } as never)).rejects.toMatchObject({ status: 422 });
    await expect(client.runs.getURL('nope', { project_id: projectId, trace_id: run!.trace_id! })).rejects.toMatchObject({ status: 422 });
  });

  it("reads a dataset's experiments by reference_dataset_id, and names the dataset when selected", async () => {
    const suffix = randomUUID().slice(0, 8);
    const dataset = await client.createDataset(`runs-v2-dataset-${suffix}`);
    const experiment = await client.createProject({ projectName: `runs-v2-experiment-${suffix}`, referenceDatasetId: dataset.id });
    const target = traceable(async (text: string) => text.toUpperCase(), { client, project_name: experiment.name, tracingEnabled: true, name: 'target' });
    await target('a');
    await target('b');
    await client.awaitPendingTraceBatches();

    const runs = await collect(client.runs.query({ reference_dataset_id: dataset.id, page_size: 1, selects: ['NAME', 'PROJECT_ID', 'REFERENCE_DATASET_ID'] }));
    expect(runs).toHaveLength(2);
    for (const run of runs) expect(run).toEqual({ id: expect.any(String), name: 'target', project_id: experiment.id, reference_dataset_id: dataset.id });
    expect(await client.runs.retrieve(runs[0]!.id!, { project_id: experiment.id, selects: ['REFERENCE_DATASET_ID'] })).toEqual({ id: runs[0]!.id, reference_dataset_id: dataset.id });
    // A project of no dataset has none.
    const [plain] = await collect(client.runs.query({ project_ids: [projectId], page_size: 1, selects: ['REFERENCE_DATASET_ID'] }));
    expect(plain!.reference_dataset_id).toBeNull();
    // A dataset of another workspace (or none) has no experiments here.
    expect(await collect(sdk(other.adminKey).runs.query({ reference_dataset_id: dataset.id }))).toEqual([]);
    expect(await collect(client.runs.query({ reference_dataset_id: randomUUID() }))).toEqual([]);
  });

  it("another workspace's key sees none of the runs", async () => {
    const stranger = sdk(other.adminKey);
    expect(await collect(stranger.runs.query({ project_ids: [projectId], selects: ['NAME'] }))).toEqual([]);
    const [run] = await collect(client.runs.query({ project_ids: [projectId], page_size: 1 }));
    await expect(stranger.runs.retrieve(run!.id!, { project_id: projectId })).rejects.toMatchObject({ status: 404 });
    // Without a key: 401.
    const anonymous = await fetch(`${platform.url}/api/v2/runs/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project_ids: [projectId] }) });
    expect(anonymous.status).toBe(401);
  });

  it('answers bad input with a 4xx in the traces dialect', async () => {
    const post = async (body: unknown) => {
      const response = await fetch(`${platform.url}/api/v2/runs/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': tenant.adminKey },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as { error: string; details?: unknown } };
    };
    const invalid = [
      {},
      { project_ids: [] },
      { project_ids: ['not-a-uuid'] },
      { project_ids: [projectId], reference_dataset_id: randomUUID() },
      { project_ids: [projectId], selects: ['NOPE'] },
      { project_ids: [projectId], page_size: 0 },
      { project_ids: [projectId], page_size: 5000 },
      { project_ids: [projectId], run_type: 'llm' },
      { project_ids: [projectId], min_start_time: 'yesterday' },
      { project_ids: [projectId], min_start_time: '2026-02-01T00:00:00Z', max_start_time: '2026-01-01T00:00:00Z' },
      { project_ids: [projectId], ai_search: 'runs that went wrong' },
      { project_ids: [projectId], include_subtree_usage: true },
    ];
    for (const body of invalid) {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.error, JSON.stringify(body)).toEqual(expect.any(String));
    }
    expect((await post({ project_ids: [projectId], filter: 'eq(name' })).status).toBe(400);
    expect((await post({ project_ids: [projectId], cursor: 'garbage' })).status).toBe(400);
    expect((await post('{not json')).status).toBeGreaterThanOrEqual(400);
    expect((await post('[1, 2]')).status).toBeGreaterThanOrEqual(400);
    expect((await post({ project_ids: [projectId], include_subtree_usage: false })).status).toBe(200);

    // Through the SDK: its errors carry the status.
    await expect(collect(client.runs.query({ project_ids: [projectId], filter: 'nope(' }))).rejects.toMatchObject({ status: 400 });
    await expect(client.runs.retrieve('not-a-uuid', { project_id: projectId })).rejects.toMatchObject({ status: 422 });
    await expect(client.runs.retrieve(randomUUID(), { project_id: 'nope' } as never)).rejects.toMatchObject({ status: 422 });
    await expect(client.runs.retrieve(randomUUID(), {} as never)).rejects.toMatchObject({ status: 422 });
    await expect(client.runs.retrieve(randomUUID(), { project_id: projectId, selects: ['NOPE'] } as never)).rejects.toMatchObject({ status: 422 });
  });
});
