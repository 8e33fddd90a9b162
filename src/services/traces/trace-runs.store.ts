// SQL on trace_runs for reading: the column lists, one run, children of runs, and the runs query.
// Every read of a project's runs is shaped so PostgreSQL reads a (tenant_id, session_id, …,
// start_time DESC, id DESC) index in order and stops after the page: one project as `session_id = $n`
// (`= ANY(array)` cannot be read in order), several as a LATERAL join of per-project limited scans
// merged by the outer ORDER BY. The indexes are declared on TraceRun in schema.prisma.
import type pg from 'pg';
import { compileFilter, SqlParams } from './filter.js';

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

export const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

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
  `${isoSql('r.start_time')} AS "startTime"`,
  `${isoSql('r.end_time')} AS "endTime"`,
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
  `${isoSql('r.first_token_time')} AS "firstTokenTime"`,
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

/** One run of a tenant, with all fields (primary key). */
export async function findRun(pool: pg.Pool, tenantId: string, id: string): Promise<TraceRunRow | undefined> {
  const { rows } = await pool.query<TraceRunRow>(`SELECT ${selectList(null)} FROM trace_runs r WHERE r.tenant_id = $1 AND r.id = $2`, [tenantId, id]);
  return rows[0];
}

/** The direct children of the parents (ids) within their traces, in execution order. */
export async function findChildRuns(pool: pg.Pool, tenantId: string, traceIds: string[], parentIds: string[]): Promise<TraceRunRow[]> {
  // trace_id narrows the scan to the traces' entries of the (tenant_id, trace_id) index; parent_run_id picks the children.
  const { rows } = await pool.query<TraceRunRow>(
    `SELECT ${selectList(null)} FROM trace_runs r
      WHERE r.tenant_id = $1 AND r.trace_id = ANY($2::uuid[]) AND r.parent_run_id = ANY($3::uuid[]) ORDER BY r.dotted_order`,
    [tenantId, traceIds, parentIds],
  );
  return rows;
}

/** The runs query as the store takes it: validated, in the viewer's workspace, filters as filter-language text. */
export type RunSearch = {
  sessions?: string[] | null;
  ids?: string[] | null;
  trace?: string | null;
  parentRun?: string | null;
  referenceExamples?: string[] | null;
  runType?: string | null;
  isRoot?: boolean | null;
  error?: boolean | null;
  /** start_time ≥ startTime and < endTime. */
  startTime?: Date | null;
  endTime?: Date | null;
  /** Case-insensitive substring of name, error, inputs or outputs. */
  text?: string | null;
  filter?: string | null;
  traceFilter?: string | null;
  treeFilter?: string | null;
  select?: string[] | null;
  ascending: boolean;
  /** Keyset position: rows strictly after (start time, id) in the query's order. */
  after?: { startTime: string; id: string } | null;
  /** Rows to read (the caller asks one more than a page to know whether more follow). */
  limit: number;
};

/**
 * The runs query's SQL (exported so the plan tests can EXPLAIN exactly what runs). Throws FilterError
 * for a malformed filter.
 */
export function runSearchSql(tenantId: string, search: RunSearch): { text: string; values: unknown[] } {
  const params = new SqlParams([tenantId]);
  const where = ['r.tenant_id = $1'];
  if (search.ids?.length) where.push(`r.id = ANY(${params.add(search.ids, 'uuid[]')})`);
  if (search.trace) where.push(`r.trace_id = ${params.add(search.trace, 'uuid')}`);
  if (search.parentRun) where.push(`r.parent_run_id = ${params.add(search.parentRun, 'uuid')}`);
  if (search.referenceExamples?.length) where.push(`r.reference_example_id = ANY(${params.add(search.referenceExamples, 'uuid[]')})`);
  if (search.runType) where.push(`r.run_type = ${params.add(search.runType)}`);
  if (search.isRoot !== undefined && search.isRoot !== null) where.push(search.isRoot ? 'r.is_root' : 'NOT r.is_root');
  if (search.error !== undefined && search.error !== null) where.push(search.error ? 'r.error IS NOT NULL' : 'r.error IS NULL');
  if (search.startTime) where.push(`r.start_time >= ${params.add(search.startTime.toISOString(), 'timestamptz')}`);
  if (search.endTime) where.push(`r.start_time < ${params.add(search.endTime.toISOString(), 'timestamptz')}`);
  if (search.text) {
    const pattern = params.add(`%${search.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    where.push(`(r.name ILIKE ${pattern} OR r.error ILIKE ${pattern} OR r.inputs::text ILIKE ${pattern} OR r.outputs::text ILIKE ${pattern})`);
  }
  if (search.filter) where.push(compileFilter(search.filter, 'r', params));
  if (search.traceFilter) {
    where.push(
      `EXISTS (SELECT 1 FROM trace_runs root WHERE root.tenant_id = r.tenant_id AND root.id = r.trace_id AND ${compileFilter(search.traceFilter, 'root', params)})`,
    );
  }
  if (search.treeFilter) {
    where.push(
      `EXISTS (SELECT 1 FROM trace_runs node WHERE node.tenant_id = r.tenant_id AND node.trace_id = r.trace_id AND ${compileFilter(search.treeFilter, 'node', params)})`,
    );
  }
  if (search.after) {
    const { startTime, id } = search.after;
    where.push(`(r.start_time, r.id) ${search.ascending ? '>' : '<'} (${params.add(startTime, 'timestamptz')}, ${params.add(id, 'uuid')})`);
  }
  const direction = search.ascending ? 'ASC' : 'DESC';
  const limit = Math.floor(search.limit);
  const sessions = [...new Set(search.sessions ?? [])];
  if (sessions.length > 1) {
    // One limited, in-order index scan per project, merged. The ISO text of start_time sorts as the time does.
    const projects = params.add(sessions, 'uuid[]');
    return {
      text: `SELECT r.* FROM unnest(${projects}) AS project(id)
               CROSS JOIN LATERAL (
                 SELECT ${selectList(search.select)} FROM trace_runs r
                  WHERE ${[...where, 'r.session_id = project.id'].join(' AND ')}
                  ORDER BY r.start_time ${direction}, r.id ${direction} LIMIT ${limit}
               ) r
              ORDER BY r."startTime" COLLATE "C" ${direction}, r.id ${direction} LIMIT ${limit}`,
      values: params.values,
    };
  }
  if (sessions.length === 1) where.push(`r.session_id = ${params.add(sessions[0], 'uuid')}`);
  return {
    text: `SELECT ${selectList(search.select)} FROM trace_runs r WHERE ${where.join(' AND ')}
            ORDER BY r.start_time ${direction}, r.id ${direction} LIMIT ${limit}`,
    values: params.values,
  };
}

/** Runs matching a search, in its order, at most `limit`. */
export async function searchRuns(pool: pg.Pool, tenantId: string, search: RunSearch): Promise<TraceRunRow[]> {
  const { rows } = await pool.query<TraceRunRow>(runSearchSql(tenantId, search));
  return rows;
}
