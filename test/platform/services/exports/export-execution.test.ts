// Export execution under shrunken limits, against s3rver: a destination whose bucket was deleted fails the export
// without retry; run timeouts are retried with the configured delay until the retries run out; the
// export timeout ends in TimedOut; concurrency stays within the limits per export and per workspace;
// scheduled exports spawn one child per window under a controlled clock, and cancelling one stops it.
import { DeleteBucketCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDestination } from '../../../../src/platform/services/exports/destinations.service.js';
import { createExport, spawnScheduledExports, updateExport } from '../../../../src/platform/services/exports/exports.service.js';
import type { ServiceContext } from '../../../../src/context.js';
import { authenticateApiKey } from '../../../../src/platform/services/tenancy/authentication.service.js';
import { buildTenant } from '../../../support/factories.js';
import { startTestPlatform } from '../../../support/helpers.js';
import { ingestFixtureTraces, listKeys, type S3Server, startS3, waitForExport, takeTurnWithExportWorkers } from '../../../support/exports.js';

takeTurnWithExportWorkers();

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(() => s3?.stop());

/** A platform (with workers when `jobs`) and a Plus tenant with fixture traces, acting through the services as its admin key. */
async function setUp(config: Record<string, string>, options: { jobs?: boolean; perDay?: Record<string, number> } = {}) {
  const platform = await startTestPlatform({ jobs: options.jobs ?? true, config: { AGENT_PLATFORM_EXPORT_SWEEP_SECONDS: '0.5', ...config } });
  const tenant = await buildTenant(platform.system, { planTier: 'plus' });
  const viewer = await authenticateApiKey(platform.deps, tenant.adminKey, tenant.workspace.id);
  const ctx: ServiceContext = { ...platform.deps, viewer };
  const { sessionId, runCount } = await ingestFixtureTraces(platform.deps, tenant.workspace.id, 'fixtures', options.perDay ?? { '2026-03-01': 40, '2026-03-02': 40 });
  const bucket = `b-${tenant.workspace.id.slice(-12)}`;
  await s3.createBucket(bucket);
  const destination = await createDestination(ctx, {
    destination_type: 's3',
    display_name: 'test',
    config: { bucket_name: bucket, endpoint_url: s3.endpoint, prefix: 'p' },
    credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
  });
  const exportRange = (start: string, end: string | null, extra: Record<string, unknown> = {}) =>
    createExport(ctx, { bulk_export_destination_id: destination.id, session_id: sessionId, start_time: start, ...(end ? { end_time: end } : {}), ...extra });
  return { platform, tenant, ctx, sessionId, runCount, bucket, destination, exportRange };
}

describe('storage failures', () => {
  let env: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    env = await setUp(
      {
        AGENT_PLATFORM_EXPORT_BATCH_ROWS: '2',
        AGENT_PLATFORM_EXPORT_FILE_SIZE: '1b',
        AGENT_PLATFORM_EXPORT_WORKER_CONCURRENCY: '1',
        // s3rver may leave a request to a bucket deleted under it unanswered: that one times out and is retried.
        AGENT_PLATFORM_EXPORT_S3_TIMEOUT_SECONDS: '2',
        AGENT_PLATFORM_EXPORT_RETRY_DELAY_SECONDS: '1',
      },
      { perDay: { '2026-03-01': 200, '2026-03-02': 200 } },
    );
  }, 120_000);
  afterAll(() => env?.platform.stop());

  it('cancels a running export: its running runs stop, the waiting ones never start, no restart', async () => {
    const created = await env.exportRange('2026-03-01T00:00:00Z', '2026-03-03T00:00:00Z');
    const running = await waitForExport(env.platform.deps, created.id, (row) => row.runs.some((run) => ((run.metadata as any).result?.exported_files?.length ?? 0) > 0));
    expect(running.status).toBe('Running');
    expect((await updateExport(env.ctx, created.id, { status: 'Cancelled' })).status).toBe('Cancelled');
    const finished = await waitForExport(env.platform.deps, created.id);
    expect(finished.status).toBe('Cancelled');
    expect(finished.runs.map((run) => run.status)).toEqual(['Cancelled', 'Cancelled']);
    const written = finished.runs.reduce((sum, run) => sum + ((run.metadata as any).result?.rows_written ?? 0), 0);
    expect(written).toBeLessThan(400);
    await expect(updateExport(env.ctx, created.id, { status: 'Cancelled' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('fails an export whose bucket was deleted after its destination was created, without retrying, with the error recorded', async () => {
    // The bucket goes away before the export starts. It is a bucket of its own: the cancelled export of the
    // test before may still be finishing a write to the shared one. (Deleting it while files are being
    // written races with the export, and s3rver itself fails on a multipart upload whose bucket vanished
    // under it, so the deterministic form of the storage error is tested.)
    const bucket = `${env.bucket}-gone`;
    await s3.createBucket(bucket);
    const destination = await createDestination(env.ctx, {
      destination_type: 's3',
      display_name: 'soon gone',
      config: { bucket_name: bucket, endpoint_url: s3.endpoint, prefix: 'p' },
      credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
    });
    for (const key of await listKeys(s3.client, bucket)) await s3.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    await s3.client.send(new DeleteBucketCommand({ Bucket: bucket }));
    const created = await env.exportRange('2026-03-01T00:00:00Z', '2026-03-03T00:00:00Z', { bulk_export_destination_id: destination.id });
    const finished = await waitForExport(env.platform.deps, created.id);
    expect(finished.status).toBe('Failed');
    const failed = finished.runs.filter((run) => run.status === 'Failed');
    expect(failed).toHaveLength(1);
    // The storage error ended the run at once: it is the last error recorded, with no attempt after it.
    const { retryNumber, errors } = failed[0]! as { retryNumber: number; errors: Record<string, string> };
    expect(Object.keys(errors)).toHaveLength(retryNumber + 1);
    expect(errors[`retry_${retryNumber}`]).toContain('Bucket is not valid');
    // The other day never completes after the export failed.
    expect(finished.runs.every((run) => run.status === 'Failed' || run.status === 'Cancelled' || run.status === 'Completed')).toBe(true);
  });
});

describe('retries and timeouts', () => {
  let env: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    env = await setUp(
      {
        // Every attempt times out after a batch or two: the run can never finish.
        AGENT_PLATFORM_EXPORT_RUN_TIMEOUT_SECONDS: '0.001',
        AGENT_PLATFORM_EXPORT_RETRIES: '2',
        AGENT_PLATFORM_EXPORT_RETRY_DELAY_SECONDS: '1',
        AGENT_PLATFORM_EXPORT_BATCH_ROWS: '2',
      },
      { perDay: { '2026-03-01': 200 } },
    );
  }, 120_000);
  afterAll(() => env?.platform.stop());

  it('retries a timed-out run with the configured delay, records each error, and fails the export when retries run out', async () => {
    const created = await env.exportRange('2026-03-01T00:00:00Z', '2026-03-02T00:00:00Z');
    const finished = await waitForExport(env.platform.deps, created.id);
    expect(finished.status).toBe('Failed');
    const [run] = finished.runs;
    expect(run!.status).toBe('Failed');
    expect(run!.retryNumber).toBe(2);
    expect(run!.errors).toEqual({
      retry_0: 'Run timed out after 0.001 s',
      retry_1: 'Run timed out after 0.001 s',
      retry_2: 'Run timed out after 0.001 s',
    });
    // Three attempts, at least the retry delay apart.
    expect(run!.finishedAt!.getTime() - run!.startedAt!.getTime()).toBeGreaterThanOrEqual(2000);
    // Three attempts through the job queue's polling: room for a loaded machine (about 6 s when quiet).
  }, 90_000);

  it('times out an export older than the export timeout (TimedOut, not retried)', async () => {
    const created = await env.exportRange('2026-03-01T00:00:00Z', '2026-03-02T00:00:00Z');
    // The clock: the export was created 73 hours ago.
    await env.platform.deps.db.pool.query(`UPDATE bulk_exports SET created_at = now() - interval '73 hours' WHERE id = $1`, [created.id]);
    const finished = await waitForExport(env.platform.deps, created.id);
    expect(finished.status).toBe('TimedOut');
    expect(finished.runs.every((run) => run.status === 'TimedOut')).toBe(true);
  });
});

describe('concurrency', () => {
  let env: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    env = await setUp(
      { AGENT_PLATFORM_EXPORT_RUNS_PER_EXPORT: '2', AGENT_PLATFORM_EXPORT_EXPORTS_PER_WORKSPACE: '1', AGENT_PLATFORM_EXPORT_WORKER_CONCURRENCY: '4', AGENT_PLATFORM_EXPORT_BATCH_ROWS: '4' },
      { perDay: { '2026-03-01': 16, '2026-03-02': 16, '2026-03-03': 16, '2026-03-04': 16 } },
    );
  }, 120_000);
  afterAll(() => env?.platform.stop());

  it('runs at most 2 runs per export and 1 export per workspace at a time; the rest wait and then complete', async () => {
    const first = await env.exportRange('2026-03-01T00:00:00Z', '2026-03-05T00:00:00Z');
    const second = await env.exportRange('2026-03-01T00:00:00Z', '2026-03-05T00:00:00Z');
    const done = [await waitForExport(env.platform.deps, first.id), await waitForExport(env.platform.deps, second.id)];
    expect(done.map((row) => row.status)).toEqual(['Completed', 'Completed']);
    const maxOverlap = (runs: { startedAt: Date | null; finishedAt: Date | null }[]) => {
      const edges = runs.flatMap((run) => [
        { at: run.startedAt!.getTime(), delta: 1 },
        { at: run.finishedAt!.getTime(), delta: -1 },
      ]);
      edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
      let open = 0;
      let max = 0;
      for (const edge of edges) max = Math.max(max, (open += edge.delta));
      return max;
    };
    for (const row of done) {
      expect(row.runs).toHaveLength(4);
      expect(maxOverlap(row.runs)).toBeLessThanOrEqual(2);
    }
    // One export at a time in the workspace: the second's runs started after the first's finished.
    const [a, b] = done as [(typeof done)[0], (typeof done)[0]];
    const lastFinish = Math.max(...a.runs.map((run) => run.finishedAt!.getTime()));
    const firstStart = Math.min(...b.runs.map((run) => run.startedAt!.getTime()));
    expect(firstStart).toBeGreaterThanOrEqual(lastFinish);
  });
});

describe('scheduled exports', () => {
  let env: Awaited<ReturnType<typeof setUp>>;
  // No workers here: the test drives the schedule with its own clock.
  beforeAll(async () => {
    env = await setUp({}, { jobs: false, perDay: { '2026-03-01': 2 } });
  }, 120_000);
  afterAll(() => env?.platform.stop());

  it('spawns one child export per 1-hour window, 10 minutes after each window ends, until cancelled', async () => {
    // A start in the future, so no real worker's clock reaches it during the test run.
    const start = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 48 * 3_600_000);
    const at = (minutes: number) => new Date(start.getTime() + minutes * 60_000);
    const parent = await env.exportRange(start.toISOString(), null, { interval_hours: 1 });
    expect(parent.status).toBe('IntervalScheduled');

    expect(await spawnScheduledExports(env.platform.deps, at(69))).toEqual([]);
    const firstTwo = await spawnScheduledExports(env.platform.deps, at(130));
    expect(firstTwo).toHaveLength(2);
    expect(await spawnScheduledExports(env.platform.deps, at(130))).toEqual([]);
    const third = await spawnScheduledExports(env.platform.deps, at(190));
    expect(third).toHaveLength(1);

    const children = await env.platform.deps.db.prisma.bulkExport.findMany({ where: { sourceBulkExportId: parent.id }, orderBy: { startTime: 'asc' } });
    expect(children.map((child) => [child.startTime.toISOString(), child.endTime!.toISOString(), child.status])).toEqual([
      [at(0).toISOString(), at(60).toISOString(), 'Created'],
      [at(60).toISOString(), at(120).toISOString(), 'Created'],
      [at(120).toISOString(), at(180).toISOString(), 'Created'],
    ]);
    expect(children.every((child) => child.destinationId === parent.destinationId && child.sessionId === parent.sessionId)).toBe(true);

    // Cancelling the schedule stops spawning and leaves the spawned exports alone.
    const cancelled = await updateExport(env.ctx, parent.id, { status: 'Cancelled' });
    expect(cancelled.status).toBe('Cancelled');
    expect(await spawnScheduledExports(env.platform.deps, at(600))).toEqual([]);
    const after = await env.platform.deps.db.prisma.bulkExport.findMany({ where: { sourceBulkExportId: parent.id } });
    expect(after.map((child) => child.status)).toEqual(['Created', 'Created', 'Created']);
    // Spawned exports are cancelled separately.
    for (const child of after) await updateExport(env.ctx, child.id, { status: 'Cancelled' });
  });
});
