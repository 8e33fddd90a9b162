// A deployment's trace key over real HTTP: it writes runs into its deployment's tracing project (the
// project a langsmith SDK user names, or none) and nothing else: runs naming another project are
// refused whole (403, the ingest dialect) before any project is made, its patches and parents reach
// no other project's runs, every other route refuses it, and revoking it (or deleting the deployment)
// ends it. The deployed agent server's own use of it is in test/platform/control-plane/deployed-traces.test.ts.
import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { deleteDeployment } from '../../../src/platform/services/deployments/deployments.service.js';
import { upsertLocalDeployment } from '../../../src/platform/services/deployments/deployments.store.js';
import { createDeploymentTraceKey, revokeDeploymentTraceKeys } from '../../../src/platform/services/tenancy/api-keys.service.js';
import { authenticateApiKey } from '../../../src/platform/services/tenancy/authentication.service.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let deploymentId: string;
let traceKey: { id: string; key: string; project: string };

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  deploymentId = newId();
  await upsertLocalDeployment(platform.deps.db, { id: deploymentId, tenantId: tenant.workspace.id, name: `weather-${deploymentId.slice(-6)}`, configPath: '/nowhere/langgraph.json', graphIds: [] });
  traceKey = await createDeploymentTraceKey(platform.deps, deploymentId);
});
afterAll(() => platform?.stop());

async function call(path: string, init: { key?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${platform.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', 'x-api-key': init.key ?? traceKey.key, ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: response.status, body };
}

const run = (overrides: Record<string, unknown> = {}) => ({ id: randomUUID(), name: 'step', run_type: 'chain', start_time: new Date().toISOString(), inputs: { q: 1 }, ...overrides });

/** The runs of a project, read with the workspace admin's key. */
async function runsOf(project: string): Promise<any[]> {
  const projects = await call(`/sessions?name=${encodeURIComponent(project)}`, { key: tenant.adminKey });
  if (!projects.body.length) return [];
  const page = await call('/runs/query', { key: tenant.adminKey, body: { session: [projects.body[0].id], limit: 100 } });
  return page.body.runs;
}

describe("a deployment's trace key", () => {
  it('is named after its deployment, and its runs go there whether or not they name the project (the langsmith SDK)', async () => {
    expect(traceKey.project).toMatch(/^weather-/);
    const client = new Client({ apiUrl: platform.url, apiKey: traceKey.key, autoBatchTracing: true });
    const named = randomUUID();
    const unnamed = randomUUID();
    await client.createRun({ id: named, name: 'named', run_type: 'chain', inputs: { question: 'rain?' }, project_name: traceKey.project, start_time: Date.now(), trace_id: named, dotted_order: `20260101T000000000000Z${named}` });
    await client.awaitPendingTraceBatches();
    expect((await call('/runs', { body: run({ id: unnamed, name: 'unnamed' }) })).status).toBe(202);
    const runs = await runsOf(traceKey.project);
    expect(runs.map((r) => r.id).sort()).toEqual([named, unnamed].sort());
    expect(runs.find((r) => r.id === named).inputs).toEqual({ question: 'rain?' });
  });

  it('cannot write runs into another project, by name or id, nor make one (403 in the ingest dialect)', async () => {
    const other = await call('/sessions', { key: tenant.adminKey, body: { name: `other-${randomUUID().slice(0, 6)}` } });
    const byName = await call('/runs', { body: run({ session_name: 'elsewhere' }) });
    expect(byName.status).toBe(403);
    expect(byName.body).toEqual({ error: expect.stringContaining(traceKey.project), details: expect.any(String) });
    expect((await call('/runs', { body: run({ session_id: other.body.id }) })).status).toBe(403);
    // A batch with one run elsewhere is refused whole.
    const mine = randomUUID();
    expect((await call('/runs/batch', { body: { post: [run({ id: mine }), run({ session_name: 'elsewhere' })] } })).status).toBe(403);
    expect((await call('/sessions?name=elsewhere', { key: tenant.adminKey })).body).toEqual([]);
    expect((await runsOf(traceKey.project)).map((r) => r.id)).not.toContain(mine);
    // OTLP: a Langsmith-Project header naming another project is refused the same way.
    const nanos = BigInt(Date.now()) * 1_000_000n;
    const spans = (name: string) => ({
      resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'elsewhere' } }] }, scopeSpans: [{ scope: {}, spans: [{ traceId: randomUUID().replace(/-/g, ''), spanId: randomUUID().replace(/-/g, '').slice(0, 16), name, kind: 1, startTimeUnixNano: String(nanos), endTimeUnixNano: String(nanos + 1000n) }] }] }],
    });
    expect((await call('/otel/v1/traces', { body: spans('refused'), headers: { 'langsmith-project': 'elsewhere' } })).status).toBe(403);
    // With no header, the key's project is the one the request names (ahead of the service name).
    expect((await call('/otel/v1/traces', { body: spans('otel span') })).status).toBe(200);
    expect((await call('/sessions?name=elsewhere', { key: tenant.adminKey })).body).toEqual([]);
    expect((await runsOf(traceKey.project)).map((r) => r.name)).toContain('otel span');
  });

  it("cannot patch another project's runs, nor have a patch wait for one", async () => {
    const project = `other-${randomUUID().slice(0, 6)}`;
    const stored = randomUUID();
    expect((await call('/runs', { key: tenant.adminKey, body: run({ id: stored, session_name: project }) })).status).toBe(202);
    expect((await call(`/runs/${stored}`, { method: 'PATCH', body: { outputs: { hijacked: true }, end_time: new Date().toISOString() } })).status).toBe(202);
    const early = randomUUID();
    expect((await call(`/runs/${early}`, { method: 'PATCH', body: { outputs: { hijacked: true } } })).status).toBe(202);
    expect((await call('/runs', { key: tenant.adminKey, body: run({ id: early, session_name: project }) })).status).toBe(202);
    for (const id of [stored, early]) expect((await call(`/runs/${id}`, { key: tenant.adminKey })).body.outputs ?? null).toBeNull();
    // …nor hang a run under another project's trace.
    expect((await call('/runs', { body: run({ parent_run_id: stored }) })).status).toBe(404);
  });

  it('is refused by every other route: trace reads, projects, API keys, the control plane, usage, GraphQL, the gateway', async () => {
    const refused = [
      await call('/runs/query', { body: { limit: 1 } }),
      await call(`/runs/${randomUUID()}`),
      await call('/sessions'),
      await call('/sessions', { body: { name: 'mine' } }),
      await call('/api/v1/api-key'),
      await call('/v2/deployments', { headers: { 'x-tenant-id': tenant.workspace.id } }),
      await call(`/v2/deployments/${deploymentId}`, { method: 'DELETE', headers: { 'x-tenant-id': tenant.workspace.id } }),
      await call(`/api/v1/orgs/current/billing/granular-usage?workspace_ids=${tenant.workspace.id}&start_time=2026-01-01T00:00:00Z&end_time=2026-01-02T00:00:00Z`),
      await call('/graphql', { body: { query: '{ apiKeys { id } }' } }),
      await call(`/deployments/${deploymentId}/assistants/search`, { body: {} }),
    ];
    for (const answer of refused) expect([401, 403, 404]).toContain(answer.status);
    expect(refused.filter((answer) => answer.status === 403).length).toBeGreaterThanOrEqual(8);
    await expect(authenticateApiKey(platform.deps, traceKey.key, undefined)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    // Nor is it among the workspace's keys.
    const keys = await call('/graphql', { key: tenant.adminKey, body: { query: '{ apiKeys { id } }' } });
    expect(keys.body.data.apiKeys.map((key: { id: string }) => key.id)).not.toContain(traceKey.id);
  });

  it('stops working when revoked, and when its deployment is deleted', async () => {
    const revoked = await createDeploymentTraceKey(platform.deps, deploymentId);
    expect((await call('/runs', { key: revoked.key, body: run() })).status).toBe(202);
    await revokeDeploymentTraceKeys(platform.deps, deploymentId, revoked.id);
    expect((await call('/runs', { key: revoked.key, body: run() })).status).toBe(401);
    expect((await call('/runs', { body: run() })).status).toBe(202);

    await deleteDeployment({ ...platform.deps, viewer: await authenticateApiKey(platform.deps, tenant.adminKey, tenant.workspace.id) }, deploymentId);
    expect((await call('/runs', { body: run() })).status).toBe(401);
    await expect(createDeploymentTraceKey(platform.deps, deploymentId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
