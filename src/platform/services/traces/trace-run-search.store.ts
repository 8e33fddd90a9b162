// The runs query: the SQL of a search of trace runs (the filter language, keyset pages in either order)
// and how it is read. Every read of a project's runs is shaped so PostgreSQL reads a (tenant_id,
// session_id, …, start_time DESC, id DESC) index in order and stops after the page: one project as
// `session_id = $n` (`= ANY(array)` cannot be read in order), several as a LATERAL join of
// per-project limited scans merged by the outer ORDER BY. trace_runs is partitioned by week of
// start_time: newest-first reads walk the partitions newest first (an ordered Append) and stop after
// the page, in slices of time the partition layout gives (timeSlices). A search no index serves in
// order walks the project's index in windows (searchRuns).
import type pg from 'pg';
import { escapeLiteral } from 'pg';
import { compileFilter, type FilterNode, parseFilter, SqlParams } from './filter.js';
import { listTracePartitions, type TracePartition } from './trace-partitions.store.js';
import { isoSql, selectList, type TraceRunRow } from './trace-runs.store.js';

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
