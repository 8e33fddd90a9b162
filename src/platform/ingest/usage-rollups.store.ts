// Token and cost roll-ups: a run's usage columns (total_tokens … completion_cost) hold its own usage
// (own_*, an LLM run's) plus that of every stored descendant, as LangSmith shows a trace's root and
// each parent. Kept at write time, so reads stay a row's columns: whatever changes a run's own usage
// (its INSERT, a patch, its adoption under further ancestors) passes the change on to the ancestors it
// names in parent_run_ids, in the same transaction: into the totals of ancestors the same INSERT
// writes (foldUsageIntoAncestors), by an UPDATE of those stored before. An ancestor not stored yet gets it when it comes:
// the amount waits in trace_run_pending_patches (usage_delta), taken by the same sweep as early
// patches, so whichever of the two requests commits last applies it.
import type pg from 'pg';
import type { Usage } from './derive.js';
import type { NormalizedRun } from './ingest-types.js';

/** A change of run `from`'s own usage, owed to each of `ancestors` (amounts may be negative: a patch lowered it). */
export type UsageContribution = { from: string; ancestors: string[]; usage: Usage };

const USAGE_KEYS = ['totalTokens', 'promptTokens', 'completionTokens', 'totalCost', 'promptCost', 'completionCost'] as const;

/** The usage columns, each with its own_* twin and its key in Usage. */
export const USAGE_COLUMNS = [
  ['total_tokens', 'integer', 'totalTokens'],
  ['prompt_tokens', 'integer', 'promptTokens'],
  ['completion_tokens', 'integer', 'completionTokens'],
  ['total_cost', 'float8', 'totalCost'],
  ['prompt_cost', 'float8', 'promptCost'],
  ['completion_cost', 'float8', 'completionCost'],
] as const;

/** Whether a change carries any amount (a run without usage, or a patch that left it as it was, owes nothing). */
export function hasUsage(usage: Usage): boolean {
  // A loop rather than .some with a closure over `usage`: asked of every run stored.
  for (const key of USAGE_KEYS) if (usage[key] !== null && usage[key] !== 0) return true;
  return false;
}

/** A total: its own amount plus its descendants', NULL where neither has any (as addColumnSql adds). */
export const withDescendants = (own: number | null, descendants: number | null): number | null =>
  descendants === null ? own : (own ?? 0) + descendants;

function addUsage(sum: Usage | undefined, usage: Usage, sign = 1): Usage {
  const next = { ...(sum ?? usage) };
  for (const key of USAGE_KEYS) {
    const amount = usage[key] === null ? null : sign * usage[key]!;
    next[key] = sum === undefined ? amount : amount === null ? sum[key] : (sum[key] ?? 0) + amount;
  }
  return next;
}

/** A run's usage added to an ancestor that the same INSERT stores (foldUsageIntoAncestors). */
export type Fold = { from: NormalizedRun; to: NormalizedRun };

/**
 * Adds each run's own usage to its ancestors that the same INSERT stores (their descendantUsage, which
 * the INSERT writes into their totals), so a batch of whole traces (the SDKs' usual batch) updates no
 * row it has just written. Such an UPDATE rewrote the row in every index (the project index covers the
 * token columns: no update of them is HOT), and was most of what ingest cost PostgreSQL, growing with
 * the table (bench harness: 310 → 933 µs per run over 30,000 runs; 51 flat without usage). An id the
 * runs hold twice takes part in no fold. Returns the folds, which settleFolds checks against the runs
 * the INSERT stored.
 */
export function foldUsageIntoAncestors(runs: NormalizedRun[]): Fold[] {
  const byId = new Map<string, NormalizedRun | null>();
  for (const run of runs) {
    run.descendantUsage = undefined;
    byId.set(run.id, byId.has(run.id) ? null : run);
  }
  const folds: Fold[] = [];
  for (const run of runs) {
    if (!run.parentRunIds.length || !hasUsage(run.usage) || !byId.get(run.id)) continue;
    for (const ancestorId of new Set(run.parentRunIds)) {
      const ancestor = byId.get(ancestorId);
      if (!ancestor || ancestor === run) continue;
      ancestor.descendantUsage = addUsage(ancestor.descendantUsage, run.usage);
      folds.push({ from: run, to: ancestor });
    }
  }
  return folds;
}

/**
 * The usage the runs just stored still owe their ancestors (`inserted`: the ids the INSERT stored; a
 * duplicate, not stored, owes nothing again): to those the INSERT did not store (stored before, or not
 * yet), and back from an ancestor it stored the amount folded into it from a run it left out (that
 * run's stored twin gave its own already, or its waiting amount is swept in after this commit).
 */
export function settleFolds(runs: NormalizedRun[], inserted: Set<string>, folds: Fold[]): UsageContribution[] {
  const foldedFrom = new Map<NormalizedRun, Set<string>>();
  const owed: UsageContribution[] = [];
  for (const { from, to } of folds) {
    if (!inserted.has(to.id)) continue; // passed on below, as if never folded
    let folded = foldedFrom.get(from);
    if (!folded) foldedFrom.set(from, (folded = new Set()));
    folded.add(to.id);
    if (!inserted.has(from.id)) owed.push({ from: from.id, ancestors: [to.id], usage: addUsage(undefined, from.usage, -1) });
  }
  for (const run of runs) {
    if (!run.parentRunIds.length || !inserted.has(run.id) || !hasUsage(run.usage)) continue;
    const folded = foldedFrom.get(run);
    const ancestors = folded ? run.parentRunIds.filter((id) => !folded.has(id)) : run.parentRunIds;
    if (ancestors.length) owed.push({ from: run.id, ancestors, usage: run.usage });
  }
  return owed;
}

/** `column = column + d.column`, keeping NULL (no usage of that kind) where nothing of it was added. */
const addColumnSql = (target: string, delta: string) => (column: string) =>
  `${column} = CASE WHEN ${delta}.${column} IS NULL THEN ${target}.${column} ELSE COALESCE(${target}.${column}, 0) + ${delta}.${column} END`;

/** Sums contributions per ancestor, in id order (the order rows are locked in, as applyPatches does). */
function perAncestor(contributions: UsageContribution[]): Record<string, number | string | null>[] {
  const sums = new Map<string, Record<string, number | null>>();
  for (const { ancestors, usage } of contributions) {
    if (!hasUsage(usage)) continue;
    for (const ancestor of new Set(ancestors)) {
      let sum = sums.get(ancestor);
      if (!sum) sums.set(ancestor, (sum = Object.fromEntries(USAGE_COLUMNS.map(([column]) => [column, null]))));
      for (const [column, , key] of USAGE_COLUMNS) {
        const amount = usage[key];
        if (amount !== null) sum[column] = (sum[column] ?? 0) + amount;
      }
    }
  }
  return [...sums.keys()].sort().map((id) => ({ id, ...sums.get(id) }));
}

/**
 * The CTEs `d` (the amounts per run id, parameters from `$first` on: a VALUES list, whose row count the planner knows,
 * where a JSON recordset's guessed 100 rows made it scan every partition of trace_runs, checked in
 * run-query-plans.test.ts) and `s` (those of stored runs, with each one's start time, materialized so the UPDATE
 * reads one partition per run).
 */
function deltasCtes(deltas: Record<string, number | string | null>[], first: number): { ctes: string; values: unknown[] } {
  const columns = [['id', 'uuid'], ...USAGE_COLUMNS.map(([column, type]) => [column, type])] as const;
  const rows = deltas.map((_, row) => `(${columns.map(([, type], column) => `$${row * columns.length + column + first}::${type}`).join(',')})`);
  return {
    ctes: `d(${columns.map(([name]) => name).join(',')}) AS (VALUES ${rows.join(',')}),
       s AS MATERIALIZED (SELECT d.*, i.start_time FROM d JOIN trace_run_ids i ON i.tenant_id = $1 AND i.id = d.id)`,
    values: deltas.flatMap((delta) => columns.map(([name]) => delta[name] ?? null)),
  };
}

/**
 * Adds these changes of runs' own usage to their ancestors' totals; an ancestor not stored (in
 * `sessionId`'s project, when given: a project-bound key reaches no other) keeps its amount waiting
 * for it. One statement; the caller's transaction holds the change that caused it. Returns the
 * ancestors left waiting, which the caller sweeps after its commit (applyPendingPatches).
 */
export async function rollUpUsage(client: pg.PoolClient, tenantId: string, contributions: UsageContribution[], sessionId?: string): Promise<string[]> {
  // An adopted run under a root gains no ancestors: it owes nothing more.
  const owed = contributions.filter((contribution) => contribution.ancestors.length && hasUsage(contribution.usage));
  const waiting: string[] = [];
  // A statement's parameters are bounded (65,535; 7 per ancestor): a huge batch takes several.
  for (let start = 0, end = 0; start < owed.length; start = end) {
    let ancestors = 0;
    for (end = start; end < owed.length && (end === start || ancestors + owed[end]!.ancestors.length <= ANCESTORS_PER_STATEMENT); end++) ancestors += owed[end]!.ancestors.length;
    const { rows } = await client.query<{ run_id: string }>(rollUpUsageStatement(tenantId, owed.slice(start, end), sessionId));
    waiting.push(...rows.map((row) => row.run_id));
  }
  return waiting;
}

const ANCESTORS_PER_STATEMENT = 5000;

/** rollUpUsage's statement and values. */
export function rollUpUsageStatement(tenantId: string, contributions: UsageContribution[], sessionId?: string): { text: string; values: unknown[] } {
  const { ctes, values } = deltasCtes(perAncestor(contributions), 3);
  return {
    text: `WITH ${ctes},
       added AS (
         UPDATE trace_runs AS t SET ${USAGE_COLUMNS.map(([column]) => addColumnSql('t', 's')(column)).join(', ')}, updated_at = now()
           FROM s WHERE t.tenant_id = $1 AND t.id = s.id AND t.start_time = s.start_time AND ($2::uuid IS NULL OR t.session_id = $2::uuid)
          RETURNING t.id),
       waiting AS (
         INSERT INTO trace_run_pending_patches (tenant_id, session_id, run_id, payload, usage_delta)
         SELECT $1, $2::uuid, d.id, '{}'::jsonb, jsonb_strip_nulls(to_jsonb(d) - 'id') FROM d WHERE d.id NOT IN (SELECT id FROM added)
         RETURNING run_id)
     SELECT run_id FROM waiting`,
    values: [tenantId, sessionId ?? null, ...values],
  };
}

/**
 * Adds amounts that waited for these runs (descendants stored before them) to their totals only: each
 * descendant passed its amount on to its other ancestors itself.
 */
export async function addWaitingUsage(client: pg.PoolClient, tenantId: string, waiting: { runId: string; usageDelta: Record<string, number> }[]): Promise<void> {
  const contributions = waiting.map(({ runId, usageDelta }) => ({
    from: runId,
    ancestors: [runId],
    usage: Object.fromEntries(USAGE_COLUMNS.map(([column, , key]) => [key, typeof usageDelta[column] === 'number' ? usageDelta[column] : null])) as Usage,
  }));
  const all = perAncestor(contributions);
  for (let start = 0; start < all.length; start += ANCESTORS_PER_STATEMENT) {
    const { ctes, values } = deltasCtes(all.slice(start, start + ANCESTORS_PER_STATEMENT), 2);
    await client.query({
      text: `WITH ${ctes}
         UPDATE trace_runs AS t SET ${USAGE_COLUMNS.map(([column]) => addColumnSql('t', 's')(column)).join(', ')}, updated_at = now()
           FROM s WHERE t.tenant_id = $1 AND t.id = s.id AND t.start_time = s.start_time`,
      values: [tenantId, ...values],
    });
  }
}
