// Bulk exports: one-off exports split into one run per UTC day, scheduled exports spawning a child
// export per window, cancellation, and the progress stream. Execution is in export-runner.ts.
import { AppError } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import { isUuid } from '../../../ids.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { validateFilter } from '../traces/filter.js';
import { parseInput } from '../../../validate.js';
import { exportWorkspace } from './access.js';
import { findOwnDestination } from './destinations.service.js';
import { BulkExportCreate, type BulkExportCreateInput, BulkExportUpdate, type BulkExportUpdateInput, EXPORTABLE_FIELDS } from './exports.schemas.js';
import * as store from './exports.store.js';

export type { RunResult } from './exports.store.js';

export type { BulkExport, BulkExportRun } from './exports.store.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** The UTC day partitions of [start, end): one run each. */
function dayPartitions(start: Date, end: Date): { start: Date; end: Date }[] {
  const days: { start: Date; end: Date }[] = [];
  for (let from = start.getTime(); from < end.getTime(); ) {
    const nextMidnight = Math.floor(from / DAY_MS) * DAY_MS + DAY_MS;
    const to = Math.min(nextMidnight, end.getTime());
    days.push({ start: new Date(from), end: new Date(to) });
    from = to;
  }
  return days;
}

/**
 * Creates an export of a tracing project's runs to a destination: one-off (end_time; one run per UTC
 * day, status Created, picked up by the workers) or scheduled (interval_hours; status
 * IntervalScheduled, spawning child exports). A malformed filter is BAD_REQUEST; another workspace's
 * project or destination NOT_FOUND; the free plan FORBIDDEN. Publishes exports.dispatch.
 */
export async function createExport(ctx: ServiceContext, input: BulkExportCreateInput): Promise<store.BulkExport> {
  const { workspaceId } = await exportWorkspace(ctx, 'workspaces:write');
  const data = parseInput(BulkExportCreate, input);
  if (data.filter) validateFilter(data.filter);
  const destination = await findOwnDestination(ctx, workspaceId, data.bulk_export_destination_id);
  const project = await ctx.db.prisma.tracingProject.findFirst({ where: { id: data.session_id, workspaceId }, select: { id: true } });
  if (!project) throw AppError.notFound(`Project ${data.session_id} not found.`);
  const scheduled = data.interval_hours != null;
  const created = await store.insertExport(
    ctx.db,
    {
      workspaceId,
      destinationId: destination.id,
      sessionId: project.id,
      startTime: data.start_time,
      endTime: data.end_time ?? null,
      filter: data.filter ?? null,
      formatVersion: data.format_version,
      compression: data.compression,
      exportFields: data.export_fields ? [...new Set(data.export_fields)] : [],
      intervalHours: data.interval_hours ?? null,
      nextWindowStart: scheduled ? data.start_time : null,
      status: scheduled ? 'IntervalScheduled' : 'Created',
    },
    scheduled ? [] : dayPartitions(data.start_time, data.end_time!),
  );
  if (!scheduled) await ctx.events.publish('exports.dispatch', { exportId: created.id });
  return created;
}

/** The exports of the viewer's workspace, newest first; `selection` folds relations (GraphQL) into the read. */
export async function listExports(ctx: ServiceContext, selection: Prisma.BulkExportFindManyArgs = {}): Promise<store.BulkExport[]> {
  const { workspaceId } = await exportWorkspace(ctx, 'workspaces:read');
  return store.listExports(ctx.db, workspaceId, selection);
}

/** One export of the viewer's workspace; NOT_FOUND otherwise. `selection` folds relations (GraphQL) into the read. */
export async function getExport(ctx: ServiceContext, id: string, selection: Prisma.BulkExportFindManyArgs = {}): Promise<store.BulkExport> {
  const { workspaceId } = await exportWorkspace(ctx, 'workspaces:read');
  const found = isUuid(id) ? await store.findExport(ctx.db, workspaceId, id, selection) : null;
  if (!found) throw AppError.notFound(`Bulk export ${id} not found.`);
  return found;
}

/** The runs of one export of the viewer's workspace, by day. */
export async function listExportRuns(ctx: ServiceContext, exportId: string): Promise<store.BulkExportRun[]> {
  const found = await getExport(ctx, exportId);
  return store.listRuns(ctx.db, found.id);
}

/** One run of one export of the viewer's workspace; NOT_FOUND otherwise. */
export async function getExportRun(ctx: ServiceContext, exportId: string, runId: string): Promise<store.BulkExportRun> {
  const found = await getExport(ctx, exportId);
  const run = isUuid(runId) ? await store.findRun(ctx.db, found.id, runId) : null;
  if (!run) throw AppError.notFound(`Run ${runId} of bulk export ${exportId} not found.`);
  return run;
}

/**
 * Cancels an export (PATCH status Cancelled): pending runs never start, running ones stop at their
 * next batch; a scheduled export stops spawning (its spawned exports are left alone). Cancelling a
 * finished export is BAD_REQUEST. Publishes exports.progress.
 */
export async function updateExport(
  ctx: ServiceContext,
  id: string,
  input: BulkExportUpdateInput,
  selection: Prisma.BulkExportFindManyArgs = {},
): Promise<store.BulkExport> {
  await exportWorkspace(ctx, 'workspaces:write');
  parseInput(BulkExportUpdate, input);
  const found = await getExport(ctx, id);
  if (!(await store.cancelExport(ctx.db, found.id))) {
    throw AppError.badRequest(`Bulk export ${id} is ${found.status} and cannot be cancelled.`);
  }
  await ctx.events.publish('exports.progress', { exportId: found.id }, found.id);
  return getExport(ctx, id, selection);
}

export type ExportProgress = { export: store.BulkExport; runs: store.BulkExportRun[] };

/**
 * The export and its runs now, then again after every change (status, rows, files) until the export
 * finishes or `signal` aborts. NOT_FOUND for another workspace's export.
 */
export async function* watchExportProgress(ctx: ServiceContext, id: string, signal?: AbortSignal): AsyncGenerator<ExportProgress> {
  const found = await getExport(ctx, id);
  // Subscribe before the first read, so no change between the read and the subscription is missed.
  const changes = ctx.events.subscribe('exports.progress', { key: found.id, signal });
  try {
    for (;;) {
      const current = (await store.findExport(ctx.db, found.workspaceId, found.id))!;
      yield { export: current, runs: await store.listRuns(ctx.db, found.id) };
      if (['Completed', 'Failed', 'Cancelled', 'TimedOut'].includes(current.status)) return;
      const next = await changes.next();
      if (next.done) return;
    }
  } finally {
    await changes.return(undefined);
  }
}

/** The exportable fields an export writes, in column order. */
export const exportFieldsOf = (row: store.BulkExport) =>
  row.exportFields.length ? EXPORTABLE_FIELDS.filter((field) => row.exportFields.includes(field)) : [...EXPORTABLE_FIELDS];

/**
 * Spawns the child exports of scheduled exports whose next window ended at least the spawn delay
 * before `now` (10 minutes by default): one per window [start + k·interval, start + (k+1)·interval),
 * carrying source_bulk_export_id. `now` is a parameter so tests control the clock. Returns the
 * spawned exports' ids.
 */
export async function spawnScheduledExports(deps: Deps, now: Date = new Date()): Promise<string[]> {
  const delayMs = deps.config.exports.spawnDelaySeconds * 1000;
  const spawned: string[] = [];
  for (const { id } of await store.findDueSchedules(deps.db, now, deps.config.exports.spawnDelaySeconds)) {
    // One spawner per schedule at a time: the window moves only if it is still the one we read.
    for (;;) {
      const parent = await deps.db.prisma.bulkExport.findUnique({ where: { id } });
      if (!parent || parent.status !== 'IntervalScheduled' || !parent.nextWindowStart || !parent.intervalHours) break;
      const windowStart = parent.nextWindowStart;
      const windowEnd = new Date(windowStart.getTime() + parent.intervalHours * HOUR_MS);
      if (windowEnd.getTime() + delayMs > now.getTime()) break;
      const moved = await deps.db.prisma.bulkExport.updateMany({
        where: { id, status: 'IntervalScheduled', nextWindowStart: windowStart },
        data: { nextWindowStart: windowEnd },
      });
      if (moved.count === 0) break;
      const child = await store.insertExport(
        deps.db,
        {
          workspaceId: parent.workspaceId,
          destinationId: parent.destinationId,
          sessionId: parent.sessionId,
          startTime: windowStart,
          endTime: windowEnd,
          filter: parent.filter,
          formatVersion: parent.formatVersion,
          compression: parent.compression,
          exportFields: parent.exportFields,
          status: 'Created',
          sourceBulkExportId: parent.id,
        },
        dayPartitions(windowStart, windowEnd),
      );
      spawned.push(child.id);
      await deps.events.publish('exports.dispatch', { exportId: child.id });
    }
  }
  return spawned;
}
