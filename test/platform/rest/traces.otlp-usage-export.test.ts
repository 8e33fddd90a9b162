// Runs that came as OpenTelemetry spans are runs like any other downstream: each trace counts once in
// the granular usage API, in the bucket of its root's start (also when its children were stored before
// the root arrived), and a bulk export writes them to Parquet, read back with DuckDB equal to the
// stored rows (tree, names, tokens, the roots' rolled up from their LLM children).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { listKeys, readParquet, type S3Server, startS3, takeTurnWithExportWorkers, waitForExport } from '../../support/exports.js';

takeTurnWithExportWorkers();

let platform: TestPlatform;
let s3: S3Server;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
const BUCKET = 'otel-exports';
const PROJECT = `otel-usage-${randomUUID().slice(0, 8)}`;
const DAY0 = Date.parse('2026-03-02T00:00:00Z');
const H = 3_600_000;
const D = 24 * H;

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket(BUCKET);
  platform = await startTestPlatform({ jobs: true, config: { AGENT_PLATFORM_EXPORT_SWEEP_SECONDS: '1' } });
  tenant = await buildTenant(platform.system, { planTier: 'plus' });
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  await s3?.stop();
});

const hex = (bytes: number) => randomUUID().replaceAll('-', '').slice(0, bytes * 2);
const nanos = (ms: number) => String(BigInt(ms) * 1_000_000n);
const attribute = (key: string, value: string | number) => ({ key, value: typeof value === 'number' ? { intValue: value } : { stringValue: value } });

/** A root chain at `start` with an LLM child (tokens); the child is sent alone first when `childFirst`. */
function trace(start: number) {
  const traceId = hex(16);
  const root = { traceId, spanId: hex(8), name: 'agent', kind: 1, startTimeUnixNano: nanos(start), endTimeUnixNano: nanos(start + 900), attributes: [attribute('langsmith.span.kind', 'chain')] };
  const llm = {
    traceId,
    spanId: hex(8),
    parentSpanId: root.spanId,
    name: 'chat',
    kind: 3,
    startTimeUnixNano: nanos(start + 100),
    endTimeUnixNano: nanos(start + 800),
    attributes: [attribute('gen_ai.operation.name', 'chat'), attribute('gen_ai.request.model', 'fake-1'), attribute('gen_ai.usage.input_tokens', 7), attribute('gen_ai.usage.output_tokens', 5)],
  };
  return { root, llm };
}

async function post(spans: unknown[]) {
  const response = await fetch(`${platform.url}/otel/v1/traces`, {
    method: 'POST',
    headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json', 'langsmith-project': PROJECT },
    body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [attribute('service.name', 'usage-test')] }, scopeSpans: [{ scope: { name: 't' }, spans }] }] }),
  });
  expect(response.status).toBe(200);
}

async function api(method: string, path: string, body?: unknown) {
  const response = await fetch(`${platform.url}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': tenant.adminKey, 'x-tenant-id': tenant.workspace.id, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

it('counts OTLP traces in granular usage and exports their runs to Parquet like any other', async () => {
  // Day 0: two traces, each child stored before its root (a request of its own); day 1: one trace in one request.
  const first = trace(DAY0 + 10 * H);
  const second = trace(DAY0 + 11 * H);
  const third = trace(DAY0 + D + 9 * H);
  await post([first.llm]);
  await post([second.llm]);
  await post([first.root, second.root]);
  await post([third.llm, third.root]);

  const query = `start_time=${new Date(DAY0).toISOString()}&end_time=${new Date(DAY0 + 4 * D).toISOString()}&workspace_ids=${tenant.workspace.id}&group_by=project`;
  const usage = await fetch(`${platform.url}/api/v1/orgs/current/billing/granular-usage?${query}`, { headers: { 'x-api-key': tenant.adminKey } });
  expect(usage.status).toBe(200);
  const { usage: rows } = (await usage.json()) as { usage: { time_bucket: string; dimensions: Record<string, unknown>; traces: number }[] };
  expect(rows.map((row) => [row.time_bucket, row.dimensions.project_name, row.traces])).toEqual([
    [new Date(DAY0).toISOString(), PROJECT, 2],
    [new Date(DAY0 + D).toISOString(), PROJECT, 1],
  ]);

  const [project] = (await (await fetch(`${platform.url}/sessions?name=${encodeURIComponent(PROJECT)}`, { headers: { 'x-api-key': tenant.adminKey } })).json()) as { id: string }[];
  const destination = await api('POST', '/bulk-exports/destinations', {
    destination_type: 's3',
    display_name: 'Lake',
    config: { bucket_name: BUCKET, prefix: 'otel', endpoint_url: s3.endpoint, region: 'us-east-1' },
    credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
  });
  expect(destination.status).toBe(200);
  const created = await api('POST', '/bulk-exports', {
    bulk_export_destination_id: destination.body.id,
    session_id: project!.id,
    start_time: new Date(DAY0).toISOString(),
    end_time: new Date(DAY0 + 2 * D).toISOString(),
    format_version: 'v2_beta',
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const finished = await waitForExport(platform.deps, created.body.id);
  expect(finished.status, JSON.stringify(finished.runs.map((run) => run.errors))).toBe('Completed');

  const keys = await listKeys(s3.client, BUCKET, `otel/export_id=${created.body.id}/`);
  const reader = await readParquet(s3.client, BUCKET, keys);
  try {
    const columns =
      'id, trace_id, parent_run_id, parent_run_ids, name, run_type, is_root, dotted_order, status, total_tokens::int AS total_tokens, prompt_tokens::int AS prompt_tokens, completion_tokens::int AS completion_tokens';
    const exported = await reader.query(`SELECT ${columns} FROM FILES ORDER BY id`);
    const { rows: source } = await platform.deps.db.pool.query(
      `SELECT ${columns.replace('id, trace_id, parent_run_id, parent_run_ids', 'id::text, trace_id::text, parent_run_id::text, parent_run_ids::text[]')} FROM trace_runs WHERE tenant_id = $1 AND session_id = $2 ORDER BY id`,
      [tenant.workspace.id, project!.id],
    );
    expect(exported).toEqual(source);
    expect(exported).toHaveLength(6);
    // The tree as exported: every chat run under its agent root, with its tokens.
    const roots = new Map(exported.filter((row) => row.is_root).map((row) => [row.id, row]));
    expect(roots.size).toBe(3);
    // Each root carries its chat run's tokens, rolled up whether the child came first or with it.
    for (const row of roots.values()) expect(row).toMatchObject({ total_tokens: 12, prompt_tokens: 7, completion_tokens: 5 });
    for (const row of exported.filter((row) => !row.is_root)) {
      expect(row).toMatchObject({ name: 'chat', run_type: 'llm', total_tokens: 12, prompt_tokens: 7 });
      expect(roots.get(row.parent_run_id as string)).toMatchObject({ id: row.trace_id, name: 'agent' });
      expect(row.parent_run_ids).toEqual([row.trace_id]);
    }
  } finally {
    reader.close();
  }
});
