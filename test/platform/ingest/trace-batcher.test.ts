// The runtime's trace batcher: runs hand it their traces and go on; it stores them with ingest's
// multi-row path, in order (a run's end after its start), makes runs wait when it is full instead of
// dropping, and stores what is queued when it is closed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import type { ServiceContext } from '../../../src/context.js';
import { ensureProject } from '../../../src/platform/services/traces/projects.service.js';
import { queryRuns } from '../../../src/platform/services/traces/queries.service.js';
import { TraceBatcher } from '../../../src/platform/ingest/trace-batcher.js';
import { startTenantPlatform, type Tenant, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Tenant;
let ctx: ServiceContext;

beforeAll(async () => {
  ({ platform, tenant, ctx } = await startTenantPlatform());
});
afterAll(() => platform?.stop());

const who = () => ({ workspaceId: tenant.workspace.id });
const post = (project: string, id: string, name: string) => ({ id, trace_id: id, name, run_type: 'chain', session_name: project, start_time: new Date().toISOString(), inputs: {} });
const end = (project: string, id: string) => ({ id, trace_id: id, session_name: project, end_time: new Date().toISOString(), outputs: { done: true } });

async function storedRuns(project: string) {
  const { id } = await ensureProject(ctx, project);
  return (await queryRuns(ctx, { session: [id], limit: 100 })).runs;
}

describe('trace batcher', () => {
  it('makes runs wait for room when full, stores every trace in order, and stores what is queued on close', async () => {
    const project = `batcher-${newId().slice(-8)}`;
    // Never on the interval: only a full batch or close writes.
    const batcher = new TraceBatcher(platform.deps, { capacity: 4, flushIntervalMs: 60_000 });
    const ids = Array.from({ length: 12 }, () => newId());
    // Each run posts its start, then its end separately (the end is a patch of a stored run).
    await Promise.all(ids.map((id, i) => batcher.add(who(), { post: [post(project, id, `run-${i}`)] }).then(() => batcher.add(who(), { patch: [end(project, id)] }))));
    const stats = batcher.stats();
    expect(stats.backpressureWaits).toBeGreaterThan(0);
    expect(stats.queued).toBeGreaterThan(0); // the last ones are being written or wait for close
    expect(stats.queued).toBeLessThanOrEqual(4);

    await batcher.close();
    expect(batcher.stats()).toMatchObject({ queued: 0, flushed: 24, failed: 0 });
    const runs = await storedRuns(project);
    expect(runs.map((run) => run.id).sort()).toEqual([...ids].sort());
    expect(runs.every((run) => run.status === 'success' && run.endTime)).toBe(true);
  });

  it('gathers the traces that arrive during a write into the next batch, not one write each', async () => {
    const project = `batcher-${newId().slice(-8)}`;
    const batcher = new TraceBatcher(platform.deps, { capacity: 100, flushIntervalMs: 60_000, maxBatch: 4 });
    const ids = Array.from({ length: 7 }, () => newId());
    const finished = (id: string, i: number) => ({ post: [{ ...post(project, id, `run-${i}`), ...end(project, id) }] });
    // A batch's worth starts a write; the next three arrive while it is under way.
    for (const [i, id] of ids.entries()) await batcher.add(who(), finished(id, i));
    expect(batcher.stats().writes).toBe(1);
    await batcher.flush();
    expect(batcher.stats()).toMatchObject({ queued: 0, flushed: 7, writes: 2, failed: 0 });
    expect((await storedRuns(project)).map((run) => run.id).sort()).toEqual([...ids].sort());
    await batcher.close();
  });

  it('stores a queued trace within the flush interval without anyone waiting for it', async () => {
    const project = `batcher-${newId().slice(-8)}`;
    const batcher = new TraceBatcher(platform.deps, { capacity: 100, flushIntervalMs: 20 });
    const id = newId();
    await batcher.add(who(), { post: [{ ...post(project, id, 'quick'), ...end(project, id) }] });
    expect(batcher.stats().queued).toBe(1);
    for (let i = 0; i < 100 && batcher.stats().queued; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await storedRuns(project)).map((run) => run.id)).toEqual([id]);
    await batcher.close();
  });

  it('loses only the run ingest refuses, not the runs batched with it', async () => {
    const project = `batcher-${newId().slice(-8)}`;
    const batcher = new TraceBatcher(platform.deps, { capacity: 100, flushIntervalMs: 60_000 });
    const good = newId();
    await batcher.add(who(), { post: [{ ...post(project, good, 'good'), ...end(project, good) }] });
    await batcher.add(who(), { post: [{ id: newId(), name: 'bad', run_type: 'not-a-run-type', session_name: project }] });
    await batcher.close();
    expect(batcher.stats()).toMatchObject({ flushed: 2, failed: 1 });
    expect((await storedRuns(project)).map((run) => run.id)).toEqual([good]);
  });
});
