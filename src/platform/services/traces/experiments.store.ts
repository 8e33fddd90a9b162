// Experiments (tracing projects whose runs ran a dataset's examples): their feedback summed up per key,
// a range of the feedback (tenant_id, session_id, key) index per experiment; comparative experiments.
import type pg from 'pg';
import { isoSql } from './trace-runs.store.js';

/** An experiment's feedback per key: {key: {n, avg, stdev, errors, values}}, as a run's feedback_stats. */
export type ExperimentFeedbackStats = Record<string, { n: number; avg: number | null; stdev: number | null; errors: number; values: Record<string, number> }>;

/** The feedback stats of projects, by project id (a project without feedback has `{}`). */
export async function selectExperimentFeedbackStats(pool: pg.Pool, tenantId: string, sessionIds: string[]): Promise<Map<string, ExperimentFeedbackStats>> {
  const { rows } = await pool.query<{ sessionId: string; stats: ExperimentFeedbackStats }>(
    `SELECT s.session_id AS "sessionId",
            jsonb_object_agg(s.key, jsonb_build_object('n', s.n, 'avg', s.avg, 'stdev', s.stdev, 'errors', 0, 'values', COALESCE(v.vals, '{}'::jsonb))) AS stats
       FROM (SELECT f.session_id, f.key, count(*)::int AS n, avg(f.score) AS avg, stddev_pop(f.score) AS stdev
               FROM feedback f WHERE f.tenant_id = $1 AND f.session_id = ANY($2::uuid[]) GROUP BY f.session_id, f.key) s
       LEFT JOIN (SELECT c.session_id, c.key, jsonb_object_agg(c.value, c.n) AS vals
                    FROM (SELECT f.session_id, f.key, f.value #>> '{}' AS value, count(*)::int AS n
                            FROM feedback f WHERE f.tenant_id = $1 AND f.session_id = ANY($2::uuid[])
                             AND jsonb_typeof(f.value) IN ('string', 'number', 'boolean')
                           GROUP BY 1, 2, 3) c
                   GROUP BY c.session_id, c.key) v ON v.session_id = s.session_id AND v.key = s.key
      GROUP BY s.session_id`,
    [tenantId, sessionIds],
  );
  const stats = new Map<string, ExperimentFeedbackStats>(sessionIds.map((id) => [id, {}]));
  for (const row of rows) stats.set(row.sessionId, row.stats);
  return stats;
}

/** A stored comparative experiment, with its experiments' names. */
export type ComparativeExperimentRow = {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  referenceDatasetId: string;
  experiments: { id: string; name: string }[];
  extra: Record<string, unknown> | null;
  createdAt: string;
  modifiedAt: string;
};

/** Inserts a comparative experiment; undefined when its id is taken. */
export async function insertComparativeExperiment(
  pool: pg.Pool,
  row: Omit<ComparativeExperimentRow, 'experiments' | 'createdAt' | 'modifiedAt'> & { experimentIds: string[]; createdAt: Date | null },
): Promise<ComparativeExperimentRow | undefined> {
  const { rows } = await pool.query<ComparativeExperimentRow>(
    `WITH c AS (
       INSERT INTO comparative_experiments (id, workspace_id, name, description, reference_dataset_id, experiment_ids, extra, created_at, modified_at)
       VALUES ($1, $2, $3, $4, $5, $6::uuid[], $7, COALESCE($8, now()), COALESCE($8, now())) ON CONFLICT DO NOTHING RETURNING *)
     SELECT c.id, c.workspace_id AS "workspaceId", c.name, c.description, c.reference_dataset_id AS "referenceDatasetId", c.extra,
            ${isoSql('c.created_at')} AS "createdAt", ${isoSql('c.modified_at')} AS "modifiedAt",
            (SELECT jsonb_agg(jsonb_build_object('id', p.id, 'name', p.name) ORDER BY e.n)
               FROM unnest(c.experiment_ids) WITH ORDINALITY AS e(id, n) JOIN tracing_projects p ON p.id = e.id) AS experiments
       FROM c`,
    [row.id, row.workspaceId, row.name, row.description, row.referenceDatasetId, row.experimentIds, row.extra === null ? null : JSON.stringify(row.extra), row.createdAt],
  );
  return rows[0];
}
