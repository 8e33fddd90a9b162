// Bulk export over GraphQL, through the same services as REST: destinations without credentials,
// create / rotate / cancel mutations with typed errors, and exportProgress live over graphql-ws and
// SSE until the export completes.
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { ingestFixtureTraces, type S3Server, startS3, takeTurnWithExportWorkers } from '../../support/exports.js';

takeTurnWithExportWorkers();

let platform: TestPlatform;
let s3: S3Server;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let sessionId: string;
let destinationId: string;

const gql = (query: string, variables: Record<string, unknown> = {}) => graphql(platform.url, query, { key: tenant.adminKey, tenant: tenant.workspace.id, variables });

const CREATE_EXPORT = `mutation($input: CreateBulkExportInput!) {
  createBulkExport(input: $input) { __typename ... on MutationCreateBulkExportSuccess { data { id status } } ... on AppError { code message } }
}`;

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('gql');
  platform = await startTestPlatform({ jobs: true, config: { AGENT_PLATFORM_EXPORT_BATCH_ROWS: '4', AGENT_PLATFORM_EXPORT_FILE_SIZE: '1b' } });
  tenant = await buildTenant(platform.system, { planTier: 'enterprise' });
  ({ sessionId } = await ingestFixtureTraces(platform.deps, tenant.workspace.id, 'gql-export', { '2026-03-01': 12, '2026-03-02': 8 }));
  const created = await gql(
    `mutation($config: ExportDestinationConfigInput!, $credentials: ExportCredentialsInput) {
      createExportDestination(displayName: "lake", config: $config, credentials: $credentials) {
        ... on MutationCreateExportDestinationSuccess { data { id displayName hasCredentials config } }
        ... on AppError { code message }
      }
    }`,
    { config: { bucketName: 'gql', endpointUrl: s3.endpoint }, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } },
  );
  expect(created.body.data.createExportDestination.data).toMatchObject({ displayName: 'lake', hasCredentials: true });
  destinationId = created.body.data.createExportDestination.data.id;
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  await s3?.stop();
});

describe('bulk export over GraphQL', () => {
  it('never exposes credentials and returns destination validation failures as typed errors', async () => {
    const fields = await gql('{ __type(name: "ExportDestination") { fields { name } } }');
    expect(fields.body.data.__type.fields.map((f: { name: string }) => f.name)).not.toContain('credentials');
    const listed = await gql('{ exportDestinations { id config } }');
    expect(JSON.stringify(listed.body)).not.toContain('S3RVER');

    const rotated = await gql(
      `mutation($id: ID!) { rotateExportDestinationCredentials(id: $id, credentials: { accessKeyId: "NOPE", secretAccessKey: "x" }) {
        __typename ... on AppError { code message } } }`,
      { id: destinationId },
    );
    expect(rotated.body.data.rotateExportDestinationCredentials).toEqual({
      __typename: 'AppError',
      code: 'BAD_REQUEST',
      message: 'Failed to validate S3 destination: Key ID you provided does not exist',
    });
    const invalid = await gql(CREATE_EXPORT, { input: { destinationId, sessionId, startTime: '2026-03-01T00:00:00Z', intervalHours: 169 } });
    expect(invalid.body.data.createBulkExport).toMatchObject({ __typename: 'AppError', code: 'VALIDATION_FAILED' });
  });

  it('streams exportProgress over graphql-ws until the export completes', async () => {
    const client = createClient({
      url: `${platform.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { 'X-Api-Key': tenant.adminKey, 'X-Tenant-Id': tenant.workspace.id },
    });
    try {
      const created = await gql(CREATE_EXPORT, { input: { destinationId, sessionId, startTime: '2026-03-01T00:00:00Z', endTime: '2026-03-03T00:00:00Z', formatVersion: 'v2_beta' } });
      const exportId = created.body.data.createBulkExport.data.id;
      const seen: any[] = [];
      await new Promise<void>((resolve, reject) => {
        client.subscribe(
          { query: 'subscription($id: ID!) { exportProgress(exportId: $id) { exportId status rowsWritten runs { status rowsWritten exportedFiles } } }', variables: { id: exportId } },
          { next: (value) => void seen.push(value), error: reject, complete: resolve },
        );
      });
      const last = seen.at(-1).data.exportProgress;
      expect(last).toMatchObject({ exportId, status: 'Completed', rowsWritten: 20 });
      expect(last.runs.map((run: { rowsWritten: number }) => run.rowsWritten)).toEqual([12, 8]);
      expect(last.runs.every((run: { exportedFiles: string[] }) => run.exportedFiles.length > 0)).toBe(true);
      // Live: intermediate states were sent, not only the final one.
      expect(seen.length).toBeGreaterThan(1);

      const query = await gql('query($id: ID!) { bulkExport(id: $id) { status runs { status rowsWritten } } }', { id: exportId });
      expect(query.body.data.bulkExport).toEqual({ status: 'Completed', runs: [{ status: 'Completed', rowsWritten: 12 }, { status: 'Completed', rowsWritten: 8 }] });
      // What a person reads in a list of exports: the project and destination by name.
      const named = await gql('query($id: ID!) { bulkExport(id: $id) { project { id name } destination { id displayName } } }', { id: exportId });
      expect(named.body.data.bulkExport).toEqual({ project: { id: sessionId, name: 'gql-export' }, destination: { id: destinationId, displayName: 'lake' } });
    } finally {
      await client.dispose();
    }
  });

  it('streams exportProgress over SSE, and cancels through a mutation', async () => {
    // A schedule starting in the future: no worker's clock spawns a window of it during the test.
    const startTime = new Date(Date.now() + 48 * 3_600_000).toISOString();
    const created = await gql(CREATE_EXPORT, { input: { destinationId, sessionId, startTime, intervalHours: 24 } });
    const exportId = created.body.data.createBulkExport.data.id;
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': tenant.adminKey, 'x-tenant-id': tenant.workspace.id },
      body: JSON.stringify({ query: `subscription { exportProgress(exportId: "${exportId}") { status } }` }),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    let text = '';
    const read = async (until: string) => {
      while (!text.includes(until)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
    };
    await read('IntervalScheduled');
    const cancelled = await gql('mutation($id: ID!) { cancelBulkExport(id: $id) { ... on MutationCancelBulkExportSuccess { data { status } } } }', { id: exportId });
    expect(cancelled.body.data.cancelBulkExport.data.status).toBe('Cancelled');
    await read('Cancelled');
    expect(text).toContain('"status":"Cancelled"');
    await reader.cancel();
  });
});
