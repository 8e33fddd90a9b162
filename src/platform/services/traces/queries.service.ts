// Reading runs: one run, the runs query (the SDK's listRuns) with the filter language and cursor
// paging, and children for trace trees.
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';
import type { ServiceContext } from '../../../context.js';
import { parseInput } from '../../../validate.js';
import { validateFilter } from './filter.js';
import { searchRuns } from './trace-run-search.store.js';
import { findChildRuns, findRun, findRuns, findTraceRuns, type TraceRunRow } from './trace-runs.store.js';
import { RunQuery, type RunQueryInput } from './traces.schemas.js';
import { traceWorkspace } from './workspace.js';

export type { TraceRunRow } from './trace-runs.store.js';

export type RunPage = { runs: TraceRunRow[]; nextCursor: string | null };

/** One run of the viewer's trace workspace, with all fields. Needs workspaces:read; NOT_FOUND otherwise. */
export async function getRun(ctx: ServiceContext, id: string): Promise<TraceRunRow> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  if (!isUuid(id)) throw AppError.notFound(`Run ${id} not found.`);
  const run = await findRun(ctx.db.pool, workspaceId, id);
  if (!run) throw AppError.notFound(`Run ${id} not found.`);
  return run;
}

/**
 * Runs of the viewer's trace workspace by id, in one read, in the order given: undefined for an id the
 * workspace does not hold (a GraphQL dataloader's batch). Needs workspaces:read.
 */
export async function getRunsById(ctx: ServiceContext, ids: readonly string[]): Promise<(TraceRunRow | undefined)[]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const wanted = [...new Set(ids.filter(isUuid))];
  const found = new Map((wanted.length ? await findRuns(ctx.db.pool, workspaceId, wanted) : []).map((run) => [run.id, run]));
  return ids.map((id) => found.get(id));
}

/**
 * The direct children of each parent run, in execution order, in one query: a list per parent, in the
 * order given (a GraphQL dataloader's batch). Parents outside the viewer's trace workspace get none.
 */
export async function listChildRunsOf(
  ctx: ServiceContext,
  parents: readonly { id: string; traceId: string; tenantId: string }[],
): Promise<TraceRunRow[][]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const own = parents.filter((parent) => parent.tenantId === workspaceId);
  const children = new Map<string, TraceRunRow[]>(parents.map((parent) => [parent.id, []]));
  if (own.length > 0) {
    const rows = await findChildRuns(
      ctx.db.pool,
      workspaceId,
      [...new Set(own.map((parent) => parent.traceId))],
      own.map((parent) => parent.id),
    );
    for (const row of rows) children.get(row.parentRunId!)?.push(row);
  }
  return parents.map((parent) => children.get(parent.id)!);
}

/** The most runs listTraceRuns returns: a trace tree a person can still look at. */
export const TRACE_RUNS_MAX = 2_000;

/**
 * Every run of one trace of the viewer's trace workspace, in execution order (dotted order), at most
 * `limit` (default and cap TRACE_RUNS_MAX). Needs workspaces:read; an unknown trace (or another
 * tenant's) has no runs.
 */
export async function listTraceRuns(ctx: ServiceContext, traceId: string, limit = TRACE_RUNS_MAX): Promise<TraceRunRow[]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  if (!isUuid(traceId)) return [];
  return findTraceRuns(ctx.db.pool, workspaceId, traceId, Math.min(Math.max(Math.floor(limit), 1), TRACE_RUNS_MAX));
}

/** Checks a filter (and optional trace/tree filters) without running it. Throws FilterError (BAD_REQUEST). */
export function validateRunFilters(input: { filter?: string | null; traceFilter?: string | null; treeFilter?: string | null }): void {
  for (const text of [input.filter, input.traceFilter, input.treeFilter]) if (text) validateFilter(text);
}

/**
 * Runs matching a query, newest first (or oldest with order "asc"), a page at a time: `nextCursor` is
 * set when more may follow. A filter no index serves pages by a bounded walk, so a page may hold fewer
 * runs than the limit (even none) and still have a `nextCursor`. `filter` applies to each run, `traceFilter` to the root of its trace and
 * `treeFilter` to any run of its trace. Needs workspaces:read. Throws VALIDATION_FAILED for bad input,
 * BAD_REQUEST (FilterError) for a malformed filter or cursor.
 */
export async function queryRuns(ctx: ServiceContext, input: RunQueryInput): Promise<RunPage> {
  const query = parseInput(RunQuery, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const isRoot = query.isRoot ?? (query.executionOrder === 1 ? true : undefined);
  const after = query.cursor ? decodeCursor(query.cursor) : null;
  const limit = query.limit ?? 100;
  const { rows, walkedTo } = await searchRuns(ctx.db.pool, workspaceId, {
    sessions: query.session,
    ids: query.id,
    trace: query.trace,
    parentRun: query.parentRun,
    referenceExamples: query.referenceExample,
    runType: query.runType,
    isRoot,
    error: query.error,
    startTime: query.startTime,
    endTime: query.endTime,
    text: query.query,
    filter: query.filter,
    traceFilter: query.traceFilter,
    treeFilter: query.treeFilter,
    select: query.select,
    ascending: query.order === 'asc',
    after: after && { startTime: after[0], id: after[1] },
    limit: limit + 1,
  }).catch((error: unknown) => {
    // A filter value PostgreSQL cannot represent (a date out of range, say) is the caller's input.
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('22')) throw AppError.badRequest(`Invalid filter value: ${(error as Error).message}`);
    throw error;
  });
  const more = rows.length > limit;
  const runs = more ? rows.slice(0, limit) : rows;
  const last = runs[runs.length - 1];
  if (more && last) return { runs, nextCursor: encodeCursor(last.startTime, last.id) };
  // A bounded walk stopped short of the project's end: a shorter (even empty) page, and the cursor
  // carries on from where it stopped.
  return { runs, nextCursor: walkedTo ? encodeCursor(walkedTo.startTime, walkedTo.id) : null };
}

export const encodeCursor = (startTime: string, id: string) => Buffer.from(JSON.stringify([startTime, id])).toString('base64url');

function decodeCursor(cursor: string): [string, string] {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(value) && typeof value[0] === 'string' && !Number.isNaN(Date.parse(value[0])) && isUuid(value[1])) {
      return [value[0], value[1]];
    }
  } catch {
    // fall through
  }
  throw AppError.badRequest('Invalid cursor.');
}
