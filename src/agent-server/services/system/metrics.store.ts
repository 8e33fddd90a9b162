// Read-only SQL behind GET /metrics: counts of the runs the agent server keeps. Nothing is written for
// metrics: any of its processes answers the same numbers.
import type { Database } from '../../../db.js';

/** Runs of a deployment by status (index agent_runs(deployment_id, status)). */
export async function countRunsByStatus(db: Database, deploymentId: string): Promise<Map<string, number>> {
  const { rows } = await db.pool.query<{ status: string; runs: string }>(
    'SELECT status, count(*) AS runs FROM agent_runs WHERE deployment_id = $1 GROUP BY status',
    [deploymentId],
  );
  return new Map(rows.map((row) => [row.status, Number(row.runs)]));
}

/**
 * Durations (seconds) of a deployment's runs that ended after `after`, oldest end first, with their
 * end as PostgreSQL's text (microseconds: a JS Date would round them and count the last run twice).
 */
export async function runsEndedAfter(db: Database, deploymentId: string, after: string, limit: number): Promise<{ seconds: number; endedAt: string }[]> {
  const { rows } = await db.pool.query<{ seconds: number; ended_at: string }>(
    `SELECT extract(epoch FROM ended_at - coalesce(started_at, created_at))::float8 AS seconds, ended_at::text AS ended_at
       FROM agent_runs WHERE deployment_id = $1 AND ended_at > $2::timestamptz ORDER BY ended_at LIMIT $3`,
    [deploymentId, after, limit],
  );
  return rows.map((row) => ({ seconds: row.seconds, endedAt: row.ended_at }));
}
