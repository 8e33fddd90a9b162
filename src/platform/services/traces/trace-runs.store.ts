// SQL on trace_runs (and the pending patches and attachments of ingestion): the column lists, the
// ingest insert and patch statements, one run, children of runs, the runs query and the exporter's read.
// Every read of a project's runs is shaped so PostgreSQL reads a (tenant_id, session_id, …,
// start_time DESC, id DESC) index in order and stops after the page: one project as `session_id = $n`
// (`= ANY(array)` cannot be read in order), several as a LATERAL join of per-project limited scans
// merged by the outer ORDER BY. The indexes are declared on TraceRun in schema.prisma.
//
// trace_runs is partitioned by week of start_time (migration trace_runs_partitioned): newest-first
// reads walk the partitions newest first (an ordered Append) and stop after the page; a run id is
// unique per tenant through trace_run_ids (every INSERT claims its ids there first, set-based in the
// same statement: a duplicate row is left out, so INSERT … RETURNING omits it), whose start_time
// prunes reads and patches by id to one partition.
import type pg from 'pg';
import { escapeLiteral } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { withTransaction } from '../../../db.js';
import { deriveStatus, type JsonbValue, toJsonb, toText } from './derive.js';
import { compileFilter, type FilterNode, parseFilter, SqlParams } from './filter.js';
import { afterRunsStoredCtes } from './ingest-hooks.js';
import type { Ingester, NormalizedPatch, NormalizedRun, RunAttachment } from '../../ingest/ingest-types.js';

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

const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

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
 * The statement of findParentRuns ($1 tenant, $2 run ids, and $3 the project when `inProject`): each
 * id's start time from trace_run_ids picks the one partition its row is read from (a lookup per id;
 * LIMIT 1 keeps it per id, where a plain join would let the planner scan every partition for the ids).
 */
export const findParentRunsSql = (inProject = false) =>
  `SELECT r.id, r.trace_id, r.dotted_order, r.parent_run_ids FROM trace_run_ids i
    CROSS JOIN LATERAL (SELECT r.id, r.trace_id, r.dotted_order, r.parent_run_ids FROM trace_runs r
                         WHERE r.tenant_id = i.tenant_id AND r.id = i.id AND r.start_time = i.start_time${inProject ? ' AND r.session_id = $3' : ''} LIMIT 1) r
    WHERE i.tenant_id = $1 AND i.id = ANY($2::uuid[])`;

/**
 * Where stored runs sit in their traces (ingest derives a child's dotted order from its parent's);
 * with `sessionId`, only runs of that project (a project-bound key sees no other).
 */
export async function findParentRuns(
  db: pg.Pool | pg.PoolClient,
  tenantId: string,
  ids: string[],
  sessionId?: string,
): Promise<{ id: string; trace_id: string; dotted_order: string; parent_run_ids: string[] | null }[]> {
  const { rows } = await db.query<{ id: string; trace_id: string; dotted_order: string; parent_run_ids: string[] | null }>({
    name: sessionId ? 'traces.find_parent_runs_in_project' : 'traces.find_parent_runs',
    text: findParentRunsSql(sessionId !== undefined),
    values: sessionId ? [tenantId, ids, sessionId] : [tenantId, ids],
  });
  return rows;
}

/** A stored run whose provisional descendants (trace_id = its id) are rewritten under it. */
export type Adopter = { id: string; trace_id: string; dotted_order: string; parent_run_ids: string[] };

/**
 * Rewrites the runs stored in a provisional trace named after an adopter (trace_id = its id, see
 * ingest.service.ts, parentsMayFollow) under that adopter: its trace id, its dotted order in place of
 * the provisional first segment, its ancestors before theirs. Runs already under it are left alone.
 * The adopters are no longer awaited: their rows in trace_run_awaited_parents go in the same statement
 * (a run stored provisionally after this statement's snapshot finds its parent stored when it checks
 * after its own commit, and adopts itself). One statement; the (tenant_id, trace_id) index finds each
 * adopter's runs. With `sessionId`, only runs of that project are adopted (a project-bound key's).
 */
export async function adoptOrphans(client: pg.PoolClient | pg.Pool, tenantId: string, adopters: Adopter[], sessionId?: string): Promise<number> {
  const { rows } = await client.query<{ adopted: number }>({
    name: 'traces.adopt_orphans',
    text: `WITH x AS (SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, trace_id uuid, dotted_order text, parent_run_ids uuid[])),
       adopted AS (
         UPDATE trace_runs AS r SET
           trace_id = x.trace_id,
           dotted_order = x.dotted_order || substr(r.dotted_order, strpos(r.dotted_order, x.id::text) + 36),
           parent_run_ids = x.parent_run_ids || r.parent_run_ids,
           updated_at = now()
         FROM x
         WHERE r.tenant_id = $1 AND r.trace_id = x.id AND r.id <> x.id AND NOT starts_with(r.dotted_order, x.dotted_order || '.')
           AND ($3::uuid IS NULL OR r.session_id = $3::uuid)
         RETURNING 1),
       awaited AS (DELETE FROM trace_run_awaited_parents a USING x WHERE a.tenant_id = $1 AND a.parent_id = x.id)
     SELECT count(*)::int AS adopted FROM adopted`,
    values: [tenantId, JSON.stringify(adopters), sessionId ?? null],
  });
  return rows[0]!.adopted;
}

/**
 * Records that runs are about to be stored awaiting these parents (in provisional traces named after
 * them). Committed before those runs are, so the parent's store, if it commits after them, finds the
 * row (awaitedParents) and adopts them.
 */
export async function awaitParents(client: pg.PoolClient, tenantId: string, parentIds: string[]): Promise<void> {
  await client.query({
    name: 'traces.await_parents',
    text: 'INSERT INTO trace_run_awaited_parents (tenant_id, parent_id) SELECT $1, p FROM unnest($2::uuid[]) AS p ON CONFLICT DO NOTHING',
    values: [tenantId, parentIds],
  });
}

/** Which of these runs provisional runs wait for: almost always none (one probe of a small table's key). */
export async function awaitedParents(client: pg.PoolClient, tenantId: string, ids: string[]): Promise<Set<string>> {
  const { rows } = await client.query<{ parent_id: string }>({
    name: 'traces.awaited_parents',
    text: 'SELECT parent_id FROM trace_run_awaited_parents WHERE tenant_id = $1 AND parent_id = ANY($2::uuid[])',
    values: [tenantId, ids],
  });
  return new Set(rows.map((row) => row.parent_id));
}

/**
 * Forgets awaited parents recorded before `horizon` (the longest retention): the runs that waited for
 * them are past retention too, and a parent that never came is not coming.
 */
export async function deleteAwaitedParentsBefore(pool: pg.Pool, horizon: Date): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM trace_run_awaited_parents WHERE created_at < $1', [horizon]);
  return rowCount ?? 0;
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
  /** Keyset position: rows up to and including (start time, id) in the query's order (a walk's window). */
  until?: { startTime: string; id: string } | null;
  /** Rows to read (the caller asks one more than a page to know whether more follow). */
  limit: number;
};

/**
 * A range of start_time, [from, to) (null: unbounded), that newest-first reads query separately: a run
 * of consecutive week partitions, or a range only the default partition holds. See timeSlices.
 */
export type TimeSlice = { from: Date | null; to: Date | null };

/** All of time in one slice: what a read without the partition layout at hand queries. */
export const ALL_TIME: TimeSlice[] = [{ from: null, to: null }];

/**
 * The slices `partitions` (oldest first) split time into: each run of consecutive week partitions, and
 * the ranges before, between and after them. PostgreSQL reads the partitions of a range-partitioned
 * table as an ordered Append (newest partition first, stopping once the LIMIT is met) only when the
 * default partition is pruned; with it in range it must merge the heads of every partition's scan (a
 * MergeAppend starts each one: at 10M, 40 partitions' index descents for a page of 100). A slice whose
 * bounds the weeks cover exactly prunes the default partition when planned, so each slice is ordered.
 * `eachPartition`: every partition a slice of its own (for reads no index returns in order, see
 * searchRuns).
 */
export function timeSlices(partitions: TracePartition[], eachPartition = false): TimeSlice[] {
  const slices: TimeSlice[] = [];
  let edge: Date | null = null;
  for (let i = 0; i < partitions.length; ) {
    let j = i;
    while (!eachPartition && j + 1 < partitions.length && partitions[j + 1]!.from.getTime() === partitions[j]!.to.getTime()) j++;
    if (edge?.getTime() !== partitions[i]!.from.getTime()) slices.push({ from: edge, to: partitions[i]!.from });
    slices.push({ from: partitions[i]!.from, to: partitions[j]!.to });
    edge = partitions[j]!.to;
    i = j + 1;
  }
  slices.push({ from: edge, to: null });
  return slices;
}

// The layout changes at most hourly (a new week, a dropped one); a stale layout only costs a slice
// its ordered read (the slices always cover all of time), never a row.
const PARTITIONS_TTL_MS = 60_000;
const partitionsOfPool = new WeakMap<pg.Pool, { at: number; partitions: Promise<TracePartition[]> }>();

/** trace_runs's week partitions, read from the catalog at most once a minute per pool. */
function cachedTracePartitions(pool: pg.Pool): Promise<TracePartition[]> {
  const cached = partitionsOfPool.get(pool);
  if (cached && performance.now() - cached.at < PARTITIONS_TTL_MS) return cached.partitions;
  const partitions = listTracePartitions(pool);
  partitionsOfPool.set(pool, { at: performance.now(), partitions });
  partitions.catch(() => partitionsOfPool.delete(pool));
  return partitions;
}

/** timeSlices of trace_runs's partitions now (cached for a minute). */
async function traceTimeSlices(pool: pg.Pool, eachPartition = false): Promise<TimeSlice[]> {
  return timeSlices(await cachedTracePartitions(pool), eachPartition);
}

/** A slice's bounds as SQL on `r.start_time`, literals rather than parameters so planning prunes partitions by them even in a generic plan. */
function sliceConditions(slice: TimeSlice): string[] {
  return [
    ...(slice.from ? [`r.start_time >= ${escapeLiteral(slice.from.toISOString())}::timestamptz`] : []),
    ...(slice.to ? [`r.start_time < ${escapeLiteral(slice.to.toISOString())}::timestamptz`] : []),
  ];
}

/**
 * One SELECT per slice (`select(conditions)`, each ordered and limited on its own), their rows merged
 * in the query's order by the text of "startTime" (ISO, so it sorts as the time does) and id. Slices
 * are read to at most `limit` rows each; the default partition's slices are normally empty.
 */
function acrossSlices(slices: TimeSlice[], direction: string, limit: number, select: (conditions: string[]) => string): string {
  if (slices.length === 1) return select(sliceConditions(slices[0]!));
  return `SELECT * FROM (${slices.map((slice) => `(${select(sliceConditions(slice))})`).join(' UNION ALL ')}) page
           ORDER BY page."startTime" COLLATE "C" ${direction}, page.id ${direction} LIMIT ${limit}`;
}

/**
 * The key `window` rows on along a project's index from where `conditions` start, across `slices` in
 * order (index-only reads). The rows are ordered by their columns and only the one returned gets its
 * ISO text: merging the slices by the text (as acrossSlices does) made and sorted the text of every
 * row walked. At 1M runs the edge of a 10,000-row window took 22-25 ms that way and of a 40,000-row
 * window 94-115 ms; this way 2.5-5.7 and 15 ms.
 */
function windowEdgeSql(slices: TimeSlice[], direction: string, window: number, conditions: string[]): string {
  const select = (slice: TimeSlice) =>
    `(SELECT r.start_time, r.id FROM trace_runs r WHERE ${[...conditions, ...sliceConditions(slice)].join(' AND ')}
       ORDER BY r.start_time ${direction}, r.id ${direction} LIMIT ${window})`;
  // The text is made outside the OFFSET: PostgreSQL computes a query's output columns for the rows an
  // OFFSET skips too.
  return `SELECT ${isoSql('edge.start_time')} AS "startTime", edge.id FROM (
            SELECT page.start_time, page.id FROM (${slices.map(select).join(' UNION ALL ')}) page
             ORDER BY page.start_time ${direction}, page.id ${direction} OFFSET ${window - 1} LIMIT 1) edge`;
}

/**
 * The runs query's SQL (exported so the plan tests can EXPLAIN exactly what runs), over `slices` of
 * time (traceTimeSlices; the whole table as one by default). Throws FilterError for a malformed filter.
 */
export function runSearchSql(tenantId: string, search: RunSearch, slices: TimeSlice[] = ALL_TIME): { text: string; values: unknown[] } {
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
  where.push(...keysetConditions(search, params));
  const direction = search.ascending ? 'ASC' : 'DESC';
  const limit = Math.floor(search.limit);
  const sessions = [...new Set(search.sessions ?? [])];
  if (sessions.length > 1) {
    // One limited, in-order index scan per project, merged. The ISO text of start_time sorts as the time does.
    const projects = params.add(sessions, 'uuid[]');
    return {
      text: acrossSlices(
        slices,
        direction,
        limit,
        (range) => `SELECT r.* FROM unnest(${projects}) AS project(id)
               CROSS JOIN LATERAL (
                 SELECT ${selectList(search.select)} FROM trace_runs r
                  WHERE ${[...where, ...range, 'r.session_id = project.id'].join(' AND ')}
                  ORDER BY r.start_time ${direction}, r.id ${direction} LIMIT ${limit}
               ) r
              ORDER BY r."startTime" COLLATE "C" ${direction}, r.id ${direction} LIMIT ${limit}`,
      ),
      values: params.values,
    };
  }
  if (sessions.length === 1 && filtersByMetadata(search)) {
    // As text, which no index serves: otherwise the planner ANDs a bitmap of the project's whole
    // partition (from a project index) into the GIN index's few matches (715 of 969 buffers at 1M).
    where.push(`r.session_id::text = ${params.add(sessions[0], 'uuid')}::text`);
  } else if (sessions.length === 1) where.push(`r.session_id = ${params.add(sessions[0], 'uuid')}`);
  if (sessions.length === 1 && projectIndexCovers(search)) {
    // The page's keys from an index-only scan of the project index, whose keys hold every column the
    // filter reads (a latency or token range): rows the filter skips are never fetched. Then the page's
    // rows by primary key, each pruned to its partition by its start time. (The lookup is outside the
    // slices: planned once, not once per slice, which cost 100 ms of planning at 1M.)
    const keys = acrossSlices(
      slices,
      direction,
      limit,
      (range) => `SELECT r.id, r.start_time, ${isoSql('r.start_time')} AS "startTime" FROM trace_runs r WHERE ${[...where, ...range].join(' AND ')}
                   ORDER BY r.start_time ${direction}, r.id ${direction} LIMIT ${limit}`,
    );
    return {
      text: `SELECT ${selectList(search.select)} FROM trace_runs r
               JOIN (${keys}) page ON r.tenant_id = $1 AND r.id = page.id AND r.start_time = page.start_time
              ORDER BY r.start_time ${direction}, r.id ${direction}`,
      values: params.values,
    };
  }
  return {
    text: acrossSlices(
      slices,
      direction,
      limit,
      (range) => `SELECT ${selectList(search.select)} FROM trace_runs r WHERE ${[...where, ...range].join(' AND ')}
            ORDER BY r.start_time ${direction}, r.id ${direction} LIMIT ${limit}`,
    ),
    values: params.values,
  };
}

/**
 * The keyset conditions of `after` and `until`: the row comparison that pages, and start_time alone
 * beside it, which PostgreSQL can prune partitions by (it does not prune by a row comparison).
 */
function keysetConditions(search: Pick<RunSearch, 'after' | 'until' | 'ascending'>, params: SqlParams): string[] {
  const conditions: string[] = [];
  if (search.after) {
    const time = params.add(search.after.startTime, 'timestamptz');
    const [before, notAfter] = search.ascending ? ['>', '>='] : ['<', '<='];
    conditions.push(`(r.start_time, r.id) ${before} (${time}, ${params.add(search.after.id, 'uuid')})`, `r.start_time ${notAfter} ${time}`);
  }
  if (search.until) {
    const time = params.add(search.until.startTime, 'timestamptz');
    const upTo = search.ascending ? '<=' : '>=';
    conditions.push(`(r.start_time, r.id) ${upTo} (${time}, ${params.add(search.until.id, 'uuid')})`, `r.start_time ${upTo} ${time}`);
  }
  return conditions;
}

export type RunKey = { startTime: string; id: string };

/**
 * Runs matching a search, in its order, at most `limit`. A search of one project that no index serves
 * in order (a filter on latency, tokens, error text, inputs, a search, a trace or tree filter, not/or …)
 * walks the project's index in windows of rows, newest first, and stops once it has the page or its
 * time budget is spent: then `walkedTo` is the last key it looked at, where the next page carries on
 * (so a filter that matches nothing answers an empty page quickly instead of reading the project).
 */
export async function searchRuns(
  pool: pg.Pool,
  tenantId: string,
  search: RunSearch,
  walk: { firstWindow?: number; budgetMs?: number } = {},
): Promise<{ rows: TraceRunRow[]; walkedTo?: RunKey }> {
  // Projects' runs in the order an index gives them: partition by partition (see searchPartitionsInTurn).
  if (filtersByMetadata(search) || (search.sessions?.length && indexServes(search))) return { rows: await searchPartitionsInTurn(pool, tenantId, search) };
  const slices = await traceTimeSlices(pool);
  // Not one project (a trace, ids, or several projects with a filter no index serves): one statement.
  if (search.sessions?.length !== 1) {
    const { rows } = await pool.query<TraceRunRow>(runSearchSql(tenantId, search, slices));
    return { rows };
  }
  const started = performance.now();
  const direction = search.ascending ? 'ASC' : 'DESC';
  const rows: TraceRunRow[] = [];
  let after = search.after ?? null;
  for (let window = walk.firstWindow ?? WALK_FIRST_WINDOW; ; window = Math.min(window * 2, WALK_MAX_WINDOW)) {
    // The window's far edge: `window` rows on along the project's index (an index-only scan).
    const params = new SqlParams([tenantId, search.sessions[0]]);
    const keyset = keysetConditions({ after, ascending: search.ascending }, params);
    const { rows: edges } = await pool.query<RunKey>(windowEdgeSql(slices, direction, window, ['r.tenant_id = $1', 'r.session_id = $2::uuid', ...keyset]), params.values);
    const until = edges[0] ?? null;
    const { rows: found } = await pool.query<TraceRunRow>(runSearchSql(tenantId, { ...search, after, until, limit: search.limit - rows.length }, slices));
    rows.push(...found);
    // Done: the page is full, or the window reached the end of the project.
    if (rows.length >= search.limit || !until) return { rows };
    after = until;
    if (performance.now() - started >= (walk.budgetMs ?? WALK_BUDGET_MS)) return { rows, walkedTo: until };
  }
}

/**
 * A search of projects read partition by partition in the query's order: a statement for the first
 * partition, the next, then two, four … (the default partition's ranges and partitions the catalog
 * counts empty, such as the weeks ahead, go with the next), until the page is full. Each group's rows
 * all come before the next group's, so they are concatenated in order.
 * - Planning: PostgreSQL plans every partition a statement names (about 0.2 ms each with the table's
 *   nine indexes), so one statement over all of them cost 7-15 ms of planning at 10M (40 partitions)
 *   for a 1-3 ms execution; the newest page is usually in the first one or two.
 * - A metadata key and value (compiled to `extra @>`, which the GIN index on extra serves): PostgreSQL
 *   reads a GIN index as a bitmap of the partition's matches, in no order, so one statement over many
 *   partitions bitmap-scans them all and sorts (34 of 40 partitions at 10M).
 * A group is one SELECT over its time span, not one per partition: planning the six partitions of the
 * weeks ahead and the default one as one span cost 1.1 ms, as six ordered SELECTs 2.6 ms. Slices the
 * search's time range or keyset cursor excludes are not read at all.
 */
async function searchPartitionsInTurn(pool: pg.Pool, tenantId: string, search: RunSearch): Promise<TraceRunRow[]> {
  const partitions = await cachedTracePartitions(pool);
  const slices = timeSlices(partitions, true).filter((slice) => mayHold(slice, search));
  const filled = new Set(partitions.filter((partition) => !partition.empty).map((partition) => partition.from.getTime()));
  if (!search.ascending) slices.reverse();
  const rows: TraceRunRow[] = [];
  for (let start = 0, size = 1, group = 0; start < slices.length && rows.length < search.limit; group++, size = Math.max(1, 2 ** (group - 1))) {
    let end = start;
    for (let counted = 0; end < slices.length && counted < size; end++) if (slices[end]!.from && filled.has(slices[end]!.from!.getTime())) counted++;
    const { rows: found } = await pool.query<TraceRunRow>(runSearchSql(tenantId, { ...search, limit: search.limit - rows.length }, [span(slices.slice(start, end))]));
    rows.push(...found);
    start = end;
  }
  return rows;
}

/** The slice from the first of `slices` (consecutive) to the last. */
function span(slices: TimeSlice[]): TimeSlice {
  const from = slices.map((slice) => slice.from);
  const to = slices.map((slice) => slice.to);
  return {
    from: from.includes(null) ? null : new Date(Math.min(...from.map((time) => time!.getTime()))),
    to: to.includes(null) ? null : new Date(Math.max(...to.map((time) => time!.getTime()))),
  };
}

/** Whether `slice` (start times from ≤ t < to) can hold a run the search's time range and keyset cursor let through. */
function mayHold(slice: TimeSlice, search: RunSearch): boolean {
  const from = slice.from?.getTime() ?? -Infinity;
  const to = slice.to?.getTime() ?? Infinity;
  if (search.startTime && to <= search.startTime.getTime()) return false;
  if (search.endTime && from >= search.endTime.getTime()) return false;
  if (search.after) {
    const after = Date.parse(search.after.startTime);
    if (search.ascending ? to <= after : from > after) return false;
  }
  return true;
}

/** Whether the search filters by a metadata key and value (see searchPartitionsInTurn). */
function filtersByMetadata(search: RunSearch): boolean {
  if (!search.filter || search.sessions?.length !== 1) return false;
  const metadata = (node: FilterNode): boolean => {
    if (node.type === 'and') return node.args.some(metadata);
    return node.type === 'cmp' && (node.field.name === 'metadata_key' || node.field.name === 'metadata_value') && node.op === 'eq';
  };
  try {
    return metadata(parseFilter(search.filter));
  } catch {
    return false; // a malformed filter fails in compileFilter with its own error
  }
}

// Windows of 10,000 rows growing to 40,000 (tens of milliseconds each at most), and a walk stops once
// 100 ms are spent, so an unindexable filter that matches little answers its page in well under
// 200 ms, a page at a time. (Larger windows overshot the budget by a whole window at a million runs.)
const WALK_FIRST_WINDOW = 10_000;
const WALK_MAX_WINDOW = 40_000;
const WALK_BUDGET_MS = 100;

// Filter fields whose eq/has/in an index serves together with the project's time order.
const INDEXED_FIELDS = new Set(['name', 'status', 'run_type', 'is_root', 'tags', 'id', 'trace_id', 'session_id', 'start_time']);

// Filter fields the project index (tenant_id, session_id, start_time, id, end_time, total_tokens,
// prompt_tokens, completion_tokens) holds as keys: a filter on these alone is checked in the index.
const PROJECT_INDEX_FIELDS = new Set(['latency', 'end_time', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'start_time', 'id', 'session_id']);

/** Whether a search of one project filters on nothing but columns the project index holds (and has a filter). */
function projectIndexCovers(search: RunSearch): boolean {
  if (!search.filter || search.ids?.length || search.trace || search.parentRun || search.referenceExamples?.length || search.runType) return false;
  if ((search.isRoot ?? null) !== null || (search.error ?? null) !== null || search.text || search.traceFilter || search.treeFilter) return false;
  const covered = (node: FilterNode): boolean => {
    if (node.type === 'and' || node.type === 'or') return node.args.every(covered);
    if (node.type === 'not') return covered(node.arg);
    return 'field' in node && node.field !== null && PROJECT_INDEX_FIELDS.has(node.field.name);
  };
  try {
    return covered(parseFilter(search.filter));
  } catch {
    return false; // a malformed filter fails in compileFilter with its own error
  }
}

/** Whether the search's conditions are all ones an index serves in order (no walk needed). */
function indexServes(search: RunSearch): boolean {
  if (search.text || search.traceFilter || search.treeFilter || (search.error !== undefined && search.error !== null)) return false;
  if (!search.filter) return true;
  try {
    return filterIndexServed(parseFilter(search.filter));
  } catch {
    return true; // a malformed filter fails in compileFilter with its own error
  }
}

function filterIndexServed(node: FilterNode): boolean {
  if (node.type === 'and') return node.args.every(filterIndexServed);
  if (node.type !== 'cmp') return false;
  if (node.field.name === 'metadata_key' || node.field.name === 'metadata_value') return node.op === 'eq';
  if (!INDEXED_FIELDS.has(node.field.name)) return false;
  return node.field.name === 'start_time' || node.op === 'eq' || node.op === 'has' || node.op === 'in';
}

// ───────────────────────────── the exporter's read ─────────────────────────────

/**
 * One batch of an export run's trace runs after `cursor`, in (start_time, id) order: keyset paging on
 * the (tenant_id, session_id, start_time, id) index, read by binary COPY (the exporter decodes the
 * bytes straight into Arrow columns, see exports/parquet.ts). Each row is the columns followed by the
 * row's `start_time` and `id`, its cursor. The batch is every row up to `upTo` (inclusive; from
 * runBatchBoundary) or, without it, the rest of the range: bounded by keys rather than a LIMIT, so
 * batches planned ahead and read at once meet exactly. The bytes are written into `into` when it is
 * large enough (the returned buffer is a view of it, or of a larger one that replaced it).
 */
export async function copyRunBatch(
  pool: pg.Pool,
  scope: RunBatchScope,
  columns: readonly { sql: string }[],
  cursor: RunBatchCursor,
  upTo: RunBatchCursor,
  into?: Buffer,
): Promise<Buffer> {
  const client = await pool.connect();
  try {
    // Into `into` (grown when too small) rather than a fresh buffer per batch: first touching the pages
    // of a fresh multi-megabyte buffer costs more than the copy (see exports/parquet.ts, DecodeArena).
    let target = into ?? Buffer.allocUnsafe(1 << 20);
    let length = 0;
    for await (const chunk of client.query(copyTo(`COPY (${runBatchSelect(scope, columns, cursor, upTo)}) TO STDOUT (FORMAT binary)`))) {
      const bytes = chunk as Buffer;
      if (length + bytes.length > target.length) {
        // By half, not double: a batch is sized to about the exporter's batch bytes, and a doubled
        // buffer would hold up to twice that for the rest of the run.
        const bigger = Buffer.allocUnsafe(Math.max(Math.ceil(target.length * 1.5), length + bytes.length));
        target.copy(bigger, 0, 0, length);
        target = bigger;
      }
      bytes.copy(target, length);
      length += bytes.length;
    }
    client.release();
    return target.subarray(0, length);
  } catch (error) {
    // A COPY stopped halfway leaves the connection mid-protocol: it is closed, not reused.
    client.release(error as Error);
    throw error;
  }
}

type RunBatchScope = { tenantId: string; sessionId: string; start: Date; end: Date; filter: string | null };
type RunBatchCursor = { start_time: string; id: string } | null | undefined;

/** The SELECT of one export batch, values inlined (COPY takes no bind parameters); bench:export profiles it alone too. */
export function runBatchSelect(scope: RunBatchScope, columns: readonly { sql: string }[], cursor: RunBatchCursor, upTo: RunBatchCursor): string {
  const params = new SqlParams();
  const conditions = runBatchConditions(scope, cursor, params);
  if (upTo) conditions.push(`(r.start_time, r.id) <= (${params.add(upTo.start_time)}::timestamptz, ${params.add(upTo.id)}::uuid)`);
  const select = `SELECT ${columns.map((column) => column.sql).join(', ')}, r.start_time, r.id
                    FROM trace_runs r
                   WHERE ${conditions.join(' AND ')}
                   ORDER BY r.start_time, r.id`;
  return inlineParams(select, params.values);
}

/**
 * The (start_time, id) of the `rows`-th run after `cursor`, the end of a batch of `rows` runs; null
 * when fewer remain. Reads only the index's keys (and the filter's columns), so the exporter can plan
 * its next batches before the current one has arrived.
 */
export async function runBatchBoundary(pool: pg.Pool, scope: RunBatchScope, cursor: RunBatchCursor, rows: number): Promise<{ start_time: string; id: string } | null> {
  const params = new SqlParams();
  const conditions = runBatchConditions(scope, cursor, params);
  const { rows: found } = await pool.query<{ start_time: string; id: string }>(
    // Formatted outside: in the inner SELECT to_char would run on every row skipped by the OFFSET.
    `SELECT to_char(k.start_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS start_time, k.id::text AS id
       FROM (SELECT r.start_time, r.id
               FROM trace_runs r
              WHERE ${conditions.join(' AND ')}
              ORDER BY r.start_time, r.id
             OFFSET ${Number(rows) - 1} LIMIT 1) AS k`,
    params.values,
  );
  return found[0] ?? null;
}

function runBatchConditions(scope: RunBatchScope, cursor: RunBatchCursor, params: SqlParams): string[] {
  const conditions = [
    `r.tenant_id = ${params.add(scope.tenantId)}::uuid`,
    `r.session_id = ${params.add(scope.sessionId)}::uuid`,
    `r.start_time >= ${params.add(scope.start.toISOString())}::timestamptz`,
    `r.start_time < ${params.add(scope.end.toISOString())}::timestamptz`,
  ];
  if (cursor) conditions.push(`(r.start_time, r.id) > (${params.add(cursor.start_time)}::timestamptz, ${params.add(cursor.id)}::uuid)`);
  if (scope.filter) conditions.push(`(${compileFilter(scope.filter, 'r', params)})`);
  return conditions;
}

/**
 * COPY takes no bind parameters, so the values go into the statement as quoted literals. An untyped
 * literal is what an untyped parameter is to PostgreSQL; each placeholder keeps its `::cast`. Values
 * are what the filter compiler and this store bind: strings, numbers, booleans and arrays of them.
 */
function inlineParams(sql: string, values: unknown[]): string {
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'NULL';
    if (Array.isArray(value)) {
      return escapeLiteral(`{${value.map((item) => (item == null ? 'NULL' : `"${String(item).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`);
    }
    if (value instanceof Date) return escapeLiteral(value.toISOString());
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return escapeLiteral(String(value));
    throw new Error(`cannot inline a ${typeof value} into COPY`);
  };
  // Placeholders are only ever written by SqlParams: user text reaches this SQL as values, never inline.
  return sql.replace(/\$(\d+)/g, (_, index: string) => literal(values[Number(index) - 1]));
}

// ───────────────────────────── ingestion ─────────────────────────────

/** Runs per INSERT statement: bounds the size of one statement's parameters (the SDK sends batches of about 100). */
export const RUNS_PER_INSERT = 1500;


const RUN_COLUMNS = [
  ['tenant_id', 'uuid'],
  ['id', 'uuid'],
  ['session_id', 'uuid'],
  ['trace_id', 'uuid'],
  ['parent_run_id', 'uuid'],
  ['parent_run_ids', 'uuid[]'],
  ['reference_example_id', 'uuid'],
  ['name', 'text'],
  ['run_type', 'text'],
  ['start_time', 'timestamptz'],
  ['end_time', 'timestamptz'],
  ['status', 'text'],
  ['is_root', 'boolean'],
  ['dotted_order', 'text'],
  ['trace_tier', 'text'],
  ['thread_id', 'text'],
  ['inputs', 'jsonb'],
  ['outputs', 'jsonb'],
  ['error', 'text'],
  ['extra', 'jsonb'],
  ['events', 'jsonb'],
  ['serialized', 'jsonb'],
  ['tags', 'text[]'],
  ['total_tokens', 'integer'],
  ['prompt_tokens', 'integer'],
  ['completion_tokens', 'integer'],
  ['total_cost', 'float8'],
  ['prompt_cost', 'float8'],
  ['completion_cost', 'float8'],
  ['first_token_time', 'timestamptz'],
  ['api_key_id', 'uuid'],
  ['user_id', 'uuid'],
] as const;

/** The column values of one run, in RUN_COLUMNS order (also used by the ingest benchmark's raw ceiling). */
export function runRowValues(run: NormalizedRun, who: Ingester): unknown[] {
  return [
    who.workspaceId,
    run.id,
    run.sessionId,
    run.traceId,
    run.parentRunId,
    run.parentRunIds,
    run.referenceExampleId,
    run.name,
    run.runType,
    run.startTime,
    run.endTime,
    deriveStatus(run.error, run.endTime),
    run.parentRunId === null,
    run.dottedOrder,
    run.traceTier,
    run.threadId,
    run.inputs,
    run.outputs,
    run.error,
    run.extra,
    run.events,
    run.serialized,
    run.tags,
    run.usage.totalTokens,
    run.usage.promptTokens,
    run.usage.completionTokens,
    run.usage.totalCost,
    run.usage.promptCost,
    run.usage.completionCost,
    run.firstTokenTime,
    who.apiKeyId ?? null,
    who.userId ?? null,
  ];
}

const valuesClause = (rows: number, columns: readonly (readonly [string, string])[]) => {
  const width = columns.length;
  const parts: string[] = [];
  for (let row = 0; row < rows; row++) {
    parts.push(`(${columns.map(([, type], column) => `$${row * width + column + 1}::${type}`).join(',')})`);
  }
  return parts.join(',');
};

/** The multi-row INSERT of runs as VALUES lists, for `rows` rows, claiming their ids as ingest does (the benchmark compares it). */
export function insertRunsSql(rows: number, returning = 'RETURNING id'): string {
  const columns = RUN_COLUMNS.map(([name]) => name).join(',');
  return `WITH v(${columns}) AS (VALUES ${valuesClause(rows, RUN_COLUMNS)}),
    claimed AS (INSERT INTO trace_run_ids (tenant_id, id, start_time) SELECT tenant_id, id, start_time FROM v ON CONFLICT DO NOTHING RETURNING id)
    INSERT INTO trace_runs (${columns}) SELECT * FROM v WHERE v.id IN (SELECT id FROM claimed) ${returning}`;
}

// The ingest INSERT: one parameter per column, zipped into rows by ROWS FROM. PostgreSQL plans it once
// per connection (a named prepared statement) whatever the batch size, where a VALUES list of 100
// rows × 32 columns is 3,200 parameters to parse and plan on every request (measured here: about
// 1.5× the rows/s). JSON columns travel as one JSON array each, in binary (no array-literal escaping
// of JSON text, no re-encoding: see jsonbArray); list columns as array literals.
const PER_REQUEST = new Set(['tenant_id', 'api_key_id', 'user_id']);
const ARRAY_COLUMNS = new Set(['parent_run_ids', 'tags']);
const PER_ROW = RUN_COLUMNS.filter(([name]) => !PER_REQUEST.has(name));

/** The INSERT … SELECT from the per-column parameters, without claim or RETURNING. */
function unnestInsertSql(): string {
  const select = RUN_COLUMNS.map(([name, type]) => {
    if (name === 'tenant_id') return '$1::uuid';
    if (name === 'api_key_id') return '$2::uuid';
    if (name === 'user_id') return '$3::uuid';
    if (type === 'jsonb') return `NULLIF(u.${name}, 'null'::jsonb)`;
    return ARRAY_COLUMNS.has(name) ? `u.${name}::${type}` : `u.${name}`;
  });
  const sources = PER_ROW.map(([name, type], i) => {
    const param = `$${i + 4}`;
    if (type === 'jsonb') return `jsonb_array_elements(${param}::jsonb)`;
    return `unnest(${param}::${ARRAY_COLUMNS.has(name) ? 'text' : type}[])`;
  });
  return `INSERT INTO trace_runs (${RUN_COLUMNS.map(([name]) => name).join(',')})
    SELECT ${select.join(',')} FROM ROWS FROM (${sources.join(',')}) AS u(${PER_ROW.map(([name]) => name).join(',')})`;
}

/** The INSERT of runs from per-column arrays (ingest's form, the benchmark's raw ceiling), claiming ids as `claim` says. */
export function insertRunsUnnestSql(returning = 'RETURNING id', claim: IdClaim = 'cte'): string {
  return claim === 'none' ? `${unnestInsertSql()} ${returning}` : `WITH ${claimIdsCte()} ${unnestInsertSql()} ${ONLY_CLAIMED} ${returning}`;
}

const ONLY_CLAIMED = 'WHERE u.id IN (SELECT id FROM claimed)';

/**
 * How an INSERT into trace_runs claims its ids in trace_run_ids: one CTE per statement (what the
 * platform does), or not at all (the benchmark's floor: no duplicate could be told).
 */
export type IdClaim = 'cte' | 'none';

/**
 * The CTE `claimed` that claims a batch's ids set-based: it inserts the batch's (tenant, id,
 * start_time) into trace_run_ids … ON CONFLICT DO NOTHING and returns the ids it claimed; only those
 * rows go into trace_runs.
 */
function claimIdsCte(): string {
  const param = (column: string) => `$${PER_ROW.findIndex(([name]) => name === column) + 4}`;
  return `claimed AS (INSERT INTO trace_run_ids (tenant_id, id, start_time)
      SELECT $1::uuid, c.id, c.start_time FROM unnest(${param('id')}::uuid[], ${param('start_time')}::timestamptz[]) AS c(id, start_time)
      ON CONFLICT DO NOTHING RETURNING id)`;
}

/**
 * The ingest statement: the INSERT above, plus what the hooks record about the runs it stored
 * (ingest-hooks.ts: usage's trace deltas), in one statement, so a batch of posts is one round trip
 * and one implicit transaction rather than BEGIN, INSERT, hooks, COMMIT. Returns the stored ids.
 */
export function insertRunsWithHooksSql(claim: IdClaim = 'cte'): string {
  // A duplicate id is left out of `claimed`, so RETURNING lists only the runs stored.
  const returning = 'RETURNING id, is_root, start_time, session_id';
  // Data-modifying CTEs must be at the top level: `claimed` beside `stored`, not inside it.
  const ctes = claim === 'none' ? [`stored AS (${unnestInsertSql()} ${returning})`] : [claimIdsCte(), `stored AS (${unnestInsertSql()} ${ONLY_CLAIMED} ${returning})`];
  return `WITH ${[...ctes, ...afterRunsStoredCtes('stored')].join(', ')} SELECT id FROM stored`;
}

const INSERT_RUNS_SQL = insertRunsWithHooksSql();

/** An element of a PostgreSQL array literal: NULL, or the text quoted (backslash and quote escaped). */
function arrayElement(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = typeof value === 'string' ? value : typeof value === 'boolean' ? (value ? 't' : 'f') : String(value);
  return text.includes('"') || text.includes('\\') ? `"${text.replace(/["\\]/g, (c) => `\\${c}`)}"` : `"${text}"`;
}

/** A PostgreSQL array literal of text values (for array columns sent through unnest). */
function arrayLiteral(values: string[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) out += (i ? ',' : '') + arrayElement(values[i]);
  return `${out}}`;
}

/**
 * Parameters of insertRunsUnnestSql for these runs: three per-request values, then one per column.
 * Every column goes as one string (an array literal, or a JSON array for jsonb) built here in one pass:
 * handing node-postgres JS arrays makes it escape every element with two regular expressions, and
 * these are 29 columns × every run of every request.
 */
export function runColumnArrays(runs: NormalizedRun[], who: Ingester): unknown[] {
  const rows = runs.map((run) => runRowValues(run, who));
  const params: unknown[] = [who.workspaceId, who.apiKeyId ?? null, who.userId ?? null];
  for (let index = 0; index < RUN_COLUMNS.length; index++) {
    const [name, type] = RUN_COLUMNS[index]!;
    if (PER_REQUEST.has(name)) continue;
    if (type === 'jsonb') {
      params.push(jsonbArray(rows, index));
      continue;
    }
    let out = '{';
    for (let r = 0; r < rows.length; r++) {
      const value = rows[r]![index];
      if (r) out += ',';
      if (ARRAY_COLUMNS.has(name)) out += arrayElement(arrayLiteral(value as string[]));
      else out += arrayElement(value);
    }
    params.push(`${out}}`);
  }
  return params;
}

// jsonb's binary input is a version byte (1) and the JSON text: a Buffer parameter goes to PostgreSQL
// in binary format, so a JSON column's array is assembled from the wire's bytes with one copy, where
// building it as a string meant decoding every part, concatenating, flattening and encoding it again.
const JSONB_VERSION_1 = Buffer.from([1]);
const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');
const NULL = Buffer.from('null');

/** One jsonb parameter: the JSON array of column `index` of the rows, in jsonb's binary format. */
function jsonbArray(rows: unknown[][], index: number): Buffer {
  const pieces: Buffer[] = [JSONB_VERSION_1, OPEN];
  for (let r = 0; r < rows.length; r++) {
    const value = rows[r]![index] as JsonbValue | null;
    if (r) pieces.push(COMMA);
    pieces.push(value === null ? NULL : typeof value === 'string' ? Buffer.from(value) : value);
  }
  pieces.push(CLOSE);
  return Buffer.concat(pieces);
}

/**
 * Stores runs (posts whose id is already stored are left as they are) with what the hooks record of
 * them; returns the ids stored. One statement per RUNS_PER_INSERT runs: callers that pass more, or write
 * anything else with them, wrap it in a transaction.
 */
export async function insertRuns(client: pg.PoolClient, who: Ingester, runs: NormalizedRun[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let start = 0; start < runs.length; start += RUNS_PER_INSERT) {
    const chunk = runs.slice(start, start + RUNS_PER_INSERT);
    const { rows } = await client.query<{ id: string }>({ name: 'traces.insert_runs', text: INSERT_RUNS_SQL, values: runColumnArrays(chunk, who) });
    for (const row of rows) inserted.add(row.id);
  }
  return inserted;
}

/**
 * `insert` (an INSERT INTO trace_runs … without RETURNING, of fresh ids: benchmark fills, tests) with
 * its runs' ids claimed in trace_run_ids in the same statement, as ingest's INSERT does; answers one
 * row, `stored`, the count. A taken id fails the statement (unique violation) rather than being skipped.
 */
export function insertClaimingIdsSql(insert: string): string {
  return `WITH stored AS (${insert} RETURNING tenant_id, id, start_time),
    claimed AS (INSERT INTO trace_run_ids (tenant_id, id, start_time) SELECT tenant_id, id, start_time FROM stored)
    SELECT count(*)::int AS stored FROM stored`;
}

const PATCH_COLUMNS = [
  ['id', 'uuid'],
  ['end_time', 'timestamptz'],
  ['inputs', 'jsonb'],
  ['outputs', 'jsonb'],
  ['error', 'text'],
  ['extra', 'jsonb'],
  ['events', 'jsonb'],
  ['serialized', 'jsonb'],
  ['tags', 'text[]'],
  ['total_tokens', 'integer'],
  ['prompt_tokens', 'integer'],
  ['completion_tokens', 'integer'],
  ['total_cost', 'float8'],
  ['prompt_cost', 'float8'],
  ['completion_cost', 'float8'],
  ['first_token_time', 'timestamptz'],
  ['thread_id', 'text'],
] as const;

/**
 * Applies (merged) patches to stored runs in one statement; returns the ids it found. Each run's start
 * time from trace_run_ids prunes its update to one partition (at execution, per joined row). With
 * `sessionId`, only runs of that project are patched (a project-bound key's patches).
 */
export async function applyPatches(client: pg.PoolClient | pg.Pool, tenantId: string, patches: NormalizedPatch[], sessionId?: string): Promise<Set<string>> {
  if (!patches.length) return new Set();
  // In id order: the statement locks the runs in the order of its values, so two requests patching
  // the same runs lock them in the same order and one waits for the other instead of deadlocking.
  const inIdOrder = patches.toSorted((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const { rows } = await client.query<{ id: string }>(applyPatchesStatement(tenantId, inIdOrder, sessionId));
  return new Set(rows.map((row) => row.id));
}

/** applyPatches's statement and values. */
export function applyPatchesStatement(tenantId: string, patches: NormalizedPatch[], sessionId?: string): { text: string; values: unknown[] } {
  const values = patches.flatMap((p) => [
    p.id,
    p.endTime,
    p.inputs,
    p.outputs,
    p.error,
    p.extra,
    p.events,
    p.serialized,
    p.tags,
    p.usage.totalTokens,
    p.usage.promptTokens,
    p.usage.completionTokens,
    p.usage.totalCost,
    p.usage.promptCost,
    p.usage.completionCost,
    p.firstTokenTime,
    p.threadId,
  ]);
  const tenantParam = `$${values.length + 1}`;
  // Usage is per LLM run; a patch does not carry the run type, so the row decides.
  const usage = (column: string) => `${column} = CASE WHEN t.run_type = 'llm' AND p.total_tokens IS NOT NULL THEN p.${column} ELSE t.${column} END`;
  return {
    text: `UPDATE trace_runs AS t SET
       end_time = COALESCE(p.end_time, t.end_time),
       inputs = COALESCE(p.inputs, t.inputs),
       outputs = COALESCE(p.outputs, t.outputs),
       error = COALESCE(p.error, t.error),
       extra = CASE WHEN p.extra IS NULL THEN t.extra ELSE COALESCE(t.extra, '{}'::jsonb) || p.extra END,
       events = COALESCE(p.events, t.events),
       serialized = COALESCE(p.serialized, t.serialized),
       tags = COALESCE(p.tags, t.tags),
       ${usage('total_tokens')}, ${usage('prompt_tokens')}, ${usage('completion_tokens')},
       ${usage('total_cost')}, ${usage('prompt_cost')}, ${usage('completion_cost')},
       first_token_time = COALESCE(t.first_token_time, p.first_token_time),
       thread_id = COALESCE(p.thread_id, t.thread_id),
       status = CASE WHEN COALESCE(p.error, t.error) IS NOT NULL THEN 'error'
                     WHEN COALESCE(p.end_time, t.end_time) IS NOT NULL THEN 'success' ELSE 'pending' END,
       updated_at = now()
     FROM (VALUES ${valuesClause(patches.length, PATCH_COLUMNS)}) AS p(${PATCH_COLUMNS.map(([name]) => name).join(',')})
       JOIN trace_run_ids i ON i.tenant_id = ${tenantParam}::uuid AND i.id = p.id
     WHERE t.tenant_id = ${tenantParam}::uuid AND t.id = p.id AND t.start_time = i.start_time${sessionId ? ` AND t.session_id = $${values.length + 2}::uuid` : ''}
     RETURNING t.id`,
    values: sessionId ? [...values, tenantId, sessionId] : [...values, tenantId],
  };
}

/** Keeps patches for runs not stored yet; with `sessionId`, each applies only to a run of that project. */
export async function deferPatches(client: pg.PoolClient, tenantId: string, patches: NormalizedPatch[], sessionId?: string): Promise<void> {
  const values = patches.map((_, i) => `($1::uuid, $2::uuid, $${i * 2 + 3}::uuid, $${i * 2 + 4}::jsonb)`).join(',');
  await client.query(`INSERT INTO trace_run_pending_patches (tenant_id, session_id, run_id, payload) VALUES ${values}`, [
    tenantId,
    sessionId ?? null,
    ...patches.flatMap((patch) => [patch.id, toJsonb(patch.raw)]),
  ]);
}

/** Whether patches wait for any of these runs (almost always not: one cheap indexed probe). */
export async function hasPendingPatches(client: pg.PoolClient, tenantId: string, runIds: string[]): Promise<boolean> {
  const probe = await client.query({
    name: 'traces.pending_probe',
    text: 'SELECT 1 FROM trace_run_pending_patches WHERE tenant_id = $1 AND run_id = ANY($2::uuid[]) LIMIT 1',
    values: [tenantId, runIds],
  });
  return !!probe.rowCount;
}

/**
 * Removes and returns, in arrival order, the kept patches of these runs whose run is now stored (in
 * the patch's project, for a patch confined to one: another project's run by that id never gets it).
 */
export async function takePendingPatchesOfStoredRuns(
  client: pg.PoolClient,
  tenantId: string,
  runIds: string[],
): Promise<{ id: string; run_id: string; payload: Record<string, unknown> }[]> {
  const { rows } = await client.query<{ id: string; run_id: string; payload: Record<string, unknown> }>(
    `DELETE FROM trace_run_pending_patches AS p
      WHERE p.tenant_id = $1 AND p.run_id = ANY($2::uuid[])
        AND EXISTS (SELECT 1 FROM trace_run_ids AS t WHERE t.tenant_id = p.tenant_id AND t.id = p.run_id
                      AND (p.session_id IS NULL
                           OR EXISTS (SELECT 1 FROM trace_runs AS r
                                       WHERE r.tenant_id = t.tenant_id AND r.id = t.id AND r.start_time = t.start_time AND r.session_id = p.session_id)))
      RETURNING p.id, p.run_id, p.payload`,
    [tenantId, runIds],
  );
  return rows.sort((a, b) => Number(a.id) - Number(b.id));
}

export async function insertAttachments(client: pg.PoolClient, tenantId: string, attachments: RunAttachment[]): Promise<void> {
  // Last one wins for a repeated name (the SDK re-sends attachments on retries).
  const byKey = new Map(attachments.map((a) => [`${a.runId}/${a.name}`, a]));
  const list = [...byKey.values()];
  const sqlValues = list.map((_, i) => `($1::uuid, $${i * 4 + 2}::uuid, $${i * 4 + 3}, $${i * 4 + 4}, $${i * 4 + 5}::bytea, length($${i * 4 + 5}::bytea))`).join(',');
  await client.query(
    `INSERT INTO trace_run_attachments (tenant_id, run_id, name, content_type, data, size) VALUES ${sqlValues}
     ON CONFLICT (tenant_id, run_id, name) DO UPDATE SET content_type = EXCLUDED.content_type, data = EXCLUDED.data, size = EXCLUDED.size, created_at = now()`,
    [tenantId, ...list.flatMap((a) => [a.runId.toLowerCase(), toText(a.name, 500), toText(a.contentType, 200), a.data])],
  );
}


// ───────────────────────────── partitions ─────────────────────────────

/** A weekly partition of trace_runs: its table and range [from, to). */
export type TracePartition = { name: string; from: Date; to: Date; /** No pages as of the last VACUUM or ANALYZE (a hint only). */ empty?: boolean };

/** The week partitions of trace_runs (not the default one), oldest first. */
export async function listTracePartitions(db: pg.Pool | pg.PoolClient): Promise<TracePartition[]> {
  const { rows } = await db.query<TracePartition>(
    `SELECT c.relname AS name, b[1]::timestamptz AS "from", b[2]::timestamptz AS "to", c.relpages = 0 AND c.reltuples <= 0 AS empty
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS b
      WHERE i.inhparent = 'trace_runs'::regclass AND b IS NOT NULL
      ORDER BY 2`,
  );
  return rows;
}

/**
 * Creates the week partitions of trace_runs from the week of `from` up to `to` that do not exist yet.
 * Runs of a week without a partition went to the default partition; they move into the new one (in the
 * same transaction: a partition cannot be attached while the default holds rows of its range). A
 * partition is attached rather than created in place, which locks the parent less.
 */
export async function createTracePartitions(pool: pg.Pool, from: Date, to: Date): Promise<string[]> {
  return withTransaction({ pool }, async (client) => {
    // One creator at a time (the schedule, a test, the benchmark's fill).
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('trace_runs partitions'))`);
    const existing = new Set((await listTracePartitions(client)).map((partition) => partition.from.getTime()));
    const { rows: weeks } = await client.query<{ week: Date }>(
      `SELECT week FROM generate_series(date_trunc('week', $1::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', $2::timestamptz - interval '1 microsecond', interval '1 week') AS week`,
      [from, to],
    );
    const created: string[] = [];
    for (const { week } of weeks) {
      if (existing.has(week.getTime())) continue;
      const name = `trace_runs_${week.toISOString().slice(0, 10).replaceAll('-', '')}`;
      const end = new Date(week.getTime() + 7 * 86_400_000);
      const [lower, upper] = [escapeLiteral(week.toISOString()), escapeLiteral(end.toISOString())];
      await client.query(`CREATE TABLE ${name} (LIKE trace_runs INCLUDING DEFAULTS INCLUDING STORAGE)`);
      // The default partition's rows of this week (a statement on the partition itself, so trace_runs's
      // delete trigger keeps their ids).
      await client.query(
        `WITH moved AS (DELETE FROM trace_runs_default WHERE start_time >= ${lower} AND start_time < ${upper} RETURNING *) INSERT INTO ${name} SELECT * FROM moved`,
      );
      await client.query(`ALTER TABLE trace_runs ATTACH PARTITION ${name} FOR VALUES FROM (${lower}) TO (${upper})`);
      created.push(name);
    }
    return created;
  });
}

/**
 * Drops the week partitions wholly before `horizon` (every workspace's retention has passed for all
 * their runs); returns their names, and those left `busy`. The ids of their runs are released by
 * deleteRunIdsBefore.
 *
 * Dropping a partition takes an ACCESS EXCLUSIVE lock on trace_runs itself, and while the drop waits
 * for it (behind a long read, an export) every query on trace_runs queues behind the drop. So each
 * attempt waits at most `lockTimeoutMs` (100 ms: the longest a query queues behind it), and a busy
 * partition is tried again after `pauseMs`, up to `attempts` times; a partition still busy then is left
 * for the next pass (still past the horizon then, so it goes then), and the pass carries on with the
 * others. (`DETACH PARTITION … CONCURRENTLY`, which would not block readers, is refused while
 * trace_runs has a default partition, and the default partition is where runs of a week without a
 * partition go.)
 */
export async function dropTracePartitionsBefore(
  pool: pg.Pool,
  horizon: Date,
  { lockTimeoutMs = 100, attempts = 10, pauseMs = 1_000 }: { lockTimeoutMs?: number; attempts?: number; pauseMs?: number } = {},
): Promise<{ dropped: string[]; busy: string[] }> {
  const dropped: string[] = [];
  const busy: string[] = [];
  for (const partition of await listTracePartitions(pool)) {
    if (partition.to.getTime() > horizon.getTime()) break;
    for (let attempt = 1; ; attempt++) {
      try {
        await withTransaction({ pool }, async (client) => {
          await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
          await client.query(`DROP TABLE ${partition.name}`);
        });
        dropped.push(partition.name);
        break;
      } catch (error) {
        // 55P03 lock_not_available: the lock timeout passed.
        if ((error as { code?: unknown }).code !== '55P03') throw error;
        if (attempt >= attempts) {
          busy.push(partition.name);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    }
  }
  return { dropped, busy };
}

/**
 * Deletes up to `limit` run ids that started before `horizon` (their runs were dropped with their
 * partition, or deleted), with those runs' attachments and waiting patches; returns how many.
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

// ───────────────────────────── retention ─────────────────────────────

/**
 * Deletes up to `limit` trace runs per project that started before their workspace's retention
 * (`trace_retention_days`, else `defaultDays`), with their attachments and waiting patches; returns
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
     )
     SELECT count(*)::int AS deleted FROM runs`,
    [defaultDays, limit, workspaceIds ?? null],
  );
  return rows[0]!.deleted;
}
