// GraphQL over datasets: the datasets and dataset queries with their examples (as of a version, by
// split), createDataset and deleteDataset with typed errors; another workspace's key sees none of it.
import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let client: Client;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  client = new Client({ apiUrl: platform.url, apiKey: tenant.adminKey, callerOptions: { maxRetries: 0 } });
});
afterAll(() => platform?.stop());

describe('datasets through GraphQL', () => {
  it('makes, reads and deletes datasets, with examples as of a version, and typed errors', async () => {
    const create = `mutation($input: CreateDatasetInput!) { createDataset(input: $input) {
      __typename ... on MutationCreateDatasetSuccess { data { id name description metadata exampleCount } } ... on AppError { code message } } }`;
    const name = `gql-${randomUUID().slice(0, 8)}`;
    const made = await graphql(platform.url, create, { key: tenant.adminKey, variables: { input: { name, description: 'from GraphQL', metadata: { team: 'a' } } } });
    const dataset = made.body.data.createDataset.data;
    expect(dataset).toMatchObject({ name, description: 'from GraphQL', metadata: { team: 'a' }, exampleCount: 0 });
    expect((await client.readDataset({ datasetName: name })).id).toBe(dataset.id);

    const [first] = await client.createExamples({ datasetId: dataset.id, inputs: [{ q: 1 }, { q: 2 }], outputs: [{ a: 1 }, { a: 2 }], splits: ['train', 'test'] });
    const before = (await client.readDataset({ datasetId: dataset.id })).modified_at;
    await client.updateExample(first!.id, { inputs: { q: 'one' } });

    const read = `query($id: ID!, $asOf: String) { dataset(id: $id) {
      name exampleCount
      now: examples { inputs splits }
      then: examples(asOf: $asOf) { inputs }
      test: examples(splits: ["test"]) { outputs }
    } datasets { id } }`;
    const { body } = await graphql(platform.url, read, { key: tenant.adminKey, variables: { id: dataset.id, asOf: before } });
    expect(body.errors).toBeUndefined();
    expect(body.data.dataset).toEqual({
      name,
      exampleCount: 2,
      now: [{ inputs: { q: 'one' }, splits: ['train'] }, { inputs: { q: 2 }, splits: ['test'] }],
      then: [{ inputs: { q: 1 } }, { inputs: { q: 2 } }],
      test: [{ outputs: { a: 2 } }],
    });
    expect(body.data.datasets.map((d: { id: string }) => d.id)).toContain(dataset.id);

    // Typed errors: a name taken, a viewer's write, another workspace's dataset.
    expect((await graphql(platform.url, create, { key: tenant.adminKey, variables: { input: { name } } })).body.data.createDataset).toMatchObject({ __typename: 'AppError', code: 'CONFLICT' });
    expect((await graphql(platform.url, create, { key: tenant.viewerKey, variables: { input: { name: 'x' } } })).body.data.createDataset).toMatchObject({ code: 'FORBIDDEN' });
    expect((await graphql(platform.url, create, { key: tenant.adminKey, variables: { input: { name: ' ' } } })).body.data.createDataset).toMatchObject({ code: 'VALIDATION_FAILED' });
    const stranger = await graphql(platform.url, `query($id: ID!) { dataset(id: $id) { id } datasets { id } }`, { key: other.adminKey, variables: { id: dataset.id } });
    expect(stranger.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const theirs = await graphql(platform.url, `{ datasets { id } }`, { key: other.adminKey });
    expect(theirs.body.data.datasets).toEqual([]);
    const del = `mutation($id: ID!) { deleteDataset(id: $id) { __typename ... on MutationDeleteDatasetSuccess { data } ... on AppError { code } } }`;
    expect((await graphql(platform.url, del, { key: other.adminKey, variables: { id: dataset.id } })).body.data.deleteDataset).toMatchObject({ code: 'NOT_FOUND' });
    expect((await graphql(platform.url, del, { key: tenant.adminKey, variables: { id: dataset.id } })).body.data.deleteDataset).toEqual({ __typename: 'MutationDeleteDatasetSuccess', data: true });
    expect(await client.hasDataset({ datasetId: dataset.id })).toBe(false);
  });
});
