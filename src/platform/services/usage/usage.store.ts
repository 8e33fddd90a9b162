// The usage area's SQL: trace deltas appended by ingestion, the rollups they are folded into, the
// rebuild from raw runs, and the granular-usage read.
//
// Raw SQL throughout: the append rides the ingest transaction as one prepared statement, and the read
// is one aggregate whose p99 `npm run bench:usage` measures.
import type pg from 'pg';
import { inTransaction } from '../../../db.js';
import type { UsageDimension } from './usage.schemas.js';

/** Stands for "no user" or "no API key" in rollup keys (primary key columns cannot be NULL). */
export const NO_DIMENSION_ID = '00000000-0000-0000-0000-000000000000';

// Serialises folds with each other and with a rebuild (a rebuild must see no fold half-done).
const FOLD_LOCK = 7_362_114_001;

// ───────────────────────────── ingestion ─────────────────────────────

/**
 * The INSERT that appends the trace counts of one ingest statement, as a data-modifying CTE of it:
 * `storedRuns` names the statement's CTE of newly stored runs (is_root, start_time, session_id), and
 * $1, $2 and $3 are the workspace, API key and user of the request. Grouped by the UTC hour of the
 * root run's start and its project; no row is shared with any other request, so nothing waits.
 */
export function appendTraceDeltasSql(storedRuns: string): string {
  return `INSERT INTO usage_trace_deltas (workspace_id, hour, project_id, user_id, api_key_id, traces)
    SELECT $1::uuid, date_trunc('hour', s.start_time, 'UTC'), s.session_id, $3::uuid, $2::uuid, count(*)::int
      FROM ${storedRuns} AS s WHERE s.is_root
     GROUP BY 2, 3`;
}

// ───────────────────────────── rollups ─────────────────────────────

/**
 * Adds `source`, a query of (workspace_id, hour, project_id, user_id, api_key_id, traces), to the
 * hourly and daily rollups in one statement: every source row counts once per dimension and grain.
 * Rows go in key order, so one workspace's rows of a dimension sit on neighbouring pages.
 */
const addToRollups = (source: string) => `
  WITH source AS (${source}),
  counts AS (
    SELECT s.workspace_id, d.dimension, s.hour, d.dimension_id, s.traces
      FROM source AS s
     CROSS JOIN LATERAL (VALUES ('workspace', s.workspace_id), ('project', s.project_id),
                                ('user', COALESCE(s.user_id, '${NO_DIMENSION_ID}'::uuid)),
                                ('api_key', COALESCE(s.api_key_id, '${NO_DIMENSION_ID}'::uuid))) AS d(dimension, dimension_id)
  ),
  hourly AS (
    INSERT INTO usage_hourly_rollups AS r (workspace_id, dimension, hour, dimension_id, traces)
    SELECT workspace_id, dimension, hour, dimension_id, sum(traces) FROM counts GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (workspace_id, dimension, hour, dimension_id) DO UPDATE SET traces = r.traces + EXCLUDED.traces
    RETURNING 1
  )
  INSERT INTO usage_daily_rollups AS r (workspace_id, dimension, day, dimension_id, traces)
  SELECT workspace_id, dimension, date_trunc('day', hour, 'UTC'), dimension_id, sum(traces) FROM counts GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
  ON CONFLICT (workspace_id, dimension, day, dimension_id) DO UPDATE SET traces = r.traces + EXCLUDED.traces
  RETURNING (SELECT count(*) FROM hourly) AS hourly_rows`;

const FOLD_SQL = addToRollups(`
  DELETE FROM usage_trace_deltas
   WHERE id IN (SELECT id FROM usage_trace_deltas ORDER BY id LIMIT $1)
  RETURNING workspace_id, hour, project_id, user_id, api_key_id, traces`);

/**
 * Moves pending deltas into the rollups, `batchSize` at a time, each batch in its own transaction
 * (DELETE … RETURNING feeding the upsert, so a delta is counted exactly once). Returns the number of
 * delta rows folded.
 */
export async function foldTraceDeltas(pool: pg.Pool, batchSize = 50_000): Promise<number> {
  const client = await pool.connect();
  let folded = 0;
  try {
    for (;;) {
      const pending = await inTransaction(client, async () => {
        await client.query('SELECT pg_advisory_xact_lock($1)', [FOLD_LOCK]);
        const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM (SELECT 1 FROM usage_trace_deltas LIMIT $1) AS pending', [batchSize]);
        const pending = Number(rows[0]!.n);
        if (pending) await client.query(FOLD_SQL, [batchSize]);
        return pending;
      });
      folded += pending;
      if (pending < batchSize) return folded;
    }
  } finally {
    client.release();
  }
}

/**
 * Recomputes every rollup from the stored root runs. One REPEATABLE READ snapshot: the deltas it
 * deletes are exactly those of the runs it counts; runs committed later keep their deltas, which the
 * next fold adds. Ingestion is never blocked; folds wait for it.
 */
export async function rebuildRollups(pool: pg.Pool): Promise<{ traces: number; rollupRows: number }> {
  const client = await pool.connect();
  try {
    // Session-level, taken before the snapshot: a fold that commits after our snapshot began would
    // otherwise delete deltas under us (a serialization failure).
    await client.query('SELECT pg_advisory_lock($1)', [FOLD_LOCK]);
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      // TRUNCATE would take locks that make every read wait; DELETE keeps reads on the old rows until commit.
      await client.query('DELETE FROM usage_hourly_rollups');
      await client.query('DELETE FROM usage_daily_rollups');
      await client.query('DELETE FROM usage_trace_deltas');
      const inserted = await client.query<{ hourly_rows: string }>(
        addToRollups(`
          SELECT tenant_id AS workspace_id, date_trunc('hour', start_time, 'UTC') AS hour, session_id AS project_id,
                 user_id, api_key_id, count(*) AS traces
            FROM trace_runs WHERE is_root
           GROUP BY 1, 2, 3, 4, 5`),
      );
      const { rows } = await client.query<{ n: string }>("SELECT COALESCE(sum(traces), 0) AS n FROM usage_hourly_rollups WHERE dimension = 'workspace'");
      await client.query('COMMIT');
      return { traces: Number(rows[0]!.n), rollupRows: (inserted.rowCount ?? 0) + Number(inserted.rows[0]?.hourly_rows ?? 0) };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [FOLD_LOCK]);
    }
  } finally {
    client.release();
  }
}

// ───────────────────────────── reads ─────────────────────────────

/** The rows of one bucket and dimension value, with the value's display fields. */
export type UsageRow = {
  timeBucket: Date;
  dimensionId: string;
  /** Workspace name, project name, user email or API key short key (null once deleted, or for "none"). */
  label: string | null;
  traces: number;
};

/**
 * What to read: hours in [from, to) of these workspaces, with whole UTC days in [dayFrom, dayTo) read
 * from the day grain instead (dayFrom = dayTo when the stride is under a day), folded into buckets of
 * `strideSeconds` counted from `origin`.
 */
export type UsageSelection = {
  workspaceIds: string[];
  dimension: UsageDimension;
  from: Date;
  to: Date;
  dayFrom: Date;
  dayTo: Date;
  origin: Date;
  strideSeconds: number;
};

const LABELS: Record<UsageDimension, string> = {
  workspace: 'LEFT JOIN workspaces AS l ON l.id = b.dimension_id',
  project: 'LEFT JOIN tracing_projects AS l ON l.id = b.dimension_id',
  user: 'LEFT JOIN users AS l ON l.id = b.dimension_id',
  api_key: 'LEFT JOIN api_keys AS l ON l.id = b.dimension_id',
};
const LABEL_COLUMN: Record<UsageDimension, string> = { workspace: 'l.name', project: 'l.name', user: 'l.email', api_key: 'l.short_key' };
const DELTA_DIMENSION: Record<UsageDimension, string> = {
  workspace: 'workspace_id',
  project: 'project_id',
  user: `COALESCE(user_id, '${NO_DIMENSION_ID}'::uuid)`,
  api_key: `COALESCE(api_key_id, '${NO_DIMENSION_ID}'::uuid)`,
};

// Rollups at the day grain for whole days, the hour grain for the ragged ends, plus the deltas not
// folded yet; then re-bucketed to the stride and summed per bucket and dimension value.
const usageSql = (dimension: UsageDimension) => `
  SELECT to_timestamp($7::bigint + b.slot * $8::bigint) AS time_bucket, b.dimension_id, ${LABEL_COLUMN[dimension]} AS label, b.traces
    FROM (
      -- Integer arithmetic per row (extract() returns numeric, measurably slower on a year of rows).
      SELECT (date_part('epoch', c.bucket)::bigint - $7::bigint) / $8::bigint AS slot,
             c.dimension_id, sum(c.traces)::float8 AS traces
        FROM (
          SELECT day, dimension_id, traces FROM usage_daily_rollups
           WHERE workspace_id = ANY($1::uuid[]) AND dimension = $2 AND day >= $5 AND day < $6
          UNION ALL
          SELECT hour, dimension_id, traces FROM usage_hourly_rollups
           WHERE workspace_id = ANY($1::uuid[]) AND dimension = $2 AND hour >= $3 AND hour < $5
          UNION ALL
          SELECT hour, dimension_id, traces FROM usage_hourly_rollups
           WHERE workspace_id = ANY($1::uuid[]) AND dimension = $2 AND hour >= $6 AND hour < $4
          UNION ALL
          SELECT hour, ${DELTA_DIMENSION[dimension]}, traces FROM usage_trace_deltas
           WHERE workspace_id = ANY($1::uuid[]) AND hour >= $3 AND hour < $4
        ) AS c (bucket, dimension_id, traces)
       GROUP BY 1, 2
    ) AS b
    ${LABELS[dimension]}
   WHERE b.traces > 0
   ORDER BY b.slot, label NULLS LAST, b.dimension_id`;

const selectionValues = (s: UsageSelection) => [
  s.workspaceIds,
  s.dimension,
  s.from,
  s.to,
  s.dayFrom,
  s.dayTo,
  Math.floor(s.origin.getTime() / 1000),
  s.strideSeconds,
];

type RawUsageRow = { time_bucket: Date; dimension_id: string; label: string | null; traces: number };
const toUsageRow = (row: RawUsageRow): UsageRow => ({
  timeBucket: row.time_bucket,
  dimensionId: row.dimension_id,
  label: row.label,
  traces: row.traces,
});

/** Every row of the selection, in bucket order. */
export async function selectUsage(pool: pg.Pool, selection: UsageSelection): Promise<UsageRow[]> {
  const { rows } = await pool.query<RawUsageRow>({ name: `usage.select_${selection.dimension}`, text: usageSql(selection.dimension), values: selectionValues(selection) });
  return rows.map(toUsageRow);
}

/**
 * The same rows as selectUsage, read through a server-side cursor `pageSize` at a time, so a caller
 * streaming them out holds one page in memory whatever the range.
 */
export async function* streamUsage(pool: pg.Pool, selection: UsageSelection, pageSize = 2_000): AsyncGenerator<UsageRow[]> {
  const client = await pool.connect();
  let open = false;
  try {
    await client.query('BEGIN READ ONLY');
    open = true;
    await client.query(`DECLARE usage_rows NO SCROLL CURSOR FOR ${usageSql(selection.dimension)}`, selectionValues(selection));
    for (;;) {
      const { rows } = await client.query<RawUsageRow>(`FETCH ${pageSize} FROM usage_rows`);
      if (rows.length) yield rows.map(toUsageRow);
      if (rows.length < pageSize) break;
    }
    await client.query('COMMIT');
    open = false;
  } finally {
    // A consumer that stops early (client gone) leaves the transaction open: end it before release.
    if (open) await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
}

/** Workspaces among `ids` that belong to the organization. */
export async function selectOrganizationWorkspaces(pool: pg.Pool, organizationId: string, ids: string[]): Promise<{ id: string; name: string }[]> {
  const { rows } = await pool.query<{ id: string; name: string }>({
    name: 'usage.organization_workspaces',
    text: 'SELECT id, name FROM workspaces WHERE organization_id = $1 AND id = ANY($2::uuid[])',
    values: [organizationId, ids],
  });
  return rows;
}

/** Traces ingested into a workspace: the daily rollups plus the deltas not yet folded into them. */
export async function countWorkspaceTraces(pool: pg.Pool, workspaceId: string): Promise<number> {
  const { rows } = await pool.query<{ traces: string }>(
    `SELECT (SELECT coalesce(sum(traces), 0) FROM usage_daily_rollups WHERE workspace_id = $1 AND dimension = 'workspace')
          + (SELECT coalesce(sum(traces), 0) FROM usage_trace_deltas WHERE workspace_id = $1) AS traces`,
    [workspaceId],
  );
  return Number(rows[0]?.traces ?? 0);
}
