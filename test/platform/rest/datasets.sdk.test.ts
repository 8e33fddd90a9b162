// Datasets and examples through the official langsmith SDK: a dataset of 50 examples round trip
// (create, read by id and name, list with the SDK's filters, update, delete); examples created alone
// and in bulk, with metadata and splits, listed by dataset, ids, splits, metadata and pages, read,
// updated, deleted; versions (as_of reads, tags, diffs); examples made from runs; a CSV upload;
// another workspace's key finds nothing; roles; bad input.
import { randomUUID } from 'node:crypto';
import { Client, RunTree } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let client: Client;

const sdk = (apiKey: string, apiUrl = platform.url) => new Client({ apiUrl, apiKey, callerOptions: { maxRetries: 0 } });
const unique = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** A status and JSON body from the platform. */
async function call(path: string, init: { method?: string; key?: string; body?: unknown; raw?: BodyInit; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${platform.url}${path}`, {
    method: init.method ?? (init.body === undefined && init.raw === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...(init.key ? { 'x-api-key': init.key } : {}), ...init.headers },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  return { status: response.status, body: (await response.json()) as any };
}

beforeAll(async () => {
  // A small body limit, so the test of a body past it sends little.
  platform = await startTestPlatform({ config: { AGENT_PLATFORM_INGEST_BODY_LIMIT: '2mb' } });
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  client = sdk(tenant.adminKey);
});
afterAll(() => platform?.stop());

describe('datasets and examples through the langsmith SDK', () => {
  it('round-trips a dataset of 50 examples: create, read, list, update and delete', async () => {
    const name = unique('qa');
    const dataset = await client.createDataset(name, { description: 'questions', metadata: { team: 'evals' } });
    expect(dataset).toMatchObject({ name, description: 'questions', data_type: 'kv', example_count: 0 });
    expect(await client.hasDataset({ datasetName: name })).toBe(true);
    expect(await client.hasDataset({ datasetName: unique('nope') })).toBe(false);
    await expect(client.createDataset(name)).rejects.toThrow(/409/);

    const inputs = Array.from({ length: 50 }, (_, i) => ({ question: `What is ${i} + ${i}?` }));
    const outputs = inputs.map((_, i) => ({ answer: String(i + i) }));
    const created = await client.createExamples({
      datasetId: dataset.id,
      inputs,
      outputs,
      metadata: inputs.map((_, i) => ({ index: i, parity: i % 2 ? 'odd' : 'even' })),
      splits: inputs.map((_, i) => (i < 40 ? 'train' : 'test')),
    });
    expect(created).toHaveLength(50);
    expect(created[7]).toMatchObject({ dataset_id: dataset.id, inputs: { question: 'What is 7 + 7?' }, outputs: { answer: '14' } });
    expect(created[7]!.metadata).toMatchObject({ index: 7, parity: 'odd', dataset_split: ['train'] });

    const read = await client.readDataset({ datasetId: dataset.id });
    expect(read).toMatchObject({ id: dataset.id, name, example_count: 50, metadata: { team: 'evals' } });
    expect((await client.readDataset({ datasetName: name })).id).toBe(dataset.id);
    expect((await client.readExample(created[3]!.id)).inputs).toEqual({ question: 'What is 3 + 3?' });

    // Every example, in the order made, through the SDK's pages; by name too.
    const all = await collect(client.listExamples({ datasetId: dataset.id }));
    expect(all.map((e) => e.id)).toEqual(created.map((e) => e.id));
    expect((await collect(client.listExamples({ datasetName: name }))).length).toBe(50);
    expect((await collect(client.listExamples({ datasetId: dataset.id, splits: ['test'] }))).map((e) => e.id)).toEqual(created.slice(40).map((e) => e.id));
    expect((await collect(client.listExamples({ datasetId: dataset.id, metadata: { parity: 'odd' } }))).length).toBe(25);
    const ids = [created[1]!.id, created[2]!.id];
    expect((await collect(client.listExamples({ datasetId: dataset.id, exampleIds: ids }))).map((e) => e.id).sort()).toEqual([...ids].sort());
    const page = await collect(client.listExamples({ datasetId: dataset.id, limit: 10, offset: 5 }));
    expect(page.map((e) => e.id)).toEqual(created.slice(5, 15).map((e) => e.id));
    expect(await client.listDatasetSplits({ datasetId: dataset.id })).toEqual(['test', 'train']);

    // listDatasets' filters.
    const second = await client.createDataset(unique('qa-other'), { metadata: { team: 'other' } });
    const listed = async (options: Parameters<Client['listDatasets']>[0]) => (await collect(client.listDatasets(options))).map((d) => d.id);
    expect(await listed({ datasetName: name })).toEqual([dataset.id]);
    expect(await listed({ datasetNameContains: name.slice(3) })).toEqual([dataset.id]);
    expect((await listed({ datasetIds: [dataset.id, second.id] })).sort()).toEqual([dataset.id, second.id].sort());
    expect(await listed({ metadata: { team: 'evals' } })).toEqual([dataset.id]);
    // The SDK's limit is its page size: it reads every page.
    expect((await listed({ limit: 1 })).sort()).toEqual([dataset.id, second.id].sort());
    expect((await call('/datasets?limit=1&offset=1', { key: tenant.adminKey })).body.map((d: any) => d.id)).toEqual([dataset.id]);

    const renamed = await client.updateDataset({ datasetId: dataset.id, name: `${name}-v2`, description: 'renamed' });
    expect(renamed).toMatchObject({ id: dataset.id, name: `${name}-v2`, description: 'renamed' });
    await expect(client.updateDataset({ datasetId: dataset.id, name: second.name })).rejects.toThrow(/409/);

    // Under /api/v1 too (the SDK then calls /api/v1/platform/… for examples).
    const v1 = sdk(tenant.adminKey, `${platform.url}/api/v1`);
    expect((await v1.readDataset({ datasetId: dataset.id })).example_count).toBe(50);
    const [viaV1] = await v1.createExamples([{ dataset_id: dataset.id, inputs: { question: 'v1?' }, outputs: { answer: 'yes' } }]);
    expect((await client.readExample(viaV1!.id)).outputs).toEqual({ answer: 'yes' });

    await client.deleteDataset({ datasetId: dataset.id });
    expect(await client.hasDataset({ datasetId: dataset.id })).toBe(false);
    await expect(client.readExample(created[0]!.id)).rejects.toThrow(/404/);
  });

  it('updates and deletes examples, keeps each version for as_of reads, tags and diffs versions', async () => {
    const dataset = await client.createDataset(unique('versions'));
    const one = await client.createExample({ q: 'one' }, { a: '1' }, { datasetId: dataset.id, metadata: { kind: 'x' }, split: 'base' });
    const two = await client.createExample({ q: 'two' }, { a: '2' }, { datasetId: dataset.id });
    const v1 = (await client.readDataset({ datasetId: dataset.id })).modified_at;
    await client.updateDatasetTag({ datasetId: dataset.id, asOf: v1, tag: 'v1' });

    await client.updateExample(one.id, { inputs: { q: 'one, again' }, outputs: { a: 'one' }, metadata: { kind: 'y' } });
    expect(await client.readExample(one.id)).toMatchObject({ inputs: { q: 'one, again' }, outputs: { a: 'one' }, metadata: { kind: 'y' } });
    await client.updateExamples([{ id: two.id, inputs: { q: 'two, again' }, split: ['base', 'extra'] }]);
    expect((await client.readExample(two.id)).metadata).toMatchObject({ dataset_split: ['base', 'extra'] });
    const three = await client.createExample({ q: 'three' }, { a: '3' }, { datasetId: dataset.id });
    await client.deleteExample(two.id);
    await expect(client.readExample(two.id)).rejects.toThrow(/404/);

    // As of the tag (or its time): the examples as they were then.
    for (const asOf of ['v1', v1]) {
      const then = await collect(client.listExamples({ datasetId: dataset.id, asOf }));
      expect(then.map((e) => e.inputs)).toEqual([{ q: 'one' }, { q: 'two' }]);
    }
    const now = await collect(client.listExamples({ datasetId: dataset.id }));
    expect(now.map((e) => e.id)).toEqual([one.id, three.id]);
    expect(await client.readDatasetVersion({ datasetId: dataset.id, tag: 'v1' })).toEqual({ as_of: v1, tags: ['v1'] });
    expect((await client.readDatasetVersion({ datasetId: dataset.id, asOf: new Date() })).tags).toEqual([]);
    const diff = await client.diffDatasetVersions({ datasetId: dataset.id, fromVersion: 'v1', toVersion: 'latest' });
    expect(diff).toEqual({ examples_added: [three.id], examples_modified: [one.id], examples_removed: [two.id] });
    expect(await client.listDatasetSplits({ datasetId: dataset.id, asOf: 'v1' })).toEqual(['base']);

    // Splits through the SDK's bulk metadata path.
    await client.updateDatasetSplits({ datasetId: dataset.id, splitName: 'gold', exampleIds: [one.id, three.id] });
    expect((await collect(client.listExamples({ datasetId: dataset.id, splits: ['gold'] }))).map((e) => e.id)).toEqual([one.id, three.id]);
    await client.updateDatasetSplits({ datasetId: dataset.id, splitName: 'gold', exampleIds: [three.id], remove: true });
    expect((await collect(client.listExamples({ datasetId: dataset.id, splits: ['gold'] }))).map((e) => e.id)).toEqual([one.id]);

    await client.deleteExamples([one.id, three.id]);
    expect(await collect(client.listExamples({ datasetId: dataset.id }))).toEqual([]);
    expect((await collect(client.listExamples({ datasetId: dataset.id, asOf: 'v1' }))).length).toBe(2);
    const gone = await client.createExample({ q: 'gone' }, {}, { datasetId: dataset.id });
    await client.deleteExamples([gone.id], { hardDelete: true });
    expect((await collect(client.listExamples({ datasetId: dataset.id, asOf: new Date() }))).length).toBe(0);
  });

  it('keeps one current version and ordered versions when an example is changed by many writers at once', async () => {
    const dataset = await client.createDataset(unique('concurrent'));
    const example = await client.createExample({ n: -1 }, { a: 'x' }, { datasetId: dataset.id });
    await Promise.all(Array.from({ length: 12 }, (_, n) => client.updateExample(example.id, { dataset_id: dataset.id, inputs: { n } })));
    const { rows } = await platform.deps.db.pool.query<{ current: number; backwards: number; total: number }>(
      `SELECT count(*) FILTER (WHERE valid_to IS NULL)::int AS current, count(*) FILTER (WHERE valid_to < valid_from)::int AS backwards, count(*)::int AS total
         FROM examples WHERE id = $1`,
      [example.id],
    );
    expect(rows[0]).toEqual({ current: 1, backwards: 0, total: 13 });
    // Each version began where the one before it ended.
    const { rows: gaps } = await platform.deps.db.pool.query(
      `SELECT 1 FROM (SELECT valid_to, lead(valid_from) OVER (ORDER BY valid_from) AS next FROM examples WHERE id = $1) v
        WHERE v.next IS NOT NULL AND v.next <> v.valid_to`,
      [example.id],
    );
    expect(gaps).toEqual([]);
  });

  it('makes examples from runs (their ids recorded, their inputs and outputs taken when asked)', async () => {
    const run = new RunTree({ name: 'source', run_type: 'chain', inputs: { q: 'from a run' }, client, project_name: unique('sources'), tracingEnabled: true });
    await run.postRun();
    await run.end({ a: 'an answer' });
    await run.patchRun();
    await client.awaitPendingTraceBatches();
    const dataset = await client.createDataset(unique('from-runs'));

    const example = await client.createExample({ q: 'given' }, { a: 'given' }, { datasetId: dataset.id, sourceRunId: run.id });
    expect(example).toMatchObject({ source_run_id: run.id, inputs: { q: 'given' } });
    const [copied] = await client.createExamples({ datasetId: dataset.id, inputs: [{}], sourceRunIds: [run.id], useSourceRunIOs: [true] });
    expect(copied).toMatchObject({ source_run_id: run.id, inputs: { q: 'from a run' }, outputs: { a: 'an answer' } });
    // A run of another workspace is not found.
    const stranger = sdk(other.adminKey);
    const theirs = await stranger.createDataset(unique('theirs'));
    await expect(stranger.createExample({ q: 'x' }, { a: 'x' }, { datasetId: theirs.id, sourceRunId: run.id })).rejects.toThrow(/404/);
  });

  it('creates a dataset from an uploaded CSV file', async () => {
    const csv = 'question,answer,notes\n"What is 1+1?",2,easy\n"Say ""hi"", twice","hi, hi","a\nline break"\n';
    const dataset = await client.uploadCsv({ csvFile: new Blob([csv]), fileName: 'greetings.csv', inputKeys: ['question'], outputKeys: ['answer'], name: unique('csv'), description: 'from a file' });
    expect(dataset).toMatchObject({ description: 'from a file', example_count: 2 });
    const examples = await collect(client.listExamples({ datasetId: dataset.id }));
    expect(examples.map((e) => [e.inputs, e.outputs])).toEqual([
      [{ question: 'What is 1+1?' }, { answer: '2' }],
      [{ question: 'Say "hi", twice' }, { answer: 'hi, hi' }],
    ]);
    await expect(client.uploadCsv({ csvFile: new Blob([csv]), fileName: 'x.csv', inputKeys: ['nope'], outputKeys: [], name: unique('csv') })).rejects.toThrow(/422/);
  });

  it('takes examples on the older JSON paths (create one, create and change in bulk, change one)', async () => {
    const key = tenant.adminKey;
    const dataset = await client.createDataset(unique('json'));
    const one = await call('/api/v1/examples', { key, body: { dataset_id: dataset.id, inputs: { q: 'one' }, outputs: { a: '1' }, split: 'train' } });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ dataset_id: dataset.id, inputs: { q: 'one' }, outputs: { a: '1' }, metadata: { dataset_split: ['train'] } });
    const bulk = await call('/examples/bulk', { key, body: [{ dataset_id: dataset.id, inputs: { q: 'two' } }, { dataset_id: dataset.id, inputs: { q: 'three' } }] });
    expect(bulk.body.map((e: any) => e.inputs.q)).toEqual(['two', 'three']);
    expect((await call(`/examples/${one.body.id}`, { key, method: 'PATCH', body: { outputs: { a: 'uno' } } })).body.outputs).toEqual({ a: 'uno' });
    expect((await call('/examples/bulk', { key, method: 'PATCH', body: [{ id: bulk.body[0].id, inputs: { q: 'dos' } }] })).status).toBe(200);
    expect((await collect(client.listExamples({ datasetId: dataset.id }))).map((e) => e.inputs.q)).toEqual(['one', 'dos', 'three']);
    // One dataset a bulk request; an example of another workspace is not found.
    expect((await call('/examples/bulk', { key, body: [{ dataset_id: dataset.id, inputs: {} }, { dataset_id: randomUUID(), inputs: {} }] })).status).toBe(422);
    expect((await call(`/examples/${one.body.id}`, { key: other.adminKey, method: 'PATCH', body: { outputs: {} } })).status).toBe(404);
  });

  it('keeps datasets to their workspace (404 across tenants) and respects roles', async () => {
    const dataset = await client.createDataset(unique('private'));
    const example = await client.createExample({ q: 'mine' }, { a: 'mine' }, { datasetId: dataset.id });
    const stranger = sdk(other.adminKey);
    await expect(stranger.readDataset({ datasetId: dataset.id })).rejects.toThrow(/404/);
    expect(await stranger.hasDataset({ datasetName: dataset.name })).toBe(false);
    expect((await collect(stranger.listDatasets())).map((d) => d.id)).not.toContain(dataset.id);
    await expect(stranger.readExample(example.id)).rejects.toThrow(/404/);
    await expect(collect(stranger.listExamples({ datasetId: dataset.id }))).rejects.toThrow(/404/);
    await expect(stranger.createExamples([{ dataset_id: dataset.id, inputs: { q: 'theirs' } }])).rejects.toThrow(/404/);
    await expect(stranger.updateExample(example.id, { dataset_id: dataset.id, inputs: { q: 'theirs' } })).rejects.toThrow(/404/);
    await expect(stranger.updateDataset({ datasetId: dataset.id, name: 'taken' })).rejects.toThrow(/404/);
    await expect(stranger.deleteExample(example.id)).rejects.toThrow(/404/);
    await expect(stranger.deleteDataset({ datasetId: dataset.id })).rejects.toThrow(/404/);
    // The same name is free in another workspace.
    expect((await stranger.createDataset(dataset.name)).name).toBe(dataset.name);

    // A workspace viewer reads but writes nothing.
    const viewer = sdk(tenant.viewerKey);
    expect((await viewer.readDataset({ datasetId: dataset.id })).id).toBe(dataset.id);
    expect((await collect(viewer.listExamples({ datasetId: dataset.id }))).map((e) => e.id)).toEqual([example.id]);
    await expect(viewer.createDataset(unique('viewer'))).rejects.toThrow(/403/);
    await expect(viewer.createExamples([{ dataset_id: dataset.id, inputs: { q: 'viewer' } }])).rejects.toThrow(/403/);
    await expect(viewer.updateExample(example.id, { dataset_id: dataset.id, inputs: { q: 'viewer' } })).rejects.toThrow(/403/);
    await expect(viewer.deleteExample(example.id)).rejects.toThrow(/403/);
    await expect(viewer.deleteDataset({ datasetId: dataset.id })).rejects.toThrow(/403/);
    expect((await call(`/datasets/${dataset.id}`)).status).toBe(401);
    expect((await client.readExample(example.id)).inputs).toEqual({ q: 'mine' });
  });

  it('answers bad input with 4xx and {detail}', async () => {
    const key = tenant.adminKey;
    const dataset = await client.createDataset(unique('bad'));
    const bad = [
      await call('/datasets', { key, body: { name: '' } }),
      await call('/datasets', { key, body: { name: 'x', data_type: 'table' } }),
      await call('/datasets', { key, body: [] }),
      await call('/datasets?limit=0', { key }),
      await call('/datasets?metadata=notjson', { key }),
      await call('/examples', { key }),
      await call(`/examples?dataset=${dataset.id}&limit=5000`, { key }),
      await call(`/examples?dataset=${dataset.id}&filter=eq(x,1)`, { key }),
      await call(`/examples?dataset=${dataset.id}&as_of=no-such-tag`, { key }),
      await call(`/datasets/${dataset.id}/tags`, { key, method: 'PUT', body: { as_of: 'yesterday', tag: 'x' } }),
      await call(`/datasets/${dataset.id}/version`, { key }),
      await call(`/datasets/${dataset.id}/runs`, { key, body: { session_ids: [] } }),
      await call(`/datasets/${dataset.id}/runs`, { key, body: { session_ids: [randomUUID()] } }),
      await call(`/v1/platform/datasets/${dataset.id}/examples`, { key, raw: 'nope', headers: { 'content-type': 'text/plain' } }),
      await call('/datasets/not-a-uuid', { key }),
      await call(`/examples/${randomUUID()}`, { key }),
    ];
    for (const answer of bad) {
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(answer.body).toHaveProperty('detail');
    }

    // Multipart examples: inputs that are no object, an id that is no UUID, attachments.
    const form = (parts: [string, string][]) => {
      const data = new FormData();
      for (const [name, value] of parts) data.append(name, new Blob([value], { type: 'application/json' }));
      return data;
    };
    const id = randomUUID();
    for (const parts of [
      [[id, '{}'], [`${id}.inputs`, '[1]']],
      [['not-an-id', '{}']],
      [[id, '{}'], [`${id}.inputs`, '{}'], [`${id}.attachment.file`, 'x']],
      [[id, '{"split": 3}'], [`${id}.inputs`, '{}']],
    ] as [string, string][][]) {
      const answer = await call(`/v1/platform/datasets/${dataset.id}/examples`, { key, raw: form(parts) });
      expect(answer.status).toBe(422);
      expect(answer.body.detail).toBeTruthy();
    }
    // A body past the limit is refused, not read.
    const huge = await call(`/v1/platform/datasets/${dataset.id}/examples`, { key, raw: form([[id, '{}'], [`${id}.inputs`, JSON.stringify({ q: 'x'.repeat(platform.deps.config.ingestBodyLimitBytes) })]]) });
    expect(huge.status).toBe(413);
    expect((await client.readDataset({ datasetId: dataset.id })).example_count).toBe(0);
  });
});
