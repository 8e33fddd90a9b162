// Reads of stored trace runs: the column lists every read of trace_runs returns, one run, children of
// runs, one trace's runs and the recent-trace stats of projects. The runs query (the filter language,
// keyset pages, partition by partition) is trace-run-search.store.ts; the exporter's read
// trace-run-export.store.ts; ingest's writes platform/ingest/ingest.store.ts; the partition layout
// trace-partitions.store.ts; what expires trace-retention.store.ts.
//
// Every read of a project's runs is shaped so PostgreSQL reads a (tenant_id, session_id, …,
// start_time DESC, id DESC) index in order and stops after the page. The indexes are declared on
// TraceRun in schema.prisma. trace_runs is partitioned by week of start_time (migration
// trace_runs_partitioned); a run id is unique per tenant through trace_run_ids, whose start_time prunes
// reads by id to one partition.
import type pg from 'pg';

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

/** The ISO 8601 text (microseconds, UTC) of a timestamptz column: how every read of trace runs returns a time. */
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

/** The columns a read returns: every light one, and the heavy JSON ones `select` names (all of them without it). */
export function selectList(select: string[] | null | undefined): string {
  const heavy = select ? Object.keys(HEAVY_COLUMNS).filter((name) => select.includes(name)) : Object.keys(HEAVY_COLUMNS);
  return [...BASE_COLUMNS, ...heavy.map((name) => HEAVY_COLUMNS[name]!)].join(', ');
}

/** The statement of findRun ($1 tenant, $2 run id): the run's start time, looked up first, prunes the scan to its partition. */
export const findRunSql = () =>
  `SELECT ${selectList(null)} FROM trace_runs r
    WHERE r.tenant_id = $1 AND r.id = $2 AND r.start_time = (SELECT i.start_time FROM trace_run_ids i WHERE i.tenant_id = $1 AND i.id = $2)`;

/** One run of a tenant, with all fields: its start time from trace_run_ids picks the one partition read. */
export async function findRun(pool: pg.Pool, tenantId: string, id: string): Promise<TraceRunRow | undefined> {
  const { rows } = await pool.query<TraceRunRow>(findRunSql(), [tenantId, id]);
  return rows[0];
}

/**
 * Runs of a tenant by id, with all fields, in no order: their start times, read from trace_run_ids
 * first, prune the read to the partitions that hold them.
 */
export async function findRuns(pool: pg.Pool, tenantId: string, ids: string[]): Promise<TraceRunRow[]> {
  // As text: a Date would drop the microseconds a start time may have.
  const claimed = await pool.query<{ startTime: string }>('SELECT start_time::text AS "startTime" FROM trace_run_ids WHERE tenant_id = $1 AND id = ANY($2::uuid[])', [tenantId, ids]);
  if (!claimed.rows.length) return [];
  const { rows } = await pool.query<TraceRunRow>(
    `SELECT ${selectList(null)} FROM trace_runs r WHERE r.tenant_id = $1 AND r.id = ANY($2::uuid[]) AND r.start_time = ANY($3::timestamptz[])`,
    [tenantId, ids, [...new Set(claimed.rows.map((row) => row.startTime))]],
  );
  return rows;
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

/**
 * Every run of one trace, in execution order, at most `limit`: the (tenant_id, trace_id) index's
 * entries, one probe per partition (trace_id does not prune partitions).
 */
export async function findTraceRuns(pool: pg.Pool, tenantId: string, traceId: string, limit: number): Promise<TraceRunRow[]> {
  const { rows } = await pool.query<TraceRunRow>(
    `SELECT ${selectList(null)} FROM trace_runs r WHERE r.tenant_id = $1 AND r.trace_id = $2 ORDER BY r.dotted_order LIMIT $3`,
    [tenantId, traceId, limit],
  );
  return rows;
}

export type RecentTraceStats = { traces: number; errors: number; latencyP50: number | null; latencyP99: number | null };

/**
 * Error count and latency percentiles of each project's newest `sample` root runs: one limited scan of
 * the (tenant_id, session_id, is_root, start_time) index per project, so the cost stays flat however
 * many runs a project holds (a project of 100k runs reads `sample` rows, not 100k).
 */
export async function selectRecentTraceStats(pool: pg.Pool, tenantId: string, projectIds: string[], sample: number): Promise<Map<string, RecentTraceStats>> {
  const { rows } = await pool.query<{ id: string; traces: number; errors: number; p50: number | null; p99: number | null }>(
    `SELECT project.id, stats.traces, stats.errors, stats.p50, stats.p99 FROM unnest($2::uuid[]) AS project(id)
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS traces, (count(*) FILTER (WHERE recent.status = 'error'))::int AS errors,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY recent.latency) AS p50,
               percentile_cont(0.99) WITHIN GROUP (ORDER BY recent.latency) AS p99
          FROM (SELECT r.status, EXTRACT(EPOCH FROM (r.end_time - r.start_time))::float8 AS latency FROM trace_runs r
                 WHERE r.tenant_id = $1 AND r.session_id = project.id AND r.is_root
                 ORDER BY r.start_time DESC, r.id DESC LIMIT $3) recent
      ) stats`,
    [tenantId, projectIds, sample],
  );
  return new Map(rows.map((row) => [row.id, { traces: row.traces, errors: row.errors, latencyP50: row.p50, latencyP99: row.p99 }]));
}
