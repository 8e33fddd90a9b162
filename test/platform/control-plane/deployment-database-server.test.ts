// Deployments' databases on a PostgreSQL server of their own: AGENT_PLATFORM_ADMIN_DATABASE_URL names
// a login on another server than the platform's, and every deployment's login and database are made
// there; its agent server connects there (through that server's socket folder, shown to its sandbox),
// serves its threads from there, and the platform's server holds none of it. Deleting the deployment
// drops its database there.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '../../../src/database/embedded-postgres.js';
import { deploymentDatabaseName } from '../../../src/platform/services/deployments/deployment-database.js';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForDeployed } from '../../support/deployments.js';

const serverDir = mkdtempSync(join(tmpdir(), 'agent-platform-deployments-server-'));
chmodSync(serverDir, 0o755);
let deploymentsServer: EmbeddedDatabase;
let platform: TestPlatform;
let api: Api;
let key: string;

beforeAll(async () => {
  deploymentsServer = await startEmbeddedPostgres(serverDir, pino({ level: 'silent' }), { maxConnections: 200, reservedConnections: 20 });
  platform = await startControlPlanePlatform({ AGENT_PLATFORM_ADMIN_DATABASE_URL: deploymentsServer.adminUrl });
  const tenant = await buildTenant(platform.system);
  key = tenant.adminKey;
  api = controlPlaneApi(platform.url, { key, tenant: tenant.workspace.id });
}, 120_000);
afterAll(async () => {
  await stopControlPlanePlatform(platform);
  await deploymentsServer?.stop();
  rmSync(serverDir, { recursive: true, force: true });
});

/** The databases of the server a pool or URL reaches. */
async function databasesOf(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ datname: string }>('SELECT datname FROM pg_database')).rows.map((row) => row.datname);
  } finally {
    await client.end();
  }
}

describe("deployments' databases on a server of their own", () => {
  it('are made there, served from there, absent from the platform\'s server, and dropped there with the deployment', async () => {
    const created = await api('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(echoGraph('v1')).url, { name: 'elsewhere' }) });
    expect(created.status).toBe(201);
    const deploymentId: string = created.body.id;
    await waitForDeployed(api, deploymentId, created.body.latest_revision_id);

    const agent = new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, defaultHeaders: { 'x-api-key': key } });
    const thread = await agent.threads.create();
    expect(await agent.runs.wait(thread.thread_id, 'agent', { input: { input: 'where am I?' } })).toMatchObject({ reply: 'v1: where am I?' });
    expect((await agent.threads.getState(thread.thread_id)).values).toMatchObject({ reply: 'v1: where am I?' });

    const name = deploymentDatabaseName(deploymentId);
    expect(await databasesOf(deploymentsServer.adminUrl)).toContain(name);
    expect(await databasesOf(platform.deps.db.url)).not.toContain(name);

    expect((await api('DELETE', `/v2/deployments/${deploymentId}`)).status).toBe(204);
    await expect.poll(async () => (await databasesOf(deploymentsServer.adminUrl)).includes(name), { timeout: 60_000, interval: 250 }).toBe(false);
  }, 300_000);
});
