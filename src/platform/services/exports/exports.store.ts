// SQL of bulk export: destinations, exports and their runs (the state machines), the keyset read of
// trace runs a run exports, and the claims that keep concurrency within the limits across workers.
import type pg from 'pg';
import { type Database, withTransaction } from '../../../db.js';
import type { BulkExport, BulkExportRun, ExportDestination, Prisma } from '../../../generated/prisma/client.js';
import type { ExportLimits } from '../../../config.js';
import { newId } from '../../../ids.js';
import type { ExportStatus } from './exports.schemas.js';

export type { BulkExport, BulkExportRun, ExportDestination };

/** What a run checkpoints after each file: where to resume, and what is already in the bucket. */
export type RunResult = {
  rows_written: number;
  exported_files: string[];
  export_path: string;
  latest_cursor: { start_time: string; id: string } | null;
};

export const runResult = (run: Pick<BulkExportRun, 'metadata'>): RunResult | undefined =>
  ((run.metadata ?? {}) as { result?: RunResult }).result;

// ───────────────────────────── destinations ─────────────────────────────

export function insertDestination(db: Database, data: Omit<Prisma.ExportDestinationUncheckedCreateInput, 'id'>) {
  return db.prisma.exportDestination.create({ data: { id: newId(), ...data } });
}

export function findDestination(db: Database, workspaceId: string, id: string) {
  return db.prisma.exportDestination.findFirst({ where: { id, workspaceId } });
}

export function listDestinations(db: Database, workspaceId: string, selection: Prisma.ExportDestinationFindManyArgs = {}) {
  return db.prisma.exportDestination.findMany({ ...selection, where: { workspaceId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
}

export function updateDestination(db: Database, id: string, data: Prisma.ExportDestinationUpdateInput) {
  return db.prisma.exportDestination.update({ where: { id }, data });
}

// ───────────────────────────── exports and runs ─────────────────────────────

/** Writes an export and its runs (one per UTC day of its range; none for a scheduled parent) at once. */
export async function insertExport(db: Database, data: Omit<Prisma.BulkExportUncheckedCreateInput, 'id'>, days: { start: Date; end: Date }[]) {
  const id = newId();
  return db.prisma.$transaction(async (tx) => {
    const created = await tx.bulkExport.create({ data: { id, ...data } });
    if (days.length) {
      await tx.bulkExportRun.createMany({
        data: days.map((day) => ({ id: newId(), bulkExportId: id, status: 'Created', startTime: day.start, endTime: day.end })),
      });
    }
    return created;
  });
}

export function findExport(db: Database, workspaceId: string, id: string, selection: Prisma.BulkExportFindFirstArgs = {}) {
  return db.prisma.bulkExport.findFirst({ ...selection, where: { id, workspaceId } });
}

export function listExports(db: Database, workspaceId: string, selection: Prisma.BulkExportFindManyArgs = {}) {
  return db.prisma.bulkExport.findMany({ ...selection, where: { workspaceId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
}

export function listRuns(db: Database, exportId: string) {
  return db.prisma.bulkExportRun.findMany({ where: { bulkExportId: exportId }, orderBy: [{ startTime: 'asc' }, { id: 'asc' }] });
}

export function findRun(db: Database, exportId: string, runId: string) {
  return db.prisma.bulkExportRun.findFirst({ where: { id: runId, bulkExportId: exportId } });
}

/** Cancels an export and its unfinished runs; returns false when the export had already finished. */
export async function cancelExport(db: Database, id: string): Promise<boolean> {
  return db.prisma.$transaction(async (tx) => {
    const updated = await tx.bulkExport.updateMany({
      where: { id, status: { in: ['Created', 'Running', 'IntervalScheduled'] } },
      data: { status: 'Cancelled', finishedAt: new Date() },
    });
    await tx.bulkExportRun.updateMany({
      where: { bulkExportId: id, status: { in: ['Created', 'Running'] } },
      data: { status: 'Cancelled', finishedAt: new Date(), leaseOwner: null },
    });
    return updated.count > 0;
  });
}

// ───────────────────────────── execution ─────────────────────────────

/** A run with what executing it needs. */
export type RunToExecute = BulkExportRun & {
  export: BulkExport;
  destination: ExportDestination | null;
};

/**
 * Picks the runs that may start now within the limits (running runs per export, exports with running
 * runs per workspace), oldest first, and marks them Running. One dispatcher at a time across every
 * process (an advisory transaction lock), so two workers never both fill the same free slot.
 */
export async function claimRunsToStart(pool: pg.Pool, limits: Pick<ExportLimits, 'runsPerExport' | 'exportsPerWorkspace'>): Promise<string[]> {
  return withTransaction({ pool }, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('bulk_exports.dispatch'))`);
    const running = await client.query<{ bulk_export_id: string; workspace_id: string; runs: number }>(
      `SELECT r.bulk_export_id, e.workspace_id, count(*)::int AS runs
         FROM bulk_export_runs r JOIN bulk_exports e ON e.id = r.bulk_export_id
        WHERE r.status = 'Running' GROUP BY 1, 2`,
    );
    const runsPerExport = new Map(running.rows.map((row) => [row.bulk_export_id, row.runs]));
    const exportsPerWorkspace = new Map<string, Set<string>>();
    for (const row of running.rows) {
      const set = exportsPerWorkspace.get(row.workspace_id) ?? new Set<string>();
      exportsPerWorkspace.set(row.workspace_id, set.add(row.bulk_export_id));
    }
    const waiting = await client.query<{ id: string; bulk_export_id: string; workspace_id: string }>(
      `SELECT r.id, r.bulk_export_id, e.workspace_id
         FROM bulk_export_runs r JOIN bulk_exports e ON e.id = r.bulk_export_id
        WHERE r.status = 'Created' AND e.status IN ('Created', 'Running')
        ORDER BY e.created_at, e.id, r.start_time
        LIMIT 2000`,
    );
    const claimed: typeof waiting.rows = [];
    for (const run of waiting.rows) {
      const exportsRunning = exportsPerWorkspace.get(run.workspace_id) ?? new Set<string>();
      const runsRunning = runsPerExport.get(run.bulk_export_id) ?? 0;
      if (runsRunning >= limits.runsPerExport) continue;
      if (!exportsRunning.has(run.bulk_export_id) && exportsRunning.size >= limits.exportsPerWorkspace) continue;
      claimed.push(run);
      runsPerExport.set(run.bulk_export_id, runsRunning + 1);
      exportsPerWorkspace.set(run.workspace_id, exportsRunning.add(run.bulk_export_id));
    }
    let started: string[] = [];
    if (claimed.length) {
      // The export first, then its runs: the order cancelExport locks them in, so the two never deadlock.
      // Only rows still waiting change: an export cancelled since the reads above stays cancelled.
      await client.query(`UPDATE bulk_exports SET status = 'Running', updated_at = now() WHERE status = 'Created' AND id = ANY($1::uuid[])`, [
        [...new Set(claimed.map((run) => run.bulk_export_id))],
      ]);
      const updated = await client.query<{ id: string }>(
        `UPDATE bulk_export_runs SET status = 'Running', started_at = coalesce(started_at, clock_timestamp()), updated_at = now()
          WHERE id = ANY($1::uuid[]) AND status = 'Created'
          RETURNING id`,
        [claimed.map((run) => run.id)],
      );
      started = updated.rows.map((row) => row.id);
    }
    return started;
  });
}

/** Running runs nobody has shown life for within the lease: their executor died. */
export async function findAbandonedRuns(pool: pg.Pool, leaseSeconds: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM bulk_export_runs WHERE status = 'Running' AND updated_at < now() - make_interval(secs => $1) LIMIT 1000`,
    [leaseSeconds],
  );
  return rows.map((row) => row.id);
}

/**
 * Takes the lease of a Running run for `owner` (a job id), unless another executor holds a live one.
 * Returns the run with its export and destination, or undefined (finished, cancelled, or leased).
 */
export async function leaseRun(db: Database, runId: string, owner: string, leaseSeconds: number): Promise<RunToExecute | undefined> {
  const { rowCount } = await db.pool.query(
    `UPDATE bulk_export_runs SET lease_owner = $2, updated_at = now()
      WHERE id = $1 AND status = 'Running'
        AND (lease_owner IS NULL OR lease_owner = $2 OR updated_at < now() - make_interval(secs => $3))`,
    [runId, owner, leaseSeconds],
  );
  if (!rowCount) return undefined;
  const run = await db.prisma.bulkExportRun.findUnique({ where: { id: runId }, include: { bulkExport: { include: { destination: true } } } });
  if (!run) return undefined;
  const { bulkExport, ...rest } = run;
  const { destination, ...exportRow } = bulkExport;
  return { ...rest, export: exportRow, destination };
}

/** Shows the lease is alive; false when the run was cancelled, timed out or taken over. */
export async function heartbeatRun(pool: pg.Pool, runId: string, owner: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE bulk_export_runs SET updated_at = now() WHERE id = $1 AND lease_owner = $2 AND status = 'Running'`,
    [runId, owner],
  );
  return rowCount === 1;
}

/** Records a finished file (cursor, rows, file list) for the lease holder; false when it lost the lease. */
export async function checkpointRun(pool: pg.Pool, runId: string, owner: string, result: RunResult): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE bulk_export_runs SET metadata = jsonb_set(metadata, '{result}', $3::jsonb), updated_at = now()
      WHERE id = $1 AND lease_owner = $2 AND status = 'Running'`,
    [runId, owner, JSON.stringify(result)],
  );
  return rowCount === 1;
}

/** Ends the lease holder's run in `status`, recording `error` as errors.retry_<retry_number> when given. */
export async function finishRun(pool: pg.Pool, runId: string, owner: string, status: ExportStatus, error?: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE bulk_export_runs
        SET status = $3, lease_owner = NULL, updated_at = now(), finished_at = now(),
            errors = CASE WHEN $4::text IS NULL THEN errors ELSE errors || jsonb_build_object('retry_' || retry_number, $4::text) END
      WHERE id = $1 AND lease_owner = $2 AND status = 'Running'`,
    [runId, owner, status, error ?? null],
  );
  return rowCount === 1;
}

/** Records a retryable failure as errors.retry_<n>, counts the retry and releases the lease. Returns the retries so far. */
export async function recordRunRetry(pool: pg.Pool, runId: string, owner: string, error: string): Promise<number | undefined> {
  const { rows } = await pool.query<{ retry_number: number }>(
    `UPDATE bulk_export_runs
        SET errors = errors || jsonb_build_object('retry_' || retry_number, $3::text), retry_number = retry_number + 1,
            lease_owner = NULL, updated_at = now()
      WHERE id = $1 AND lease_owner = $2 AND status = 'Running'
      RETURNING retry_number`,
    [runId, owner, error],
  );
  return rows[0]?.retry_number;
}

/**
 * Settles an export from its runs: Failed when one failed (the other unfinished runs are cancelled),
 * Completed when all completed. Returns the new status when it changed.
 */
export async function settleExport(pool: pg.Pool, exportId: string): Promise<ExportStatus | undefined> {
  const { rows } = await pool.query<{ status: ExportStatus }>(
    `WITH counts AS (
       SELECT count(*) FILTER (WHERE status = 'Failed') AS failed,
              count(*) FILTER (WHERE status <> 'Completed') AS unfinished
         FROM bulk_export_runs WHERE bulk_export_id = $1
     )
     UPDATE bulk_exports e
        SET status = CASE WHEN counts.failed > 0 THEN 'Failed' ELSE 'Completed' END, finished_at = now(), updated_at = now()
       FROM counts
      WHERE e.id = $1 AND e.status IN ('Created', 'Running') AND (counts.failed > 0 OR counts.unfinished = 0)
      RETURNING e.status`,
    [exportId],
  );
  const status = rows[0]?.status;
  if (status === 'Failed') {
    await pool.query(
      `UPDATE bulk_export_runs SET status = 'Cancelled', lease_owner = NULL, finished_at = now(), updated_at = now()
        WHERE bulk_export_id = $1 AND status IN ('Created', 'Running')`,
      [exportId],
    );
  }
  return status;
}

/** Exports past the export timeout become TimedOut with their unfinished runs. Returns their ids. */
export async function timeOutExports(pool: pg.Pool, timeoutSeconds: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `UPDATE bulk_exports SET status = 'TimedOut', finished_at = now(), updated_at = now()
      WHERE status IN ('Created', 'Running') AND created_at < now() - make_interval(secs => $1)
      RETURNING id`,
    [timeoutSeconds],
  );
  const ids = rows.map((row) => row.id);
  if (ids.length) {
    await pool.query(
      `UPDATE bulk_export_runs SET status = 'TimedOut', lease_owner = NULL, finished_at = now(), updated_at = now()
        WHERE bulk_export_id = ANY($1::uuid[]) AND status IN ('Created', 'Running')`,
      [ids],
    );
  }
  return ids;
}

/** Scheduled exports with a window due by `now` (window end + delay), for spawning. */
export function findDueSchedules(db: Database, now: Date, delaySeconds: number) {
  return db.prisma.$queryRaw<{ id: string }[]>`
    SELECT id FROM bulk_exports
     WHERE status = 'IntervalScheduled'
       AND next_window_start + make_interval(hours => interval_hours) + make_interval(secs => ${delaySeconds}) <= ${now}`;
}
