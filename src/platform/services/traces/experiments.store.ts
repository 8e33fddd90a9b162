// Experiments (tracing projects whose runs ran a dataset's examples): their feedback summed up per key,
// a range of the feedback (tenant_id, session_id, key) index per experiment.
import type pg from 'pg';

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
