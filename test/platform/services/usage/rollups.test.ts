// Usage rollups stay exact under what ingestion really sees (duplicates refused with 409, retried
// posts, patches before and after their posts, child runs arriving later, concurrent requests), agree
// with `agent-platform admin usage rebuild`, and never make one ingest request wait for another.
import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldUsageDeltas } from '../../../../src/platform/services/usage/usage.service.js';
import { selectUsage, streamUsage } from '../../../../src/platform/services/usage/usage.store.js';
import { buildTenant } from '../../../support/factories.js';
import { databaseUrl, startTestPlatform, type TestPlatform } from '../../../support/helpers.js';
import { runCli } from '../../../support/processes.js';
import { postMultipart, sdkTrace, traceRuns } from '../../../support/usage-ingest.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;

const T = Date.parse('2026-05-04T00:00:00Z');
const H = 3_600_000;
const D = 24 * H;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
});
afterAll(() => platform?.stop());

const post = (parts: Parameters<typeof postMultipart>[2]) => postMultipart(platform.url, tenant.adminKey, parts);

/** The API's answer for the whole test range, for one group_by. */
async function report(groupBy: string) {
  const query = `start_time=${new Date(T).toISOString()}&end_time=${new Date(T + 60 * D).toISOString()}&workspace_ids=${tenant.workspace.id}&group_by=${groupBy}`;
  const response = await fetch(`${platform.url}/api/v1/orgs/current/billing/granular-usage?${query}`, { headers: { 'x-api-key': tenant.adminKey } });
  expect(response.status).toBe(200);
  return response.json();
}

const allReports = async () => Object.fromEntries(await Promise.all(['workspace', 'project', 'user', 'api_key'].map(async (g) => [g, await report(g)])));

/** This workspace's rollup rows, as stored, hourly then daily. */
async function rollupRows() {
  const { rows } = await platform.deps.db.pool.query(
    `SELECT 'hour' AS grain, dimension, hour AS bucket, dimension_id, traces::int FROM usage_hourly_rollups WHERE workspace_id = $1
     UNION ALL
     SELECT 'day', dimension, day, dimension_id, traces::int FROM usage_daily_rollups WHERE workspace_id = $1
     ORDER BY 1, 2, 3, 4`,
    [tenant.workspace.id],
  );
  return rows;
}

const total = async () => (await report('workspace')).usage.reduce((sum: number, row: { traces: number }) => sum + row.traces, 0);

describe('usage rollups', () => {
  it('count each trace once through a mixed workload, and the rebuild agrees', async () => {
    let expected = 0;
    // SDK traces (post, then patch) in two projects over several days.
    const client = new Client({ apiUrl: platform.url, apiKey: tenant.adminKey });
    for (let i = 0; i < 6; i++) await sdkTrace(client, T + i * 7 * H, i % 2 ? 'sdk-odd' : 'sdk-even');
    await client.awaitPendingTraceBatches();
    expected += 6;

    // A batch of roots with children; then the very same request again (a retry): 409, nothing new.
    const batch = [...traceRuns(T + 2 * D, 'raw', { child: true }), ...traceRuns(T + 2 * D + H, 'raw', { child: true })];
    expect(await post({ post: batch })).toBe(202);
    expect(await post({ post: batch })).toBe(409);
    expected += 2;

    // A duplicate next to a new root: the new one counts, the duplicate does not.
    expect(await post({ post: [batch[0]!, ...traceRuns(T + 3 * D, 'raw')] })).toBe(409);
    expected += 1;

    // Patches after their posts, and one patch that arrives before its post.
    const early = randomUUID();
    expect(await post({ patch: [{ id: batch[0]!.id, end_time: new Date(T + 2 * D + 5000).toISOString(), outputs: { ok: true } }] })).toBe(202);
    expect(await post({ patch: [{ id: early, end_time: new Date(T + 4 * D + 5000).toISOString() }] })).toBe(202);
    expect(await post({ post: traceRuns(T + 4 * D, 'raw', { id: early }) })).toBe(202);
    expected += 1;

    // A child posted alone, later, under an existing root: a run, not a trace.
    expect(await post({ post: [{ id: randomUUID(), name: 'late', run_type: 'tool', parent_run_id: batch[0]!.id, start_time: new Date(T + 2 * D + 9000).toISOString(), session_name: 'raw' }] })).toBe(202);

    // Concurrent requests into the same hour and project, one of them sent twice at once.
    const twice = traceRuns(T + 5 * D + 10 * 60_000, 'hot');
    const concurrent = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => post({ post: traceRuns(T + 5 * D + i * 60_000, 'hot', { child: true }) })),
      post({ post: twice }),
      post({ post: twice }),
    ]);
    expect(concurrent.slice(0, 8)).toEqual(Array(8).fill(202));
    expect(concurrent.slice(8).sort()).toEqual([202, 409]);
    expected += 9;

    // Exact before any fold (reads add the deltas), after a fold, and after a rebuild.
    const beforeFold = await allReports();
    expect(await total()).toBe(expected);
    expect((await foldUsageDeltas(platform.deps)).folded).toBeGreaterThan(0);
    expect(await allReports()).toEqual(beforeFold);
    const folded = await rollupRows();
    for (const grain of ['hour', 'day']) {
      for (const dimension of ['workspace', 'project', 'user', 'api_key']) {
        const rows = folded.filter((row) => row.grain === grain && row.dimension === dimension);
        expect(rows.reduce((sum, row) => sum + row.traces, 0), `${grain} ${dimension}`).toBe(expected);
      }
    }

    const rebuild = await runCli(['admin', '--json', 'usage', 'rebuild'], {
      DATABASE_URL: databaseUrl(),
      AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    });
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(JSON.parse(rebuild.stdout).traces).toBeGreaterThanOrEqual(expected);
    expect(await rollupRows()).toEqual(folded);
    expect(await allReports()).toEqual(beforeFold);
  }, 180_000);

  it('never makes an ingest request wait on another one counting the same hour and project', async () => {
    const start = T + 20 * D + 15 * 60_000;
    expect(await post({ post: traceRuns(start, 'locks') })).toBe(202);
    const before = await total();
    const { rows } = await platform.deps.db.pool.query('SELECT id FROM tracing_projects WHERE workspace_id = $1 AND name = $2', [tenant.workspace.id, 'locks']);
    // An ingest transaction still open, having counted a trace in that same hour and project.
    const open = new pg.Client({ connectionString: databaseUrl() });
    await open.connect();
    try {
      await open.query('BEGIN');
      await open.query('INSERT INTO usage_trace_deltas (workspace_id, hour, project_id, user_id, api_key_id, traces) VALUES ($1, $2, $3, $4, NULL, 1)', [
        tenant.workspace.id,
        new Date(start - 15 * 60_000),
        rows[0].id,
        tenant.admin.id,
      ]);
      // Neither ingestion nor a fold waits for it.
      expect(await post({ post: traceRuns(start + 60_000, 'locks') })).toBe(202);
      await foldUsageDeltas(platform.deps);
      expect(await total()).toBe(before + 1);
      await open.query('ROLLBACK');
    } finally {
      await open.end();
    }
    expect(await total()).toBe(before + 1);
  });

  it('streams the same rows through the cursor as the one-shot read, page by page', async () => {
    const selection = {
      workspaceIds: [tenant.workspace.id],
      dimension: 'project' as const,
      from: new Date(T),
      to: new Date(T + 60 * D),
      dayFrom: new Date(T),
      dayTo: new Date(T),
      origin: new Date(T),
      strideSeconds: 3600,
    };
    const all = await selectUsage(platform.deps.db.pool, selection);
    expect(all.length).toBeGreaterThan(5);
    const pages = [];
    for await (const page of streamUsage(platform.deps.db.pool, selection, 2)) pages.push(page);
    expect(pages.every((page) => page.length <= 2)).toBe(true);
    expect(pages.flat()).toEqual(all);
  });
});
