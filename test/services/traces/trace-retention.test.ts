// Trace retention: the worker's retention pass deletes exactly the runs older than their workspace's
// retention (its own, else the configured default), with their attachments, and nothing else.
// (Deleting by row for now: with time-partitioned trace tables it becomes dropping partitions.)
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deleteExpiredTraceRuns } from '../../../src/workers/traces-retention.job.js';
import { buildOrganization, buildWorkspace } from '../../factories.js';
import { startTestPlatform, type TestPlatform } from '../../helpers.js';

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
      `INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order, tags)
       VALUES ($1, $2, $3, $2, 'run', 'chain', now() - make_interval(days => $4), 'success', true, $5, '{}')`,
      [workspace.id, id, projectId, age, id],
    );
  }
  await pool.query(
    `INSERT INTO trace_run_attachments (tenant_id, run_id, name, content_type, data, size) SELECT $1, id, 'file', 'text/plain', '\\x00'::bytea, 1 FROM unnest($2::uuid[]) AS id`,
    [workspace.id, [...runs.values()]],
  );
  return { workspaceId: workspace.id, runs };
}

async function remaining(workspaceId: string) {
  const { pool } = platform.deps.db;
  const runs = await pool.query<{ id: string }>('SELECT id FROM trace_runs WHERE tenant_id = $1', [workspaceId]);
  const attachments = await pool.query<{ run_id: string }>('SELECT run_id FROM trace_run_attachments WHERE tenant_id = $1', [workspaceId]);
  return { runs: runs.rows.map((row) => row.id).sort(), attachments: attachments.rows.map((row) => row.run_id).sort() };
}

it('deletes only runs past their workspace’s retention (or the default), with their attachments', async () => {
  const short = await workspaceWithRuns(7, [1, 6, 8, 40]);
  const byDefault = await workspaceWithRuns(null, [1, 8, 29, 31, 400]);
  const long = await workspaceWithRuns(365, [8, 40, 364]);

  // Only these workspaces: other test files share the database and may hold old runs.
  const mine = [short.workspaceId, byDefault.workspaceId, long.workspaceId];
  expect(await deleteExpiredTraceRuns(platform.deps, mine)).toEqual({ deleted: 4 });

  const kept = (set: { runs: Map<number, string> }, ages: number[]) => ages.map((age) => set.runs.get(age)!).sort();
  expect(await remaining(short.workspaceId)).toEqual({ runs: kept(short, [1, 6]), attachments: kept(short, [1, 6]) });
  expect(await remaining(byDefault.workspaceId)).toEqual({ runs: kept(byDefault, [1, 8, 29]), attachments: kept(byDefault, [1, 8, 29]) });
  expect(await remaining(long.workspaceId)).toEqual({ runs: kept(long, [8, 40, 364]), attachments: kept(long, [8, 40, 364]) });

  // A second pass finds nothing more of these workspaces.
  expect(await deleteExpiredTraceRuns(platform.deps, mine)).toEqual({ deleted: 0 });
  expect((await remaining(short.workspaceId)).runs).toEqual(kept(short, [1, 6]));
});
