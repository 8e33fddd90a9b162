// Resume: a worker process executing an export run is killed (SIGKILL) right after its first file is
// checkpointed; another worker takes the run over once its lease lapses and finishes it from the
// checkpoint: exact row count, no duplicate id, the first worker's files kept.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDestination } from '../../../../src/platform/services/exports/destinations.service.js';
import { createExport } from '../../../../src/platform/services/exports/exports.service.js';
import type { RunResult } from '../../../../src/platform/services/exports/exports.store.js';
import { authenticateApiKey } from '../../../../src/platform/services/tenancy/authentication.service.js';
import type { Boss } from '../../../../src/queues.js';
import { startPlatformJobs } from '../../../../src/platform/jobs/platform-jobs.js';
import { buildTenant } from '../../../support/factories.js';
import { databaseUrl, startTestPlatform, type TestPlatform } from '../../../support/helpers.js';
import { spawnPlatform } from '../../../support/processes.js';
import { ingestFixtureTraces, listKeys, readParquet, type S3Server, startS3, waitForExport, takeTurnWithExportWorkers } from '../../../support/exports.js';

takeTurnWithExportWorkers();

const secretKey = randomBytes(32).toString('base64');
const exportLimits = {
  AGENT_PLATFORM_EXPORT_BATCH_ROWS: '4',
  AGENT_PLATFORM_EXPORT_FILE_SIZE: '1b',
  AGENT_PLATFORM_EXPORT_LEASE_SECONDS: '2',
  AGENT_PLATFORM_EXPORT_SWEEP_SECONDS: '0.5',
  AGENT_PLATFORM_EXPORT_WORKER_CONCURRENCY: '1',
};
let s3: S3Server;
let platform: TestPlatform;
let boss: Boss | undefined;

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('resume');
  // The API role only: the first worker is a separate process.
  platform = await startTestPlatform({ config: { AGENT_PLATFORM_SECRET_KEY: secretKey, ...exportLimits } });
});
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await platform?.stop();
  await s3?.stop();
});

it('finishes a run whose worker was killed after its first file, from its checkpoint, with no duplicate', async () => {
  const tenant = await buildTenant(platform.system, { planTier: 'enterprise' });
  const ctx = { ...platform.deps, viewer: await authenticateApiKey(platform.deps, tenant.adminKey, tenant.workspace.id) };
  const { sessionId, runCount } = await ingestFixtureTraces(platform.deps, tenant.workspace.id, 'resume', { '2026-03-01': 240 });
  const destination = await createDestination(ctx, {
    destination_type: 's3',
    display_name: 'resume',
    config: { bucket_name: 'resume', endpoint_url: s3.endpoint },
    credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
  });

  const worker = await spawnPlatform(['start', '--role', 'api,worker', '--port', '0'], {
    DATABASE_URL: databaseUrl(),
    AGENT_PLATFORM_DATA_DIR: inject('dataDir'),
    AGENT_PLATFORM_SECRET_KEY: secretKey,
    AGENT_PLATFORM_INGEST_THREADS: '0',
    ...exportLimits,
  });
  let firstFiles: string[];
  let created;
  try {
    created = await createExport(ctx, { bulk_export_destination_id: destination.id, session_id: sessionId, start_time: '2026-03-01T00:00:00Z', end_time: '2026-03-02T00:00:00Z', format_version: 'v2_beta' });
    const progressed = await waitForExport(platform.deps, created.id, (row) => ((row.runs[0]?.metadata as { result?: RunResult }).result?.exported_files.length ?? 0) > 0);
    worker.child.kill('SIGKILL');
    firstFiles = (progressed.runs[0]!.metadata as { result: RunResult }).result.exported_files;
  } finally {
    await worker.stop('SIGKILL');
  }
  const atKill = await platform.deps.db.prisma.bulkExportRun.findFirstOrThrow({ where: { bulkExportId: created.id } });
  expect(atKill.status).toBe('Running');
  const checkpoint = (atKill.metadata as { result: RunResult }).result;
  expect(checkpoint.rows_written).toBeLessThan(runCount);

  // A second worker (this process) takes the run over when the dead worker's lease lapses.
  boss = await startPlatformJobs(platform.deps, { work: true });
  const finished = await waitForExport(platform.deps, created.id);
  expect(finished.status).toBe('Completed');
  const result = (finished.runs[0]!.metadata as { result: RunResult }).result;
  expect(result.rows_written).toBe(runCount);
  expect(result.exported_files.slice(0, firstFiles.length)).toEqual(firstFiles);
  expect(new Set(result.exported_files).size).toBe(result.exported_files.length);

  const keys = await listKeys(s3.client, 'resume', `export_id=${created.id}/`);
  expect(keys.sort()).toEqual([...result.exported_files].sort());
  const reader = await readParquet(s3.client, 'resume', keys);
  try {
    expect(await reader.query('SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids FROM FILES')).toEqual([{ n: runCount, ids: runCount }]);
  } finally {
    reader.close();
  }
}, 120_000);
