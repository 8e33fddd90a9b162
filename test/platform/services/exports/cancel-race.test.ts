// Cancelling an export while a worker's dispatcher is starting its runs: both write the export and its
// runs in one transaction each. The cancel must win whole (200, every run Cancelled), never fail with a
// deadlock (a 500 to the caller) nor have the dispatcher turn a cancelled run back to Running.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDestination } from '../../../../src/platform/services/exports/destinations.service.js';
import { createExport, updateExport } from '../../../../src/platform/services/exports/exports.service.js';
import { claimRunsToStart, listRuns } from '../../../../src/platform/services/exports/exports.store.js';
import type { ServiceContext } from '../../../../src/context.js';
import { authenticateApiKey } from '../../../../src/platform/services/tenancy/authentication.service.js';
import { buildTenant } from '../../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../../support/helpers.js';
import { ingestFixtureTraces, type S3Server, startS3, takeTurnWithExportWorkers } from '../../../support/exports.js';

// The dispatcher claims waiting runs of the whole test database: no other file's export workers meanwhile.
takeTurnWithExportWorkers();

let s3: S3Server;
let platform: TestPlatform;
let ctx: ServiceContext;
let start: (days: number) => Promise<string>;
beforeAll(async () => {
  s3 = await startS3();
  // No workers: the test plays the dispatcher itself, at the moment the cancel arrives.
  platform = await startTestPlatform({ jobs: false });
  const tenant = await buildTenant(platform.system, { planTier: 'plus' });
  ctx = { ...platform.deps, viewer: await authenticateApiKey(platform.deps, tenant.adminKey, tenant.workspace.id) };
  const { sessionId } = await ingestFixtureTraces(platform.deps, tenant.workspace.id, 'race', { '2026-03-01': 1 });
  await s3.createBucket('cancel-race');
  const destination = await createDestination(ctx, {
    destination_type: 's3',
    display_name: 'race',
    config: { bucket_name: 'cancel-race', endpoint_url: s3.endpoint },
    credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
  });
  start = async (days) => {
    const end = new Date(Date.UTC(2026, 2, 1 + days)).toISOString();
    const created = await createExport(ctx, { bulk_export_destination_id: destination.id, session_id: sessionId, start_time: '2026-03-01T00:00:00Z', end_time: end });
    return created.id;
  };
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  await s3?.stop();
});

it('cancels an export whose runs a dispatcher is starting at that moment: 200, and every run ends Cancelled', async () => {
  const limits = { runsPerExport: 1000, exportsPerWorkspace: 1000 };
  for (let attempt = 0; attempt < 25; attempt++) {
    const id = await start(20);
    const [cancelled] = await Promise.all([updateExport(ctx, id, { status: 'Cancelled' }), claimRunsToStart(platform.deps.db.pool, limits)]);
    expect(cancelled.status).toBe('Cancelled');
    const runs = await listRuns(platform.deps.db, id);
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'Cancelled'));
  }
}, 120_000);
