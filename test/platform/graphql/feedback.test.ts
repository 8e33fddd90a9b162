// GraphQL over feedback: a run's feedback and feedbackStats, the feedback query, and the mutations that
// give, change and delete feedback, with typed errors; another workspace's key sees none of it.
import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { ingestRunBatch } from '../../../src/platform/ingest/ingest.service.js';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let client: Client;
const runId = newId();

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  client = new Client({ apiUrl: platform.url, apiKey: tenant.adminKey, callerOptions: { maxRetries: 0 } });
  await ingestRunBatch(platform.deps, { workspaceId: tenant.workspace.id }, {
    post: [{ id: runId, name: 'answer', run_type: 'chain', start_time: new Date().toISOString(), session_name: 'gql-feedback', inputs: {} }],
  });
});
afterAll(() => platform?.stop());

describe('feedback through GraphQL', () => {
  it('shows a run’s feedback through GraphQL', async () => {
    const given = await client.createFeedback(runId, 'graphql', { score: 0.5, comment: 'seen' });
    const { body } = await graphql(
      platform.url,
      `query($id: ID!) { traceRun(id: $id) { id feedbackStats feedback { id key score comment run { id } } } feedback(runId: $id, key: "graphql") { id key } }`,
      { key: tenant.adminKey, variables: { id: runId } },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data.traceRun.feedback).toContainEqual({ id: given.id, key: 'graphql', score: 0.5, comment: 'seen', run: { id: runId } });
    expect(body.data.traceRun.feedbackStats.graphql).toMatchObject({ n: 1, avg: 0.5 });
    expect(body.data.feedback).toEqual([{ id: given.id, key: 'graphql' }]);
    // Another workspace's key sees none of it.
    const stranger = await graphql(platform.url, `query($id: ID!) { feedback(runId: $id) { id } }`, { key: other.adminKey, variables: { id: runId } });
    expect(stranger.body.data?.feedback).toEqual([]);
  });

  it('gives, changes and deletes feedback through GraphQL mutations, with typed errors', async () => {
    const give = `mutation($input: GiveFeedbackInput!) { giveFeedback(input: $input) {
      __typename ... on MutationGiveFeedbackSuccess { data { id key score comment feedbackSource run { id } } } ... on AppError { code message } } }`;
    const given = await graphql(platform.url, give, { key: tenant.adminKey, variables: { input: { runId, key: 'console', score: 1, comment: 'from a person' } } });
    const made = given.body.data.giveFeedback.data;
    expect(made).toMatchObject({ key: 'console', score: 1, comment: 'from a person', feedbackSource: { type: 'app' }, run: { id: runId } });
    expect((await client.readFeedback(made.id)).comment).toBe('from a person');

    const change = `mutation($id: ID!, $input: ChangeFeedbackInput!) { changeFeedback(id: $id, input: $input) {
      __typename ... on MutationChangeFeedbackSuccess { data { score comment } } ... on AppError { code } } }`;
    const changed = await graphql(platform.url, change, { key: tenant.adminKey, variables: { id: made.id, input: { score: 0, comment: null } } });
    expect(changed.body.data.changeFeedback.data).toEqual({ score: 0, comment: null });

    // Typed errors: an unknown run, a viewer's write, another workspace's feedback.
    const unknown = await graphql(platform.url, give, { key: tenant.adminKey, variables: { input: { runId: randomUUID(), key: 'x' } } });
    expect(unknown.body.data.giveFeedback).toMatchObject({ __typename: 'AppError', code: 'NOT_FOUND' });
    const viewer = await graphql(platform.url, give, { key: tenant.viewerKey, variables: { input: { runId, key: 'x' } } });
    expect(viewer.body.data.giveFeedback).toMatchObject({ __typename: 'AppError', code: 'FORBIDDEN' });
    const del = `mutation($id: ID!) { deleteFeedback(id: $id) { __typename ... on MutationDeleteFeedbackSuccess { data } ... on AppError { code } } }`;
    expect((await graphql(platform.url, del, { key: other.adminKey, variables: { id: made.id } })).body.data.deleteFeedback).toMatchObject({ code: 'NOT_FOUND' });
    expect((await graphql(platform.url, del, { key: tenant.adminKey, variables: { id: made.id } })).body.data.deleteFeedback).toEqual({ __typename: 'MutationDeleteFeedbackSuccess', data: true });
    await expect(client.readFeedback(made.id)).rejects.toThrow(/404/);
  });
});
