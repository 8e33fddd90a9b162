// Reading runs: one run, the runs query (the SDK's listRuns) with the filter language and cursor
// paging, and children for trace trees.
import { AppError } from '../../errors.js';
import type { ServiceContext } from '../context.js';
import { parseInput } from '../validate.js';
import { isUuid } from './derive.js';
import { compileFilter, SqlParams, validateFilter } from './filter.js';
import { RunQuery, type RunQueryInput } from './traces.schemas.js';
import { traceWorkspace } from './workspace.js';

/** A stored run as services return it (timestamps as ISO strings with microseconds, UTC). */
export type TraceRunRow = {
  id: string;
  tenantId: string;
  sessionId: string;
  traceId: string;
  parentRunId: string | null;
  parentRunIds: string[];
  referenceExampleId: string | null;
  name: string;
  runType: string;
  startTime: string;
  endTime: string | null;
  status: string;
  isRoot: boolean;
  dottedOrder: string;
  traceTier: string | null;
  threadId: string | null;
  inputs?: unknown;
  outputs?: unknown;
  error: string | null;
  extra?: unknown;
  events?: unknown;
  serialized?: unknown;
  tags: string[];
  feedbackStats: unknown;
  totalTokens: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  totalCost: number | null;
  promptCost: number | null;
  completionCost: number | null;
  firstTokenTime: string | null;
  apiKeyId: string | null;
  userId: string | null;
};

export type RunPage = { runs: TraceRunRow[]; nextCursor: string | null };

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

// Always read: small, and needed for presenting, paging and trees.
const BASE_COLUMNS = [
  'r.id',
  'r.tenant_id AS "tenantId"',
  'r.session_id AS "sessionId"',
  'r.trace_id AS "traceId"',
  'r.parent_run_id AS "parentRunId"',
  'r.parent_run_ids AS "parentRunIds"',
  'r.reference_example_id AS "referenceExampleId"',
  'r.name',
  'r.run_type AS "runType"',
  `${iso('r.start_time')} AS "startTime"`,
  `${iso('r.end_time')} AS "endTime"`,
  'r.status',
  'r.is_root AS "isRoot"',
  'r.dotted_order AS "dottedOrder"',
  'r.trace_tier AS "traceTier"',
  'r.thread_id AS "threadId"',
  'r.error',
  'r.tags',
  'r.feedback_stats AS "feedbackStats"',
  'r.total_tokens AS "totalTokens"',
  'r.prompt_tokens AS "promptTokens"',
  'r.completion_tokens AS "completionTokens"',
  'r.total_cost AS "totalCost"',
  'r.prompt_cost AS "promptCost"',
  'r.completion_cost AS "completionCost"',
  `${iso('r.first_token_time')} AS "firstTokenTime"`,
  'r.api_key_id AS "apiKeyId"',
  'r.user_id AS "userId"',
];
// Large JSON: read only when selected.
const HEAVY_COLUMNS: Record<string, string> = {
  inputs: 'r.inputs',
  outputs: 'r.outputs',
  extra: 'r.extra',
  events: 'r.events',
  serialized: 'r.serialized',
};

function selectList(select: string[] | null | undefined): string {
  const heavy = select ? Object.keys(HEAVY_COLUMNS).filter((name) => select.includes(name)) : Object.keys(HEAVY_COLUMNS);
  return [...BASE_COLUMNS, ...heavy.map((name) => HEAVY_COLUMNS[name]!)].join(', ');
}

/** One run of the viewer's trace workspace, with all fields. Needs workspaces:read; NOT_FOUND otherwise. */
export async function getRun(ctx: ServiceContext, id: string): Promise<TraceRunRow> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  if (!isUuid(id)) throw AppError.notFound(`Run ${id} not found.`);
  const { rows } = await ctx.db.pool.query<TraceRunRow>(`SELECT ${selectList(null)} FROM trace_runs r WHERE r.tenant_id = $1 AND r.id = $2`, [
    workspaceId,
    id,
  ]);
  if (!rows[0]) throw AppError.notFound(`Run ${id} not found.`);
  return rows[0];
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
    // trace_id narrows the scan to the traces' partitions of the index; parent_run_id picks the children.
    const { rows } = await ctx.db.pool.query<TraceRunRow>(
      `SELECT ${selectList(null)} FROM trace_runs r
        WHERE r.tenant_id = $1 AND r.trace_id = ANY($2::uuid[]) AND r.parent_run_id = ANY($3::uuid[]) ORDER BY r.dotted_order`,
      [workspaceId, [...new Set(own.map((parent) => parent.traceId))], own.map((parent) => parent.id)],
    );
    for (const row of rows) children.get(row.parentRunId!)?.push(row);
  }
  return parents.map((parent) => children.get(parent.id)!);
}

/** Checks a filter (and optional trace/tree filters) without running it. Throws FilterError (BAD_REQUEST). */
export function validateRunFilters(input: { filter?: string | null; traceFilter?: string | null; treeFilter?: string | null }): void {
  for (const text of [input.filter, input.traceFilter, input.treeFilter]) if (text) validateFilter(text);
}

/**
 * Runs matching a query, newest first (or oldest with order "asc"), a page at a time: `nextCursor` is
 * set when more follow. `filter` applies to each run, `traceFilter` to the root of its trace and
 * `treeFilter` to any run of its trace. Needs workspaces:read. Throws VALIDATION_FAILED for bad input,
 * BAD_REQUEST (FilterError) for a malformed filter or cursor.
 */
export async function queryRuns(ctx: ServiceContext, input: RunQueryInput): Promise<RunPage> {
  const query = parseInput(RunQuery, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const params = new SqlParams([workspaceId]);
  const where = ['r.tenant_id = $1'];
  if (query.session?.length) where.push(`r.session_id = ANY(${params.add(query.session, 'uuid[]')})`);
  if (query.id?.length) where.push(`r.id = ANY(${params.add(query.id, 'uuid[]')})`);
  if (query.trace) where.push(`r.trace_id = ${params.add(query.trace, 'uuid')}`);
  if (query.parentRun) where.push(`r.parent_run_id = ${params.add(query.parentRun, 'uuid')}`);
  if (query.referenceExample?.length) where.push(`r.reference_example_id = ANY(${params.add(query.referenceExample, 'uuid[]')})`);
  if (query.runType) where.push(`r.run_type = ${params.add(query.runType)}`);
  const isRoot = query.isRoot ?? (query.executionOrder === 1 ? true : undefined);
  if (isRoot !== undefined && isRoot !== null) where.push(isRoot ? 'r.is_root' : 'NOT r.is_root');
  if (query.error !== undefined && query.error !== null) where.push(query.error ? 'r.error IS NOT NULL' : 'r.error IS NULL');
  if (query.startTime) where.push(`r.start_time >= ${params.add(query.startTime.toISOString(), 'timestamptz')}`);
  if (query.endTime) where.push(`r.start_time < ${params.add(query.endTime.toISOString(), 'timestamptz')}`);
  if (query.query) {
    const pattern = params.add(`%${query.query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    where.push(`(r.name ILIKE ${pattern} OR r.error ILIKE ${pattern} OR r.inputs::text ILIKE ${pattern} OR r.outputs::text ILIKE ${pattern})`);
  }
  if (query.filter) where.push(compileFilter(query.filter, 'r', params));
  if (query.traceFilter) {
    where.push(
      `EXISTS (SELECT 1 FROM trace_runs root WHERE root.tenant_id = r.tenant_id AND root.id = r.trace_id AND ${compileFilter(query.traceFilter, 'root', params)})`,
    );
  }
  if (query.treeFilter) {
    where.push(
      `EXISTS (SELECT 1 FROM trace_runs node WHERE node.tenant_id = r.tenant_id AND node.trace_id = r.trace_id AND ${compileFilter(query.treeFilter, 'node', params)})`,
    );
  }
  const ascending = query.order === 'asc';
  if (query.cursor) {
    const [startTime, id] = decodeCursor(query.cursor);
    where.push(`(r.start_time, r.id) ${ascending ? '>' : '<'} (${params.add(startTime, 'timestamptz')}, ${params.add(id, 'uuid')})`);
  }
  const limit = query.limit ?? 100;
  const direction = ascending ? 'ASC' : 'DESC';
  const { rows } = await ctx.db.pool
    .query<TraceRunRow>(
      `SELECT ${selectList(query.select)} FROM trace_runs r WHERE ${where.join(' AND ')}
        ORDER BY r.start_time ${direction}, r.id ${direction} LIMIT ${limit + 1}`,
      params.values,
    )
    .catch((error: unknown) => {
      // A filter value PostgreSQL cannot represent (a date out of range, say) is the caller's input.
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && code.startsWith('22')) throw AppError.badRequest(`Invalid filter value: ${(error as Error).message}`);
      throw error;
    });
  const more = rows.length > limit;
  const runs = more ? rows.slice(0, limit) : rows;
  const last = runs[runs.length - 1];
  return { runs, nextCursor: more && last ? encodeCursor(last.startTime, last.id) : null };
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
