// Reading runs: one run, the runs query (the SDK's listRuns) with the filter language and cursor
// paging, its v2 form (the SDK's runs.query and runs.retrieve), and children for trace trees.
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';
import type { ServiceContext } from '../../../context.js';
import { parseInput } from '../../../validate.js';
import { validateFilter } from './filter.js';
import { searchRuns } from './trace-run-search.store.js';
import { listProjects } from './projects.service.js';
import { findChildRuns, findRun, findRuns, findTraceRuns, type TraceRunRow } from './trace-runs.store.js';
import { RunQuery, type RunQueryInput, RunQueryV2, type RunQueryV2Input, RunRetrieveV2, type RunRetrieveV2Input, type RunSelectField, RunUrlV2, type RunUrlV2Input } from './traces.schemas.js';
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

/** A run as the v2 API reads it: with its project's dataset when REFERENCE_DATASET_ID is selected. */
export type RunV2Row = TraceRunRow & { referenceDatasetId?: string | null };

/** A v2 page: its runs, the fields asked for (only ID by default) and the cursor of the next page. */
export type RunPageV2 = { runs: RunV2Row[]; nextCursor: string | null; selects: RunSelectField[] };

// The large JSON columns a v2 field is presented from: a run is read with only those its selects need.
const COLUMNS_OF_SELECT: Partial<Record<RunSelectField, string>> = {
  INPUTS: 'inputs',
  OUTPUTS: 'outputs',
  EXTRA: 'extra',
  METADATA: 'extra',
  EVENTS: 'events',
  MANIFEST: 'serialized',
};

const DAY_MS = 24 * 3600_000;

// The SDK stops paging at the first empty page, so a bounded walk that found nothing carries on
// (a walk is itself bounded to ~100 ms) until it finds a run, reaches the end, or this budget is spent.
const EMPTY_PAGE_BUDGET_MS = 1_000;

/**
 * The v2 runs query (LangSmith's POST /api/v2/runs/query): runs of the given projects, or of a
 * dataset's experiments, that started within [min_start_time, max_start_time] (the day up to now by
 * default), newest first, page_size (100) at a time, on the v1 query's keyset pages and indexes. A
 * page is empty only at the end, or when a filter no index serves found nothing within a second's
 * walk (then `nextCursor` is still set). Needs workspaces:read; projects of another workspace have no
 * runs here. Throws VALIDATION_FAILED for bad input (and for ai_search, include_subtree_usage and the
 * feedback modified_at bounds, which this server does not do), BAD_REQUEST (FilterError) for a
 * malformed filter or cursor.
 */
export async function queryRunsV2(ctx: ServiceContext, input: RunQueryV2Input): Promise<RunPageV2> {
  const query = parseInput(RunQueryV2, input, 'body');
  const selects = query.selects?.length ? [...new Set(query.selects)] : (['ID'] as RunSelectField[]);
  let sessions = query.project_ids;
  let minStartTime = query.min_start_time;
  if (query.reference_dataset_id) {
    const experiments = await listProjects(ctx, { referenceDataset: query.reference_dataset_id, limit: 1000 });
    if (!experiments.length) {
      await traceWorkspace(ctx, 'workspaces:read');
      return { runs: [], nextCursor: null, selects };
    }
    sessions = experiments.map((project) => project.id);
    minStartTime ??= new Date(Math.min(...experiments.map((project) => Math.min(project.createdAt.getTime(), project.startTime.getTime()))));
  }
  const maxStartTime = query.max_start_time ?? new Date();
  minStartTime ??= new Date(maxStartTime.getTime() - DAY_MS);
  const columns = [...new Set(selects.flatMap((field) => COLUMNS_OF_SELECT[field] ?? []))];
  const started = performance.now();
  let cursor = query.cursor;
  for (;;) {
    const page = await queryRuns(ctx, {
      session: sessions,
      id: query.ids,
      trace: query.trace_id,
      referenceExample: query.reference_examples,
      runType: query.run_type?.toLowerCase() as RunQueryInput['runType'],
      isRoot: query.is_root,
      error: query.has_error,
      startTime: minStartTime.toISOString(),
      // max_start_time is inclusive; the v1 query's end is not (times are read to the millisecond).
      endTime: new Date(maxStartTime.getTime() + 1).toISOString(),
      filter: query.filter,
      traceFilter: query.trace_filter,
      treeFilter: query.tree_filter,
      select: columns,
      cursor,
      limit: query.page_size ?? 100,
    });
    if (page.runs.length || !page.nextCursor || performance.now() - started > EMPTY_PAGE_BUDGET_MS) {
      return { runs: await withProjectDatasets(ctx, page.runs, selects), nextCursor: page.nextCursor, selects };
    }
    cursor = page.nextCursor;
  }
}

/** The runs with their projects' datasets (one read of the page's projects) if REFERENCE_DATASET_ID is selected. */
async function withProjectDatasets(ctx: ServiceContext, runs: TraceRunRow[], selects: RunSelectField[]): Promise<RunV2Row[]> {
  if (!runs.length || !selects.includes('REFERENCE_DATASET_ID')) return runs;
  const projects = await listProjects(ctx, { ids: [...new Set(runs.map((run) => run.sessionId))], limit: 1000 });
  const datasets = new Map(projects.map((project) => [project.id, project.referenceDatasetId]));
  return runs.map((run) => ({ ...run, referenceDatasetId: datasets.get(run.sessionId) ?? null }));
}

/**
 * One run of one project (LangSmith's GET /api/v2/runs/{run_id}) and the fields asked for (only ID by
 * default). Needs workspaces:read. Throws VALIDATION_FAILED for bad input, NOT_FOUND for a run that is
 * not in that project of the viewer's trace workspace.
 */
export async function getProjectRun(ctx: ServiceContext, id: string, input: RunRetrieveV2Input): Promise<{ run: RunV2Row; selects: RunSelectField[] }> {
  const query = parseInput(RunRetrieveV2, input, 'query');
  const run = await projectRun(ctx, id, query.project_id);
  const selects: RunSelectField[] = query.selects?.length ? [...new Set(query.selects)] : ['ID'];
  return { run: (await withProjectDatasets(ctx, [run], selects))[0]!, selects };
}

/**
 * The run a v2 run url is for (LangSmith's GET /api/v2/runs/{run_id}/url): the run of that project and
 * trace. Needs workspaces:read. Throws VALIDATION_FAILED for bad input, NOT_FOUND for a run that is not
 * in that project and trace of the viewer's trace workspace.
 */
export async function getRunForUrl(ctx: ServiceContext, id: string, input: RunUrlV2Input): Promise<TraceRunRow> {
  const query = parseInput(RunUrlV2, input, 'query');
  const run = await projectRun(ctx, id, query.project_id);
  if (run.traceId !== query.trace_id) throw AppError.notFound(`Run ${id} not found in trace ${query.trace_id}.`);
  return run;
}

/** A run of one project of the viewer's trace workspace (a v2 path's run_id): VALIDATION_FAILED for an id that is no UUID, NOT_FOUND elsewhere. */
async function projectRun(ctx: ServiceContext, id: string, projectId: string): Promise<TraceRunRow> {
  if (!isUuid(id)) throw new AppError('VALIDATION_FAILED', 'path.run_id: expected a UUID', [{ loc: ['path', 'run_id'], msg: 'expected a UUID', type: 'uuid_parsing' }]);
  const run = await getRun(ctx, id);
  if (run.sessionId !== projectId) throw AppError.notFound(`Run ${id} not found in project ${projectId}.`);
  return run;
}
