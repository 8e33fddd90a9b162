// System endpoints of the agent server against a real `serve` process: /info flags and /metrics in
// Prometheus text; and the new routes (metrics, MCP, A2A) at /deployments/<id> on the platform keep
// the deployment to its own organization's keys.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerLocalDeployment } from '../../../src/platform/services/deployments/local-deployments.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { fixtureConfig, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
let platform: TestPlatform;
beforeAll(async () => {
  [server, platform] = await Promise.all([startServe(), startTestPlatform()]);
});
afterAll(async () => {
  await server?.stop();
  await platform?.stop();
  removeDir(server?.dir);
});

/** One sample's value from Prometheus text (`name{labels} value`). */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('system endpoints', () => {
  it('/ok reports each dependency it serves from', async () => {
    const ok = await fetch(`${server.url}/ok`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ ok: true, checks: { postgres: { status: 'ok', latency_ms: expect.any(Number) }, event_bus: { status: 'ok' } } });
  });

  it('/info flags A2A and MCP', async () => {
    const info = (await (await fetch(`${server.url}/info`)).json()) as { flags: Record<string, boolean> };
    expect(info.flags).toMatchObject({ assistants: true, a2a: true, mcp: true });
  });

  it('/metrics reports runs by status, queue depth, run latency and ingested traces in Prometheus text', async () => {
    const before = await fetch(`${server.url}/metrics`);
    expect(before.status).toBe(200);
    expect(before.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const beforeText = await before.text();
    expect(beforeText).toContain('# TYPE agent_server_runs gauge');
    expect(beforeText).toContain('# TYPE agent_server_run_duration_seconds histogram');
    expect(beforeText).toContain('# TYPE agent_platform_traces_ingested_total counter');
    expect(sample(beforeText, 'agent_server_run_queue_depth')).toBe(0);
    const successBefore = sample(beforeText, 'agent_server_runs', '{status="success"}')!;
    const observedBefore = sample(beforeText, 'agent_server_run_duration_seconds_count') ?? 0;

    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'slow', { input: { label: 'metrics', delay_ms: 1 } });
    await server.client.runs.wait(null, 'failing', { input: {} }).catch(() => undefined);

    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(sample(text, 'agent_server_runs', '{status="success"}')).toBe(successBefore + 1);
    expect(sample(text, 'agent_server_runs', '{status="error"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'agent_server_run_duration_seconds_count')).toBeGreaterThanOrEqual(observedBefore + 2);
    expect(sample(text, 'agent_server_run_duration_seconds_bucket', '{le="+Inf"}')).toBe(sample(text, 'agent_server_run_duration_seconds_count'));
    // A second scrape does not count the same runs again.
    const again = await (await fetch(`${server.url}/metrics`)).text();
    expect(sample(again, 'agent_server_run_duration_seconds_count')).toBe(sample(text, 'agent_server_run_duration_seconds_count'));
  });

  it("at /deployments/<id>, another organization's key sees 404 on /metrics, /mcp and /a2a; the reference stays public", async () => {
    // The serve deployment belongs to the installation's first workspace; this tenant is a new organization.
    const stranger = await buildTenant(platform.system);
    const base = `${platform.url}/deployments/${server.deploymentId}`;
    const headers = { 'x-api-key': stranger.adminKey, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    expect((await fetch(`${base}/metrics`, { headers })).status).toBe(404);
    const mcp = await fetch(`${base}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    expect(mcp.status).toBe(404);
    const a2a = await fetch(`${base}/a2a/agent`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: crypto.randomUUID() } }) });
    expect(a2a.status).toBe(404);
    expect(await a2a.json()).toMatchObject({ jsonrpc: '2.0', error: { message: 'Deployment not found' } });
    expect((await fetch(`${base}/.well-known/agent-card.json?assistant_id=agent`, { headers })).status).toBe(404);
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/openapi.json`)).status).toBe(200);
  });

  // Deployments that shared a database: every deployment's threads are in a database of its own now, where no other deployment's ids are.
  it.skip("an A2A contextId (or a run's if_not_exists thread) that is another deployment's thread is a 409, not a 500", async () => {
    const stranger = await buildTenant(platform.system);
    const { dir, configPath } = fixtureConfig();
    try {
      const other = await registerLocalDeployment(platform.system, { configPath, workspaceId: stranger.workspace.id });
      const taken = (await server.client.threads.create()).thread_id;
      const headers = { 'x-api-key': stranger.adminKey, 'content-type': 'application/json' };
      const base = `${platform.url}/deployments/${other.deploymentId}`;
      const message = { messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }], contextId: taken };
      const a2a = await fetch(`${base}/a2a/agent`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message } }) });
      expect(a2a.status).toBe(409);
      expect(((await a2a.json()) as { error: { message: string } }).error.message).toMatch(/the id is taken/);
      const run = await fetch(`${base}/threads/${taken}/runs`, { method: 'POST', headers, body: JSON.stringify({ assistant_id: 'agent', if_not_exists: 'create' }) });
      expect(run.status).toBe(409);
    } finally {
      removeDir(dir);
    }
  });
});
