// What expires of traces: runs past their workspace's retention, the ids of runs gone with their
// partition (with their attachments, waiting patches and feedback), awaited parents that never came,
// expired feedback tokens, and the longest retention, which says which partitions may go
// (trace-partitions.store.ts drops them).
import type pg from 'pg';

/**
 * Deletes up to `limit` trace runs per project that started before their workspace's retention
 * (`trace_retention_days`, else `defaultDays`), with their attachments, waiting patches and feedback; returns
 * how many runs it deleted. Per project, the old runs are a range of the (tenant_id, session_id,
 * start_time, id) index. Runs whose project is gone were deleted with it. `workspaceIds` narrows it
 * to those workspaces.
 */
export async function deleteExpiredRuns(pool: pg.Pool, defaultDays: number, limit: number, workspaceIds?: string[]): Promise<number> {
  const { rows } = await pool.query<{ deleted: number }>(
    `WITH doomed AS (
       SELECT r.tenant_id, r.id FROM workspaces w
         JOIN tracing_projects p ON p.workspace_id = w.id
        CROSS JOIN LATERAL (
          SELECT r.tenant_id, r.id FROM trace_runs r
           WHERE r.tenant_id = w.id AND r.session_id = p.id
             AND r.start_time < now() - make_interval(days => COALESCE(w.trace_retention_days, $1::int))
           LIMIT $2
        ) r
        WHERE $3::uuid[] IS NULL OR w.id = ANY($3::uuid[])
     ), runs AS (
       DELETE FROM trace_runs t USING doomed d WHERE t.tenant_id = d.tenant_id AND t.id = d.id RETURNING t.tenant_id, t.id
     ), attachments AS (
       DELETE FROM trace_run_attachments a USING runs WHERE a.tenant_id = runs.tenant_id AND a.run_id = runs.id
     ), patches AS (
       DELETE FROM trace_run_pending_patches pp USING runs WHERE pp.tenant_id = runs.tenant_id AND pp.run_id = runs.id
     ), feedback AS (
       DELETE FROM feedback f USING runs WHERE f.tenant_id = runs.tenant_id AND f.run_id = runs.id
     )
     SELECT count(*)::int AS deleted FROM runs`,
    [defaultDays, limit, workspaceIds ?? null],
  );
  return rows[0]!.deleted;
}

/**
 * Deletes up to `limit` run ids that started before `horizon` (their runs were dropped with their
 * partition, or deleted), with those runs' attachments, waiting patches and feedback; returns how many.
 */
export async function deleteRunIdsBefore(pool: pg.Pool, horizon: Date, limit: number): Promise<number> {
  const { rows } = await pool.query<{ deleted: number }>(
    `WITH ids AS (
       DELETE FROM trace_run_ids i
        WHERE (i.tenant_id, i.id) IN (
          SELECT x.tenant_id, x.id FROM trace_run_ids x
           WHERE x.start_time < $1
             AND NOT EXISTS (SELECT 1 FROM trace_runs r WHERE r.tenant_id = x.tenant_id AND r.id = x.id AND r.start_time = x.start_time)
           LIMIT $2)
       RETURNING i.tenant_id, i.id
     ), attachments AS (
       DELETE FROM trace_run_attachments a USING ids WHERE a.tenant_id = ids.tenant_id AND a.run_id = ids.id
     ), patches AS (
       DELETE FROM trace_run_pending_patches pp USING ids WHERE pp.tenant_id = ids.tenant_id AND pp.run_id = ids.id
     ), feedback AS (
       DELETE FROM feedback f USING ids WHERE f.tenant_id = ids.tenant_id AND f.run_id = ids.id
     )
     SELECT count(*)::int AS deleted FROM ids`,
    [horizon, limit],
  );
  return rows[0]!.deleted;
}

/** The longest trace retention any workspace has (its own, else `defaultDays`), in days. */
export async function longestTraceRetentionDays(pool: pg.Pool, defaultDays: number): Promise<number> {
  const { rows } = await pool.query<{ days: number }>('SELECT GREATEST($1::int, max(trace_retention_days))::int AS days FROM workspaces', [defaultDays]);
  return rows[0]!.days;
}

/**
 * Forgets awaited parents recorded before `horizon` (the longest retention): the runs that waited for
 * them are past retention too, and a parent that never came is not coming.
 */
export async function deleteAwaitedParentsBefore(pool: pg.Pool, horizon: Date): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM trace_run_awaited_parents WHERE created_at < $1', [horizon]);
  return rowCount ?? 0;
}

/** Deletes the presigned feedback tokens that expired before `before` (their urls take nothing more). */
export async function deleteFeedbackTokensExpiredBefore(pool: pg.Pool, before: Date): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM feedback_tokens WHERE expires_at < $1', [before]);
  return rowCount ?? 0;
}
