// Trace retention: the worker's retention pass deletes exactly the runs older than their workspace's
// retention (its own, else the configured default), with their attachments, and nothing else; whole
// week partitions are dropped once every workspace's retention has passed, only those, with their run
// ids; a run of a week without a partition lands in the default partition and moves into the week's
// partition when it is created.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTracePartitions, dropTracePartitionsBefore, listTracePartitions } from '../../../src/platform/services/traces/trace-partitions.store.js';
import { deleteAwaitedParentsBefore, deleteRunIdsBefore } from '../../../src/platform/services/traces/trace-retention.store.js';
import { insertClaimingIdsSql } from '../../../src/platform/ingest/ingest.store.js';
import { ingestRunBatch } from '../../../src/platform/ingest/ingest.service.js';
import { deleteExpiredTraceRuns } from '../../../src/platform/jobs/traces-retention.job.js';
import { buildOrganization, buildWorkspace } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform({ config: { AGENT_PLATFORM_TRACE_RETENTION_DAYS: '30' } });
}, 120_000);
afterAll(() => platform?.stop());

/** A project of a new workspace with runs that started `ages` days ago; returns the workspace and run ids by age. */
async function workspaceWithRuns(retentionDays: number | null, ages: number[]) {
  const organization = await buildOrganization(platform.system);
  const workspace = await buildWorkspace(platform.system, organization.id);
  const { pool } = platform.deps.db;
  await pool.query('UPDATE workspaces SET trace_retention_days = $2 WHERE id = $1', [workspace.id, retentionDays]);
  const projectId = randomUUID();
  await pool.query(`INSERT INTO tracing_projects (id, workspace_id, name, updated_at) VALUES ($1, $2, 'retention', now())`, [projectId, workspace.id]);
  const runs = new Map<number, string>();
  for (const age of ages) {
    const id = randomUUID();
    runs.set(age, id);
    await pool.query(
      insertClaimingIdsSql(`INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order, tags)
       VALUES ($1, $2, $3, $2, 'run', 'chain', now() - make_interval(days => $4), 'success', true, $5, '{}')`),
      [workspace.id, id, projectId, age, id],
    );
  }
  await pool.query(
    `INSERT INTO trace_run_attachments (tenant_id, run_id, name, content_type, data, size) SELECT $1, id, 'file', 'text/plain', '\\x00'::bytea, 1 FROM unnest($2::uuid[]) AS id`,
    [workspace.id, [...runs.values()]],
  );
  await pool.query(
    `INSERT INTO feedback (tenant_id, id, run_id, trace_id, session_id, key, score) SELECT $1, gen_random_uuid(), id, id, $3, 'k', 1 FROM unnest($2::uuid[]) AS id`,
    [workspace.id, [...runs.values()], projectId],
  );
  return { workspaceId: workspace.id, runs };
}

async function remaining(workspaceId: string) {
  const { pool } = platform.deps.db;
  const runs = await pool.query<{ id: string }>('SELECT id FROM trace_runs WHERE tenant_id = $1', [workspaceId]);
  const attachments = await pool.query<{ run_id: string }>('SELECT run_id FROM trace_run_attachments WHERE tenant_id = $1', [workspaceId]);
  const feedback = await pool.query<{ run_id: string }>('SELECT run_id FROM feedback WHERE tenant_id = $1', [workspaceId]);
  return { runs: runs.rows.map((row) => row.id).sort(), attachments: attachments.rows.map((row) => row.run_id).sort(), feedback: feedback.rows.map((row) => row.run_id).sort() };
}

it('deletes only runs past their workspace’s retention (or the default), with their attachments and feedback', async () => {
  const short = await workspaceWithRuns(7, [1, 6, 8, 40]);
  const byDefault = await workspaceWithRuns(null, [1, 8, 29, 31, 400]);
  const long = await workspaceWithRuns(365, [8, 40, 364]);

  // Only these workspaces: other test files share the database and may hold old runs.
  const mine = [short.workspaceId, byDefault.workspaceId, long.workspaceId];
  expect(await deleteExpiredTraceRuns(platform.deps, mine)).toEqual({ deleted: 4, droppedPartitions: [], busyPartitions: [] });

  const kept = (set: { runs: Map<number, string> }, ages: number[]) => ages.map((age) => set.runs.get(age)!).sort();
  expect(await remaining(short.workspaceId)).toEqual({ runs: kept(short, [1, 6]), attachments: kept(short, [1, 6]), feedback: kept(short, [1, 6]) });
  expect(await remaining(byDefault.workspaceId)).toEqual({ runs: kept(byDefault, [1, 8, 29]), attachments: kept(byDefault, [1, 8, 29]), feedback: kept(byDefault, [1, 8, 29]) });
  expect(await remaining(long.workspaceId)).toEqual({ runs: kept(long, [8, 40, 364]), attachments: kept(long, [8, 40, 364]), feedback: kept(long, [8, 40, 364]) });
  // The deleted runs' ids are released (trace_run_ids's delete trigger), so the id rule follows the runs.
  const { rows: ids } = await platform.deps.db.pool.query<{ id: string }>('SELECT id FROM trace_run_ids WHERE tenant_id = $1 ORDER BY id', [short.workspaceId]);
  expect(ids.map((row) => row.id)).toEqual(kept(short, [1, 6]));

  // A second pass finds nothing more of these workspaces.
  expect(await deleteExpiredTraceRuns(platform.deps, mine)).toEqual({ deleted: 0, droppedPartitions: [], busyPartitions: [] });
  expect((await remaining(short.workspaceId)).runs).toEqual(kept(short, [1, 6]));
});

/** Inserts one run of a new workspace's project per start time; returns the workspace and run ids. */
async function runsAt(startTimes: string[]) {
  const organization = await buildOrganization(platform.system);
  const workspace = await buildWorkspace(platform.system, organization.id);
  const { pool } = platform.deps.db;
  const projectId = randomUUID();
  await pool.query(`INSERT INTO tracing_projects (id, workspace_id, name, updated_at) VALUES ($1, $2, 'partitions', now())`, [projectId, workspace.id]);
  const ids = startTimes.map(() => randomUUID());
  const { rows } = await pool.query<{ stored: number }>(
    insertClaimingIdsSql(`INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order, tags)
     SELECT $1, id, $2, id, 'run', 'chain', start_time, 'success', true, id::text, '{}' FROM unnest($3::uuid[], $4::timestamptz[]) AS u(id, start_time)`),
    [workspace.id, projectId, ids, startTimes],
  );
  expect(rows[0]!.stored).toBe(ids.length);
  await pool.query(
    `INSERT INTO trace_run_attachments (tenant_id, run_id, name, content_type, data, size) SELECT $1, id, 'file', 'text/plain', '\\x00'::bytea, 1 FROM unnest($2::uuid[]) AS id`,
    [workspace.id, ids],
  );
  return { workspaceId: workspace.id, ids };
}

/** Which partition each run is in, and whether its id and attachment are kept. */
async function whereAre(workspaceId: string, ids: string[]) {
  const { rows } = await platform.deps.db.pool.query<{ id: string; partition: string | null; claimed: boolean; attachments: number }>(
    `SELECT u.id, (SELECT r.tableoid::regclass::text FROM trace_runs r WHERE r.tenant_id = $1 AND r.id = u.id) AS partition,
            EXISTS (SELECT 1 FROM trace_run_ids i WHERE i.tenant_id = $1 AND i.id = u.id) AS claimed,
            (SELECT count(*)::int FROM trace_run_attachments a WHERE a.tenant_id = $1 AND a.run_id = u.id) AS attachments
       FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, n) ORDER BY n`,
    [workspaceId, ids],
  );
  return rows.map(({ partition, claimed, attachments }) => ({ partition, claimed, attachments }));
}

// Weeks of 2001 (Monday 1 January 2001 starts one): no other test writes runs there, and the
// migration makes partitions only from about a year back.
it('puts a run of a week without a partition in the default one, and moves it when the week gets its partition', async () => {
  const { workspaceId, ids } = await runsAt(['2001-03-07T10:00:00Z', '2001-03-13T23:59:59Z']);
  expect(await whereAre(workspaceId, ids)).toEqual([
    { partition: 'trace_runs_default', claimed: true, attachments: 1 },
    { partition: 'trace_runs_default', claimed: true, attachments: 1 },
  ]);
  const { pool } = platform.deps.db;
  expect(await createTracePartitions(pool, new Date('2001-03-05T00:00:00Z'), new Date('2001-03-12T00:00:00Z'))).toEqual(['trace_runs_20010305']);
  expect(await whereAre(workspaceId, ids)).toEqual([
    { partition: 'trace_runs_20010305', claimed: true, attachments: 1 },
    { partition: 'trace_runs_default', claimed: true, attachments: 1 },
  ]);
  // Its id still decides duplicates in its new partition: posted again, both runs are duplicates.
  const again = await ingestRunBatch(platform.deps, { workspaceId }, {
    post: ids.map((id, i) => ({ id, name: 'run', run_type: 'chain', start_time: ['2001-03-07T10:00:00Z', '2001-03-13T23:59:59Z'][i] })),
  });
  expect(again).toMatchObject({ accepted: 0, duplicates: ids });
  // Created already: nothing to do.
  expect(await createTracePartitions(pool, new Date('2001-03-05T00:00:00Z'), new Date('2001-03-12T00:00:00Z'))).toEqual([]);
});

it('drops only the partitions wholly past the horizon, with their run ids and attachments', async () => {
  const { pool } = platform.deps.db;
  await createTracePartitions(pool, new Date('2001-01-01T00:00:00Z'), new Date('2001-01-22T00:00:00Z'));
  const { workspaceId, ids } = await runsAt(['2001-01-02T00:00:00Z', '2001-01-08T12:00:00Z', '2001-01-16T00:00:00Z']);
  expect((await whereAre(workspaceId, ids)).map((run) => run.partition)).toEqual(['trace_runs_20010101', 'trace_runs_20010108', 'trace_runs_20010115']);

  // The horizon falls inside the third week: the first two are wholly before it.
  const horizon = new Date('2001-01-16T12:00:00Z');
  expect(await dropTracePartitionsBefore(pool, horizon)).toEqual({ dropped: ['trace_runs_20010101', 'trace_runs_20010108'], busy: [] });
  while ((await deleteRunIdsBefore(pool, horizon, 1000)) === 1000);
  expect(await whereAre(workspaceId, ids)).toEqual([
    { partition: null, claimed: false, attachments: 0 },
    { partition: null, claimed: false, attachments: 0 },
    { partition: 'trace_runs_20010115', claimed: true, attachments: 1 },
  ]);
  const names = (await listTracePartitions(pool)).map((partition) => partition.name);
  expect(names).toContain('trace_runs_20010115');
  expect(names).not.toContain('trace_runs_20010108');
  // The weeks ahead exist (made by the migration and the schedule).
  const ahead = new Date(Date.now() + 21 * 86_400_000);
  expect((await listTracePartitions(pool)).some((partition) => partition.from <= ahead && ahead < partition.to)).toBe(true);

  // A released id can be claimed again (a claim of an id still held fails on trace_run_ids' key).
  const reposted = await pool.query(
    insertClaimingIdsSql(`INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order)
     VALUES ($1, $2, $2, $2, 'run', 'chain', now(), 'success', true, 'x')`),
    [workspaceId, ids[0]],
  );
  expect(reposted.rows).toEqual([{ stored: 1 }]);
});

it('leaves a partition a long read holds for the next pass, which drops it and releases its ids', async () => {
  const { pool } = platform.deps.db;
  await createTracePartitions(pool, new Date('2001-02-05T00:00:00Z'), new Date('2001-02-19T00:00:00Z'));
  const { workspaceId, ids } = await runsAt(['2001-02-06T00:00:00Z', '2001-02-13T00:00:00Z']);
  const horizon = new Date('2001-02-19T00:00:00Z');
  const reader = await pool.connect();
  try {
    // A read in progress on the first week holds its lock until it ends.
    await reader.query('BEGIN');
    await reader.query('SELECT count(*) FROM trace_runs_20010205');
    const first = await dropTracePartitionsBefore(pool, horizon, { lockTimeoutMs: 100, attempts: 2, pauseMs: 50 });
    expect(first.busy).toEqual(['trace_runs_20010205']);
    expect(first.dropped).toContain('trace_runs_20010212');
    while ((await deleteRunIdsBefore(pool, horizon, 1000)) === 1000);
    // The busy week's run is still there and keeps its id; the dropped week's id is released.
    expect(await whereAre(workspaceId, ids)).toEqual([
      { partition: 'trace_runs_20010205', claimed: true, attachments: 1 },
      { partition: null, claimed: false, attachments: 0 },
    ]);
  } finally {
    await reader.query('COMMIT');
    reader.release();
  }
  // The next pass, the read over: retention converges.
  expect((await dropTracePartitionsBefore(pool, horizon, { attempts: 1 })).dropped).toContain('trace_runs_20010205');
  while ((await deleteRunIdsBefore(pool, horizon, 1000)) === 1000);
  expect(await whereAre(workspaceId, ids)).toEqual([
    { partition: null, claimed: false, attachments: 0 },
    { partition: null, claimed: false, attachments: 0 },
  ]);
});

it('does not hold queries on trace_runs behind a drop waiting for its lock, and drops the week once the read ends', async () => {
  const { pool } = platform.deps.db;
  await createTracePartitions(pool, new Date('2001-03-05T00:00:00Z'), new Date('2001-03-12T00:00:00Z'));
  const { workspaceId } = await runsAt(['2001-03-06T00:00:00Z']);
  const reader = await pool.connect();
  let released = false;
  try {
    await reader.query('BEGIN');
    await reader.query('SELECT count(*) FROM trace_runs_20010305');
    // Up to a minute of short attempts: the read ends long before.
    let passOver = false;
    const pass = dropTracePartitionsBefore(pool, new Date('2001-03-12T00:00:00Z'), { lockTimeoutMs: 100, attempts: 600, pauseMs: 100 }).finally(() => {
      passOver = true;
    });
    // A query on trace_runs answers while the drop is still waiting for the read (a drop waiting on one
    // long lock would hold it until that wait ended).
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM trace_runs WHERE tenant_id = $1', [workspaceId]);
    expect(rows).toEqual([{ n: 1 }]);
    expect(passOver).toBe(false);
    await reader.query('COMMIT');
    released = true;
    expect(await pass).toEqual({ dropped: ['trace_runs_20010305'], busy: [] });
  } finally {
    if (!released) await reader.query('COMMIT');
    reader.release();
  }
});

it('forgets parents awaited since before the horizon (their waiting runs are past retention too), and only those', async () => {
  const { pool } = platform.deps.db;
  const tenantId = randomUUID();
  const [old, recent] = [randomUUID(), randomUUID()];
  await pool.query(
    `INSERT INTO trace_run_awaited_parents (tenant_id, parent_id, created_at) VALUES ($1, $2, now() - interval '40 days'), ($1, $3, now() - interval '1 day')`,
    [tenantId, old, recent],
  );
  expect(await deleteAwaitedParentsBefore(pool, new Date(Date.now() - 30 * 86_400_000))).toBeGreaterThanOrEqual(1);
  const { rows } = await pool.query<{ parent_id: string }>('SELECT parent_id FROM trace_run_awaited_parents WHERE tenant_id = $1', [tenantId]);
  expect(rows.map((row) => row.parent_id)).toEqual([recent]);
});
