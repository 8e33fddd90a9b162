// Experiments through the official langsmith SDK's evaluate(): two experiments over one dataset, each a
// tracing project linked to the dataset whose root runs name their example, with an evaluator's
// scores stored as feedback (sent in the SDK's run batches); the experiments compared: listed by
// dataset with their scores (listProjects with referenceDatasetId and includeStats), and example by
// example (POST /datasets/{id}/runs), and through GraphQL; another workspace finds none of it.
import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { evaluate } from 'langsmith/evaluation';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { callPlatform, graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let client: Client;
/** What the SDK called. */
const paths: string[] = [];

const sdk = (apiKey: string) => new Client({ apiUrl: platform.url, apiKey, callerOptions: { maxRetries: 0 } });

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

const call = (path: string, init: { key: string; body?: unknown }) => callPlatform(platform.url, path, init);

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  client = new Client({
    apiUrl: platform.url,
    apiKey: tenant.adminKey,
    callerOptions: { maxRetries: 0 },
    fetchImplementation: ((input: RequestInfo | URL, init?: RequestInit) => {
      paths.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
      return fetch(input, init);
    }) as typeof fetch,
  });
});
afterAll(() => platform?.stop());

describe('experiments through the langsmith SDK’s evaluate()', () => {
  it('runs two experiments over a dataset, stores their scores as feedback, and compares them', async () => {
    const datasetName = `arithmetic-${randomUUID().slice(0, 8)}`;
    const dataset = await client.createDataset(datasetName);
    const examples = await client.createExamples({
      datasetId: dataset.id,
      inputs: Array.from({ length: 10 }, (_, i) => ({ a: i, b: 2 })),
      outputs: Array.from({ length: 10 }, (_, i) => ({ sum: i + 2 })),
    });

    const exact = ({ outputs, referenceOutputs }: { outputs?: Record<string, any>; referenceOutputs?: Record<string, any> }) => ({
      key: 'exact',
      score: outputs?.sum === referenceOutputs?.sum ? 1 : 0,
    });
    const right = await evaluate((inputs: Record<string, any>) => ({ sum: inputs.a + inputs.b }), {
      data: datasetName,
      evaluators: [exact],
      experimentPrefix: 'right',
      client,
    });
    // Wrong on odd a: half the examples.
    const sloppy = await evaluate((inputs: Record<string, any>) => ({ sum: inputs.a % 2 ? 0 : inputs.a + inputs.b }), {
      data: datasetName,
      evaluators: [exact],
      experimentPrefix: 'sloppy',
      client,
    });
    await client.awaitPendingTraceBatches();
    const rightProject = await client.readProject({ projectName: right.experimentName });
    const sloppyProject = await client.readProject({ projectName: sloppy.experimentName });
    expect(rightProject.reference_dataset_id).toBe(dataset.id);
    expect(right.results.map((row) => row.evaluationResults.results[0]?.score)).toEqual(Array(10).fill(1));

    // Each root run of an experiment ran one example, and carries its score.
    const runs = await collect(client.listRuns({ projectId: rightProject.id, isRoot: true }));
    expect(runs.map((run) => run.reference_example_id).sort()).toEqual(examples.map((e) => e.id).sort());
    const feedback = await collect(client.listFeedback({ runIds: runs.map((run) => run.id), feedbackKeys: ['exact'] }));
    expect(feedback).toHaveLength(10);
    expect(feedback.every((f) => f.feedback_source?.type === 'model' && f.score === 1)).toBe(true);
    // The evaluators' feedback went in the SDK's run batches, not one request each.
    expect(paths).toContain('POST /runs/multipart');
    expect(paths).not.toContain('POST /feedback');

    // The dataset's experiments with their scores.
    const experiments = await collect(client.listProjects({ referenceDatasetId: dataset.id, includeStats: true }));
    const byName = new Map(experiments.map((project: any) => [project.name, project]));
    expect([...byName.keys()].sort()).toEqual([right.experimentName, sloppy.experimentName].sort());
    expect(byName.get(right.experimentName).feedback_stats.exact).toMatchObject({ n: 10, avg: 1 });
    expect(byName.get(sloppy.experimentName).feedback_stats.exact).toMatchObject({ n: 10, avg: 0.5 });
    expect(byName.get(right.experimentName).run_count).toBeGreaterThanOrEqual(10);
    expect((await client.readDataset({ datasetId: dataset.id })).session_count).toBe(2);

    // Example by example, side by side.
    const compared = await call(`/datasets/${dataset.id}/runs`, { key: tenant.adminKey, body: { session_ids: [rightProject.id, sloppyProject.id], limit: 100 } });
    expect(compared.status).toBe(200);
    expect(compared.body.map((row: any) => row.id)).toEqual(examples.map((e) => e.id));
    for (const row of compared.body) {
      const bySession = new Map(row.runs.map((run: any) => [run.session_id, run]));
      const a = row.inputs.a as number;
      expect((bySession.get(rightProject.id) as any).feedback_stats.exact.avg).toBe(1);
      expect((bySession.get(sloppyProject.id) as any).feedback_stats.exact.avg).toBe(a % 2 ? 0 : 1);
      expect((bySession.get(sloppyProject.id) as any).outputs).toEqual({ sum: a % 2 ? 0 : a + 2 });
    }

    // Through GraphQL: the dataset's experiments and their comparison.
    const result = await graphql(
      platform.url,
      `query ($id: ID!, $experiments: [ID!]!) {
        dataset(id: $id) {
          name exampleCount
          experiments { name feedbackStats }
          comparison(experimentIds: $experiments, limit: 3) {
            example { id inputs outputs }
            results { experimentId run { outputs feedbackStats } }
          }
        }
      }`,
      { key: tenant.adminKey, variables: { id: dataset.id, experiments: [rightProject.id, sloppyProject.id] } },
    );
    expect(result.body.errors).toBeUndefined();
    const data = result.body.data.dataset;
    expect(data).toMatchObject({ name: datasetName, exampleCount: 10 });
    expect(data.experiments.map((e: any) => [e.name, e.feedbackStats.exact.avg]).sort()).toEqual(
      [[right.experimentName, 1], [sloppy.experimentName, 0.5]].sort(),
    );
    expect(data.comparison).toHaveLength(3);
    expect(data.comparison[1].example.inputs).toEqual({ a: 1, b: 2 });
    expect(data.comparison[1].results.map((r: any) => [r.experimentId, r.run.feedbackStats.exact.avg])).toEqual([
      [rightProject.id, 1],
      [sloppyProject.id, 0],
    ]);

    // A pairwise (comparative) experiment over the two: its scores are feedback naming it.
    const pairwise = await evaluate([right.experimentName, sloppy.experimentName], {
      evaluators: [
        ({ runs, referenceOutputs }: { runs: { id: string; outputs?: Record<string, any> }[]; referenceOutputs?: Record<string, any> }) => ({
          key: 'preferred',
          scores: Object.fromEntries(runs.map((run) => [run.id, run.outputs?.sum === referenceOutputs?.sum ? 1 : 0])),
        }),
      ],
      client,
    });
    await client.awaitPendingTraceBatches();
    expect(pairwise.comparativeExperiment).toMatchObject({ reference_dataset_id: dataset.id, experiments_info: [{ id: rightProject.id }, { id: sloppyProject.id }] });
    const preferred = await collect(client.listFeedback({ feedbackKeys: ['preferred'] }));
    expect(preferred).toHaveLength(20);
    expect(preferred.every((f) => (f as { comparative_experiment_id?: string }).comparative_experiment_id === pairwise.comparativeExperiment.id)).toBe(true);
    expect(preferred.filter((f) => f.score === 1)).toHaveLength(15);
    // Its experiments must be of its dataset and its workspace.
    const bad = await call('/datasets/comparative', { key: tenant.adminKey, body: { name: 'x', experiment_ids: [rightProject.id], reference_dataset_id: randomUUID() } });
    expect(bad.status).toBe(404);

    // Another workspace finds none of it.
    const stranger = sdk(other.adminKey);
    expect(await collect(stranger.listProjects({ referenceDatasetId: dataset.id }))).toEqual([]);
    expect((await call(`/datasets/${dataset.id}/runs`, { key: other.adminKey, body: { session_ids: [rightProject.id] } })).status).toBe(404);
    const theirs = await stranger.createDataset(datasetName);
    expect((await call(`/datasets/${theirs.id}/runs`, { key: other.adminKey, body: { session_ids: [rightProject.id] } })).status).toBe(404);
    const strangerGraphql = await graphql(platform.url, `query ($id: ID!) { dataset(id: $id) { id } }`, { key: other.adminKey, variables: { id: dataset.id } });
    expect(strangerGraphql.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    // An experiment may not name another workspace's dataset.
    await expect(stranger.createProject({ projectName: `x-${randomUUID().slice(0, 8)}`, referenceDatasetId: dataset.id })).rejects.toThrow(/404/);
  });
});
