// Ingest's writes of trace runs: the INSERT of posted runs (ids claimed in trace_run_ids in the same
// statement: a duplicate row is left out, so INSERT … RETURNING omits it), the patches of stored runs,
// patches kept for runs not stored yet, attachments, and the provisional traces of runs whose parent
// may follow (awaited parents, adoption), with the parent lookups ingest derives a run's place from.
// trace_runs is partitioned by week of start_time: each run id's start_time in trace_run_ids prunes a
// patch or lookup by id to one partition.
import type pg from 'pg';
import { deriveStatus, type JsonbValue, toJsonb, toText } from './derive.js';
import { afterRunsStoredCtes } from './ingest-hooks.js';
import type { Ingester, NormalizedPatch, NormalizedRun, RunAttachment } from './ingest-types.js';
import { hasUsage, USAGE_COLUMNS, type UsageContribution, withDescendants } from './usage-rollups.store.js';

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
export async function adoptOrphans(client: pg.PoolClient, tenantId: string, adopters: Adopter[], sessionId?: string): Promise<UsageContribution[]> {
  const { rows } = await client.query<OwnUsageRow & { id: string; ancestors: string[] }>({
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
         RETURNING r.id, x.parent_run_ids AS ancestors, ${OWN_USAGE_SELECT('r')}),
       awaited AS (DELETE FROM trace_run_awaited_parents a USING x WHERE a.tenant_id = $1 AND a.parent_id = x.id)
     SELECT * FROM adopted WHERE own_total_tokens IS NOT NULL OR own_total_cost IS NOT NULL`,
    values: [tenantId, JSON.stringify(adopters), sessionId ?? null],
  });
  // Their usage is now owed to the adopter's ancestors too (the adopter itself already had it).
  return rows.map((row) => ({ from: row.id, ancestors: row.ancestors ?? [], usage: ownUsage((column) => row[`own_${column}`]) }));
}

type OwnUsageRow = Record<`own_${(typeof USAGE_COLUMNS)[number][0]}`, number | null>;

/** `own_total_tokens, …` of `table`'s row. */
const OWN_USAGE_SELECT = (table: string) => USAGE_COLUMNS.map(([column]) => `${table}.own_${column}`).join(', ');

/** A Usage from a row's values, by column name. */
function ownUsage(value: (column: (typeof USAGE_COLUMNS)[number][0]) => unknown): UsageContribution['usage'] {
  const usage: Record<string, number | null> = {};
  for (const [column, , key] of USAGE_COLUMNS) {
    const amount = value(column);
    usage[key] = amount === null || amount === undefined ? null : Number(amount);
  }
  return usage as UsageContribution['usage'];
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
  // A run's own usage; the columns above hold its total, its descendants' in the same INSERT added.
  ...USAGE_COLUMNS.map(([column, type]) => [`own_${column}`, type] as const),
  ['first_token_time', 'timestamptz'],
  ['api_key_id', 'uuid'],
  ['user_id', 'uuid'],
] as const;

/** Each per-row column's value of a run (RUN_COLUMNS' other three come from the ingester: PER_REQUEST). */
const ROW_VALUE: Record<string, (run: NormalizedRun) => unknown> = {
  id: (run) => run.id,
  session_id: (run) => run.sessionId,
  trace_id: (run) => run.traceId,
  parent_run_id: (run) => run.parentRunId,
  parent_run_ids: (run) => run.parentRunIds,
  reference_example_id: (run) => run.referenceExampleId,
  name: (run) => run.name,
  run_type: (run) => run.runType,
  start_time: (run) => run.startTime,
  end_time: (run) => run.endTime,
  status: (run) => deriveStatus(run.error, run.endTime),
  is_root: (run) => run.parentRunId === null,
  dotted_order: (run) => run.dottedOrder,
  trace_tier: (run) => run.traceTier,
  thread_id: (run) => run.threadId,
  inputs: (run) => run.inputs,
  outputs: (run) => run.outputs,
  error: (run) => run.error,
  extra: (run) => run.extra,
  events: (run) => run.events,
  serialized: (run) => run.serialized,
  tags: (run) => run.tags,
  first_token_time: (run) => run.firstTokenTime,
};
for (const [column, , key] of USAGE_COLUMNS) {
  ROW_VALUE[column] = (run) => withDescendants(run.usage[key], run.descendantUsage?.[key] ?? null);
  ROW_VALUE[`own_${column}`] = (run) => run.usage[key];
}

/** The column values of one run, in RUN_COLUMNS order (the ingest benchmark's VALUES-list form). */
export function runRowValues(run: NormalizedRun, who: Ingester): unknown[] {
  return RUN_COLUMNS.map(([name]) =>
    name === 'tenant_id' ? who.workspaceId : name === 'api_key_id' ? (who.apiKeyId ?? null) : name === 'user_id' ? (who.userId ?? null) : ROW_VALUE[name]!(run),
  );
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
    INSERT INTO trace_runs (${columns}) SELECT v.* FROM v WHERE v.id IN (SELECT id FROM claimed) ${returning}`;
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

/** An array column's value as one element of the text[] its column is sent as: `"{…}"`, its inner quotes escaped. */
function nestedArrayElement(values: string[], bare: boolean): string {
  // UUIDs need no quotes inside; text without quotes or backslashes needs its quotes escaped once.
  if (bare) return `"{${values.join(',')}}"`;
  if (!values.some(needsEscape)) return values.length ? `"{\\"${values.join('\\",\\"')}\\"}"` : '"{}"';
  return arrayElement(arrayLiteral(values));
}

const needsEscape = (value: string) => value.includes('"') || value.includes('\\');

/** How one column's value is written as an element of its parameter's array literal. */
type Cell = (run: NormalizedRun) => string;
const bare = (value: unknown) => (value === null ? 'NULL' : String(value));

// By column type: UUIDs, numbers and booleans go bare (they hold no character an array literal
// quotes), text and timestamps quoted (arrayElement). JSON columns are not sent so (jsonbArray).
const ELEMENT_OF_TYPE: Record<string, (value: unknown) => string> = {
  uuid: bare,
  integer: bare,
  float8: bare,
  boolean: (value) => (value ? 't' : 'f'),
  'uuid[]': (value) => nestedArrayElement(value as string[], true),
  'text[]': (value) => nestedArrayElement(value as string[], false),
};
const CELLS: Record<string, Cell> = Object.fromEntries(
  PER_ROW.filter(([, type]) => type !== 'jsonb').map(([name, type]) => {
    const value = ROW_VALUE[name]!;
    const element = ELEMENT_OF_TYPE[type] ?? arrayElement;
    return [name, (run: NormalizedRun) => element(value(run))];
  }),
);

/**
 * Parameters of insertRunsUnnestSql for these runs: three per-request values, then one per column.
 * Every column goes as one string (an array literal, or a JSON array for jsonb) built here column by
 * column: handing node-postgres JS arrays makes it escape every element with two regular expressions,
 * and these are 29 columns × every run of every request. Each literal is one join, a flat string the
 * driver encodes as it is (a string grown by += is a rope it would flatten first).
 */
export function runColumnArrays(runs: NormalizedRun[], who: Ingester): unknown[] {
  const params: unknown[] = [who.workspaceId, who.apiKeyId ?? null, who.userId ?? null];
  const items: string[] = new Array<string>(runs.length);
  for (const [name, type] of PER_ROW) {
    if (type === 'jsonb') {
      params.push(jsonbArray(runs, ROW_VALUE[name] as (run: NormalizedRun) => JsonbValue | null));
      continue;
    }
    if (!runs.length) {
      params.push('{}');
      continue;
    }
    const cell = CELLS[name]!;
    for (let r = 0; r < runs.length; r++) items[r] = cell(runs[r]!);
    items[0] = `{${items[0]}`;
    items[runs.length - 1] += '}';
    params.push(items.join(','));
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

/** One jsonb parameter: the JSON array of a column of the runs, in jsonb's binary format. */
function jsonbArray(runs: NormalizedRun[], cell: (run: NormalizedRun) => JsonbValue | null): Buffer {
  const pieces: Buffer[] = [JSONB_VERSION_1, OPEN];
  for (let r = 0; r < runs.length; r++) {
    const value = cell(runs[r]!);
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
 * Applies (merged) patches to stored runs in one statement; returns the ids it found, and the changes
 * of their own usage, owed to their ancestors (rollUpUsage, in the caller's transaction). Each run's
 * start time from trace_run_ids prunes its update to one partition (at execution, per joined row).
 * With `sessionId`, only runs of that project are patched (a project-bound key's patches).
 */
export async function applyPatches(
  client: pg.PoolClient,
  tenantId: string,
  patches: NormalizedPatch[],
  sessionId?: string,
): Promise<{ patched: Set<string>; contributions: UsageContribution[] }> {
  if (!patches.length) return { patched: new Set(), contributions: [] };
  // In id order: the statement locks the runs in the order of its values, so two requests patching
  // the same runs lock them in the same order and one waits for the other instead of deadlocking.
  const inIdOrder = patches.toSorted((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const { rows } = await client.query<{ id: string; parent_run_ids: string[] | null } & Record<`delta_${string}`, number | null>>(
    applyPatchesStatement(tenantId, inIdOrder, sessionId),
  );
  const contributions: UsageContribution[] = [];
  for (const row of rows) {
    if (!row.parent_run_ids?.length) continue;
    const usage = ownUsage((column) => row[`delta_${column}`]);
    if (hasUsage(usage)) contributions.push({ from: row.id, ancestors: row.parent_run_ids, usage });
  }
  return { patched: new Set(rows.map((row) => row.id)), contributions };
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
  const inProject = sessionId ? ` AND t.session_id = $${values.length + 2}::uuid` : '';
  // Usage is per LLM run; a patch does not carry the run type, so the row decides. A patch's usage
  // replaces the run's own; its total keeps what its descendants added (total - own before).
  const replaces = `t.run_type = 'llm' AND p.total_tokens IS NOT NULL`;
  const usage = (column: string) =>
    `own_${column} = CASE WHEN ${replaces} THEN p.${column} ELSE t.own_${column} END,
       ${column} = CASE WHEN NOT (${replaces}) THEN t.${column}
                        WHEN p.${column} IS NULL AND t.${column} IS NOT DISTINCT FROM t.own_${column} THEN NULL
                        ELSE COALESCE(p.${column}, 0) + COALESCE(t.${column} - COALESCE(t.own_${column}, 0), 0) END`;
  // The change of own usage, owed to the ancestors: before from old, whose rows the statement
  // locked first, so the UPDATE's rows are those same versions.
  const delta = (column: string) =>
    `CASE WHEN u.own_${column} IS NULL AND old.own_${column} IS NULL THEN NULL ELSE COALESCE(u.own_${column}, 0) - COALESCE(old.own_${column}, 0) END AS delta_${column}`;
  return {
    // Each patched row is found by its id's start time, one lookup per id (LATERAL, as findParentRunsSql:
    // a plain join lets the planner scan every partition for the ids), and locked there.
    text: `WITH old AS (
       SELECT p.*, r.start_time, ${OWN_USAGE_SELECT('r')}
         FROM (VALUES ${valuesClause(patches.length, PATCH_COLUMNS)}) AS p(${PATCH_COLUMNS.map(([name]) => name).join(',')})
         JOIN trace_run_ids i ON i.tenant_id = ${tenantParam}::uuid AND i.id = p.id
         CROSS JOIN LATERAL (SELECT t.start_time, ${OWN_USAGE_SELECT('t')} FROM trace_runs t
                              WHERE t.tenant_id = i.tenant_id AND t.id = i.id AND t.start_time = i.start_time${inProject} LIMIT 1 FOR UPDATE) r),
     u AS (UPDATE trace_runs AS t SET
       end_time = COALESCE(p.end_time, t.end_time),
       inputs = COALESCE(p.inputs, t.inputs),
       outputs = COALESCE(p.outputs, t.outputs),
       error = COALESCE(p.error, t.error),
       extra = CASE WHEN p.extra IS NULL THEN t.extra ELSE COALESCE(t.extra, '{}'::jsonb) || p.extra END,
       events = COALESCE(p.events, t.events),
       serialized = COALESCE(p.serialized, t.serialized),
       tags = COALESCE(p.tags, t.tags),
       ${USAGE_COLUMNS.map(([column]) => usage(column)).join(',\n       ')},
       first_token_time = COALESCE(t.first_token_time, p.first_token_time),
       thread_id = COALESCE(p.thread_id, t.thread_id),
       status = CASE WHEN COALESCE(p.error, t.error) IS NOT NULL THEN 'error'
                     WHEN COALESCE(p.end_time, t.end_time) IS NOT NULL THEN 'success' ELSE 'pending' END,
       updated_at = now()
     FROM old AS p
     WHERE t.tenant_id = ${tenantParam}::uuid AND t.id = p.id AND t.start_time = p.start_time
     RETURNING t.id, t.parent_run_ids, ${OWN_USAGE_SELECT('t')})
     SELECT u.id, u.parent_run_ids, ${USAGE_COLUMNS.map(([column]) => delta(column)).join(', ')} FROM u JOIN old ON old.id = u.id`,
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
    values: [tenantId, uuidArray(runIds)],
  });
  return !!probe.rowCount;
}

/**
 * UUIDs as one array literal, bare: the probe after every INSERT takes all its ids, and node-postgres
 * would quote and escape each with two regular expressions.
 */
const uuidArray = (ids: string[]) => `{${ids.join(',')}}`;

type PendingRow = { id: string; run_id: string; session_id: string | null; payload: Record<string, unknown>; usage_delta: Record<string, number> | null };

/**
 * Removes and returns, in arrival order, the kept patches of these runs whose run is now stored (in
 * the patch's project, for a patch confined to one: another project's run by that id never gets it),
 * and the descendants' usage waiting for them (usage_delta set, payload empty).
 */
export async function takePendingPatchesOfStoredRuns(
  client: pg.PoolClient,
  tenantId: string,
  runIds: string[],
): Promise<PendingRow[]> {
  const { rows } = await client.query<PendingRow>(
    `DELETE FROM trace_run_pending_patches AS p
      WHERE p.tenant_id = $1 AND p.run_id = ANY($2::uuid[])
        AND EXISTS (SELECT 1 FROM trace_run_ids AS t WHERE t.tenant_id = p.tenant_id AND t.id = p.run_id
                      AND (p.session_id IS NULL
                           OR EXISTS (SELECT 1 FROM trace_runs AS r
                                       WHERE r.tenant_id = t.tenant_id AND r.id = t.id AND r.start_time = t.start_time AND r.session_id = p.session_id)))
      RETURNING p.id, p.run_id, p.session_id, p.payload, p.usage_delta`,
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
