// Bulk export over REST against s3rver on loopback: destinations (real test writes, the spec's error
// reasons, credentials never returned, rotation), exports of fixture traces across several days read
// back with DuckDB (row counts per day, values and types equal to the source, no duplicates, the Hive
// path), export_fields, a filter, every compression, v1 and v2_beta, cancel, bad input and plan gating.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { ingestFixtureTraces, listKeys, readParquet, type S3Server, startS3, waitForExport, takeTurnWithExportWorkers } from '../../support/exports.js';

takeTurnWithExportWorkers();

let platform: TestPlatform;
let s3: S3Server;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let sessionId: string;
const BUCKET = 'exports';
const PER_DAY = { '2026-03-01': 14, '2026-03-02': 22, '2026-03-03': 8 };

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket(BUCKET);
  platform = await startTestPlatform({
    jobs: true,
    // Small batches and files: several files per day, so rolling and checkpoints are exercised. The
    // batch bytes fit fewer rows than BATCH_ROWS: batches after the first are sized by their rows' bytes.
    config: { AGENT_PLATFORM_EXPORT_BATCH_ROWS: '5', AGENT_PLATFORM_EXPORT_BATCH_BYTES: '2kb', AGENT_PLATFORM_EXPORT_FILE_SIZE: '1b', AGENT_PLATFORM_EXPORT_SWEEP_SECONDS: '1' },
  });
  tenant = await buildTenant(platform.system, { planTier: 'plus' });
  other = await buildTenant(platform.system, { planTier: 'enterprise' });
  ({ sessionId } = await ingestFixtureTraces(platform.deps, tenant.workspace.id, 'export-fixtures', PER_DAY));
  // Outside the range: the day before, and exactly at its (exclusive) end.
  await ingestFixtureTraces(platform.deps, tenant.workspace.id, 'export-fixtures', { '2026-02-28': 2, '2026-03-04': 2 });
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  await s3?.stop();
});

async function api(method: string, path: string, options: { body?: unknown; key?: string; tenant?: string | null } = {}) {
  const tenantId = options.tenant === undefined ? tenant.workspace.id : options.tenant;
  const response = await fetch(`${platform.url}/api/v1${path}`, {
    method,
    headers: {
      'x-api-key': options.key ?? tenant.adminKey,
      ...(tenantId ? { 'x-tenant-id': tenantId } : {}),
      'content-type': 'application/json',
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

const destinationBody = (overrides: Record<string, unknown> = {}, credentials: unknown = { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' }) => ({
  destination_type: 's3',
  display_name: 'Lake',
  config: { bucket_name: BUCKET, prefix: 'traces/prod', endpoint_url: s3.endpoint, region: 'us-east-1', ...overrides },
  credentials,
});

async function createDestination(overrides: Record<string, unknown> = {}, options: { key?: string; tenant?: string } = {}) {
  const created = await api('POST', '/bulk-exports/destinations', { body: destinationBody(overrides), ...options });
  expect(created.status).toBe(200);
  return created.body.id as string;
}

async function runExport(body: Record<string, unknown>) {
  const created = await api('POST', '/bulk-exports', { body: { session_id: sessionId, start_time: '2026-03-01T00:00:00Z', end_time: '2026-03-04T00:00:00Z', ...body } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const finished = await waitForExport(platform.deps, created.body.id);
  expect(finished.status, JSON.stringify(finished.runs.map((run) => run.errors))).toBe('Completed');
  return created.body.id as string;
}

/** The source rows of the fixture range, typed as the files should hold them. */
async function sourceRows(filterSql = 'true') {
  const { rows } = await platform.deps.db.pool.query(
    `SELECT id::text, tenant_id::text, session_id::text, trace_id::text, parent_run_id::text, parent_run_ids::text[], name, run_type,
            (extract(epoch FROM start_time) * 1000000)::bigint::text AS start_us, (extract(epoch FROM end_time) * 1000000)::bigint::text AS end_us,
            status, is_root, dotted_order, inputs::text AS inputs, outputs::text AS outputs, error, extra::text AS extra, tags,
            total_tokens, prompt_tokens, total_cost, to_char(start_time AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day
       FROM trace_runs WHERE tenant_id = $1 AND session_id = $2 AND start_time >= '2026-03-01' AND start_time < '2026-03-04' AND ${filterSql}
      ORDER BY id`,
    [tenant.workspace.id, sessionId],
  );
  return rows;
}

describe('destinations', () => {
  it('creates a destination after a real test write under tmp/, removes the test object, and never returns credentials', async () => {
    const created = await api('POST', '/bulk-exports/destinations', { body: destinationBody() });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ id: expect.any(String), destination_type: 's3', display_name: 'Lake' });
    expect(JSON.stringify(created.body)).not.toContain('S3RVER');
    expect(await listKeys(s3.client, BUCKET, 'traces/prod/tmp/')).toEqual([]);
    const stored = await platform.deps.db.prisma.exportDestination.findUniqueOrThrow({ where: { id: created.body.id } });
    expect(stored.credentials).not.toContain('S3RVER');

    const listed = await api('GET', '/bulk-exports/destinations');
    expect(listed.body.map((d: { id: string }) => d.id)).toContain(created.body.id);
    const fetched = await api('GET', `/bulk-exports/destinations/${created.body.id}`);
    expect(fetched.body.config).toMatchObject({ bucket_name: BUCKET, prefix: 'traces/prod', include_bucket_in_prefix: false });
    expect(JSON.stringify(fetched.body)).not.toContain('S3RVER');
    expect((await api('GET', `/bulk-exports/destinations/${created.body.id}`, { key: other.adminKey, tenant: other.workspace.id })).status).toBe(404);
  });

  it('maps storage failures to the spec reasons as 400', async () => {
    const bad = async (overrides: Record<string, unknown>, credentials?: unknown) =>
      (await api('POST', '/bulk-exports/destinations', { body: destinationBody(overrides, credentials) })).body;
    expect(await bad({}, { access_key_id: 'NOPE', secret_access_key: 'S3RVER' })).toEqual({ detail: 'Failed to validate S3 destination: Key ID you provided does not exist' });
    expect(await bad({ bucket_name: 'no-such-bucket' })).toEqual({ detail: 'Failed to validate S3 destination: Bucket is not valid' });
    expect(await bad({ endpoint_url: 'http://127.0.0.1:1' })).toEqual({ detail: 'Failed to validate S3 destination: Invalid endpoint' });
    const status = (await api('POST', '/bulk-exports/destinations', { body: destinationBody({ bucket_name: 'no-such-bucket' }) })).status;
    expect(status).toBe(400);
  });

  it('rotates credentials, validating them again', async () => {
    const id = await createDestination();
    const rejected = await api('PATCH', `/bulk-exports/destinations/${id}`, { body: { credentials: { access_key_id: 'NOPE', secret_access_key: 'x' } } });
    expect(rejected).toEqual({ status: 400, body: { detail: 'Failed to validate S3 destination: Key ID you provided does not exist' } });
    const before = await platform.deps.db.prisma.exportDestination.findUniqueOrThrow({ where: { id } });
    const rotated = await api('PATCH', `/bulk-exports/destinations/${id}`, { body: { credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER', session_token: 'tok' } } });
    expect(rotated.status).toBe(200);
    const after = await platform.deps.db.prisma.exportDestination.findUniqueOrThrow({ where: { id } });
    expect(after.credentials).not.toBe(before.credentials);
    expect(JSON.parse(platform.deps.secrets.decrypt(after.credentials!))).toMatchObject({ session_token: 'tok' });
  });
});

describe('exports', () => {
  it('exports several days as v2_beta (zstandard): exact rows per day, source values and types, no duplicates, the Hive path', async () => {
    const destination = await createDestination();
    const id = await runExport({ bulk_export_destination_id: destination, format_version: 'v2_beta', compression: 'zstandard' });

    const runs = await api('GET', `/bulk-exports/${id}/runs`);
    expect(runs.body).toHaveLength(3);
    const files: string[] = runs.body.flatMap((run: any) => run.metadata.result.exported_files);
    const keys = await listKeys(s3.client, BUCKET, `traces/prod/export_id=${id}/`);
    expect(keys.sort()).toEqual([...files].sort());
    for (const key of keys) {
      expect(key).toMatch(
        new RegExp(`^traces/prod/export_id=${id}/tenant_id=${tenant.workspace.id}/session_id=${sessionId}/runs/year=2026/month=03/day=0[123]/[^/]+\\.parquet$`),
      );
    }
    for (const run of runs.body) {
      const day = run.start_time.slice(0, 10) as keyof typeof PER_DAY;
      expect(run).toMatchObject({ status: 'Completed', errors: {} });
      expect(run.metadata.result.rows_written).toBe(PER_DAY[day]);
    }
    // Files rolled at the (tiny) configured size: more files than days.
    expect(files.length).toBeGreaterThan(runs.body.length);
    const single = await api('GET', `/bulk-exports/${id}/runs/${runs.body[0].id}`);
    expect(single.body.id).toBe(runs.body[0].id);

    const reader = await readParquet(s3.client, BUCKET, keys);
    try {
      const types = Object.fromEntries((await reader.query('DESCRIBE SELECT * FROM FILES')).map((row) => [row.column_name, row.column_type]));
      expect(types).toMatchObject({
        id: 'VARCHAR',
        start_time: 'TIMESTAMP WITH TIME ZONE',
        end_time: 'TIMESTAMP WITH TIME ZONE',
        first_token_time: 'TIMESTAMP WITH TIME ZONE',
        tags: 'VARCHAR[]',
        parent_run_ids: 'VARCHAR[]',
        is_root: 'BOOLEAN',
        inputs: 'VARCHAR',
        total_tokens: 'BIGINT',
        total_cost: 'DOUBLE',
      });
      expect(Object.keys(types)).toHaveLength(29);
      const perDay = await reader.query(`SELECT strftime(start_time AT TIME ZONE 'UTC', '%Y-%m-%d') AS day, count(*)::int AS n, count(DISTINCT id)::int AS ids FROM FILES GROUP BY 1 ORDER BY 1`);
      expect(perDay).toEqual(Object.entries(PER_DAY).map(([day, n]) => ({ day, n, ids: n })));

      const exported = await reader.query(
        `SELECT id, tenant_id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type, epoch_us(start_time)::varchar AS start_us,
                epoch_us(end_time)::varchar AS end_us, status, is_root, dotted_order, inputs, outputs, error, extra, tags,
                total_tokens::int AS total_tokens, prompt_tokens::int AS prompt_tokens, total_cost FROM FILES ORDER BY id`,
      );
      const source = (await sourceRows()).map(({ day: _day, ...row }) => row);
      expect(exported).toEqual(source);
      expect(source.some((row) => row.error === 'boom' && row.outputs === null)).toBe(true);
    } finally {
      reader.close();
    }
  });

  it('writes v1 (runs/<date>, ISO timestamps) with only export_fields, narrowed by a filter (gzip by default)', async () => {
    const destination = await createDestination({ prefix: '', include_bucket_in_prefix: true });
    const id = await runExport({
      bulk_export_destination_id: destination,
      export_fields: ['id', 'name', 'start_time', 'tags', 'total_tokens'],
      filter: 'eq(run_type, "llm")',
    });
    const keys = await listKeys(s3.client, BUCKET, `${BUCKET}/export_id=${id}/`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatch(new RegExp(`^${BUCKET}/export_id=${id}/tenant_id=[^/]+/session_id=[^/]+/runs/2026-03-0[123]/[^/]+\\.parquet$`));
    const reader = await readParquet(s3.client, BUCKET, keys);
    try {
      const columns = await reader.query('DESCRIBE SELECT * FROM FILES');
      expect(columns.map((row) => [row.column_name, row.column_type])).toEqual([
        ['id', 'VARCHAR'],
        ['name', 'VARCHAR'],
        ['start_time', 'VARCHAR'],
        ['tags', 'VARCHAR'],
        ['total_tokens', 'BIGINT'],
      ]);
      const codecs = await reader.query(`SELECT DISTINCT compression FROM parquet_metadata([${keys.map((key) => `'${reader.folder}/${key}'`).join(',')}])`);
      expect(codecs).toEqual([{ compression: 'GZIP' }]);
      const exported = await reader.query('SELECT id, start_time, tags FROM FILES ORDER BY id');
      const source = await sourceRows(`run_type = 'llm'`);
      expect(exported).toEqual(
        source.map((row) => ({ id: row.id, start_time: new Date(Number(BigInt(row.start_us) / 1000n)).toISOString().replace('Z', `${row.start_us.slice(-3)}Z`), tags: JSON.stringify(row.tags) })),
      );
    } finally {
      reader.close();
    }
  });

  it.each([
    ['snappy', 'SNAPPY'],
    ['none', 'UNCOMPRESSED'],
    ['zstandard', 'ZSTD'],
    ['gzip', 'GZIP'],
  ])('writes %s compression', async (compression, codec) => {
    const destination = await createDestination();
    const id = await runExport({ bulk_export_destination_id: destination, compression, end_time: '2026-03-02T00:00:00Z', format_version: 'v2_beta' });
    const keys = await listKeys(s3.client, BUCKET, `traces/prod/export_id=${id}/`);
    const reader = await readParquet(s3.client, BUCKET, keys);
    try {
      const codecs = await reader.query(`SELECT DISTINCT compression FROM parquet_metadata([${keys.map((key) => `'${reader.folder}/${key}'`).join(',')}])`);
      expect(codecs).toEqual([{ compression: codec }]);
      expect(await reader.query('SELECT count(*)::int AS n FROM FILES')).toEqual([{ n: PER_DAY['2026-03-01'] }]);
    } finally {
      reader.close();
    }
  });

  it('lists and gets exports of the workspace only, with TitleCase statuses', async () => {
    const destination = await createDestination();
    const id = await runExport({ bulk_export_destination_id: destination, end_time: '2026-03-01T06:00:00Z' });
    const listed = await api('GET', '/bulk-exports');
    expect(listed.body.find((row: any) => row.id === id)).toMatchObject({ status: 'Completed', created_at: expect.any(String) });
    expect((await api('GET', `/bulk-exports/${id}`)).body).toMatchObject({ id, status: 'Completed', session_id: sessionId });
    const foreign = { key: other.adminKey, tenant: other.workspace.id };
    expect((await api('GET', `/bulk-exports/${id}`, foreign)).status).toBe(404);
    expect((await api('GET', `/bulk-exports/${id}/runs`, foreign)).status).toBe(404);
    expect((await api('PATCH', `/bulk-exports/${id}`, { ...foreign, body: { status: 'Cancelled' } })).status).toBe(404);
    expect((await api('GET', '/bulk-exports', foreign)).body.map((row: any) => row.id)).not.toContain(id);
  });

  it('cancels a one-off export: its runs never start or stop, and it cannot be restarted', async () => {
    const destination = await createDestination();
    // Runs wait while a tenant's exports are at their limit; this export's runs are pending.
    const created = await api('POST', '/bulk-exports', {
      body: { bulk_export_destination_id: destination, session_id: sessionId, start_time: '2026-03-01T00:00:00Z', end_time: '2026-03-04T00:00:00Z' },
    });
    const cancelled = await api('PATCH', `/bulk-exports/${created.body.id}`, { body: { status: 'cancelled' } });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('Cancelled');
    const finished = await waitForExport(platform.deps, created.body.id);
    expect(finished.status).toBe('Cancelled');
    expect(finished.runs.every((run) => run.status === 'Cancelled' || run.status === 'Completed')).toBe(true);
    const again = await api('PATCH', `/bulk-exports/${created.body.id}`, { body: { status: 'Cancelled' } });
    expect(again.status).toBe(400);
  });
});

describe('bad input', () => {
  it('answers every route with a 4xx in the FastAPI dialect', async () => {
    const destination = await createDestination();
    const base = { bulk_export_destination_id: destination, session_id: sessionId, start_time: '2026-03-01T00:00:00Z' };
    const post = async (body: unknown) => api('POST', '/bulk-exports', { body });
    expect((await post({ ...base, interval_hours: 0 })).status).toBe(422);
    expect((await post({ ...base, interval_hours: 169 })).status).toBe(422);
    expect((await post({ ...base, interval_hours: 1.5 })).status).toBe(422);
    expect((await post({ ...base, interval_hours: 24, end_time: '2026-03-02T00:00:00Z' })).status).toBe(422);
    expect((await post({ ...base, end_time: '2026-02-01T00:00:00Z' })).status).toBe(422);
    expect((await post(base)).status).toBe(422);
    const unknownField = await post({ ...base, end_time: '2026-03-02T00:00:00Z', export_fields: ['id', 'password'] });
    expect(unknownField.status).toBe(422);
    expect(JSON.stringify(unknownField.body.detail)).toContain('password');
    expect((await post({ ...base, end_time: '2026-03-02T00:00:00Z', format_version: 'v3' })).status).toBe(422);
    expect((await post({ ...base, end_time: '2026-03-02T00:00:00Z', compression: 'lz4' })).status).toBe(422);
    expect((await post({ ...base, end_time: 'yesterday' })).status).toBe(422);
    const malformed = await post({ ...base, end_time: '2026-03-02T00:00:00Z', filter: 'eq(run_type, ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.detail).toEqual(expect.any(String));

    // Another workspace's project or destination: 404.
    const { sessionId: otherSession } = await ingestFixtureTraces(platform.deps, other.workspace.id, 'other-project', { '2026-03-01': 2 });
    const otherDestination = await createDestination({}, { key: other.adminKey, tenant: other.workspace.id });
    expect((await post({ ...base, end_time: '2026-03-02T00:00:00Z', session_id: otherSession })).status).toBe(404);
    expect((await post({ ...base, end_time: '2026-03-02T00:00:00Z', bulk_export_destination_id: otherDestination })).status).toBe(404);

    const destinationPost = async (body: unknown) => api('POST', '/bulk-exports/destinations', { body });
    expect((await destinationPost(destinationBody({ endpoint_url: 'ftp://127.0.0.1/' }))).status).toBe(422);
    expect((await destinationPost(destinationBody({ endpoint_url: 'not a url' }))).status).toBe(422);
    expect((await destinationPost(destinationBody({}, { access_key_id: 12, secret_access_key: 'S3RVER' }))).status).toBe(422);
    expect((await destinationPost(destinationBody({}, { access_key_id: 'S3RVER', secret_access_key: ['x'] }))).status).toBe(422);
    expect((await destinationPost({ ...destinationBody(), destination_type: 'gcs' })).status).toBe(422);
    expect((await destinationPost({ display_name: 'x' })).status).toBe(422);
    expect((await api('PATCH', `/bulk-exports/destinations/${destination}`, { body: { credentials: { access_key_id: 1 } } })).status).toBe(422);

    expect((await api('PATCH', `/bulk-exports/${randomId()}`, { body: { status: 'Cancelled' } })).status).toBe(404);
    expect((await api('GET', '/bulk-exports/not-a-uuid')).status).toBe(404);
    expect((await api('GET', `/bulk-exports/destinations/${randomId()}`)).status).toBe(404);
    const exportId = (await post({ ...base, end_time: '2026-03-01T01:00:00Z' })).body.id;
    expect((await api('PATCH', `/bulk-exports/${exportId}`, { body: { status: 'Running' } })).status).toBe(422);
    expect((await api('GET', `/bulk-exports/${exportId}/runs/${randomId()}`)).status).toBe(404);
    expect((await api('GET', '/bulk-exports', { tenant: null })).status).toBe(400);
    expect((await api('GET', '/bulk-exports', { key: 'apk_nope' })).status).toBe(401);
    expect((await api('POST', '/bulk-exports', { key: tenant.viewerKey, body: { ...base, end_time: '2026-03-02T00:00:00Z' } })).status).toBe(403);
    await waitForExport(platform.deps, exportId);
  });

  it('refuses organizations on the free plan with 403', async () => {
    const free = await buildTenant(platform.system, { planTier: 'free' });
    const options = { key: free.adminKey, tenant: free.workspace.id };
    expect(await api('POST', '/bulk-exports/destinations', { ...options, body: destinationBody() })).toMatchObject({ status: 403, body: { detail: expect.stringContaining('Plus') } });
    expect((await api('GET', '/bulk-exports', options)).status).toBe(403);
    expect((await api('POST', '/bulk-exports', { ...options, body: {} })).status).toBe(403);
  });
});

const randomId = () => crypto.randomUUID();
