// The seam between trace ingestion and usage metering.
//
// The ingest INSERT carries, as data-modifying CTEs, what other areas record about the runs it stores:
// it names its newly stored runs `stored` (id, is_root, start_time, session_id; $1, $2 and $3 are the
// workspace, API key and user of the request), and whatever these hooks write commits or rolls back
// with the runs, in the same statement (a trace is counted exactly when it is stored). Usage appends
// its trace deltas here, grouped by (hour of the root run's start, workspace, project, user, API key).
import { recordStoredTracesSql } from '../services/usage/usage.service.js';

/** The CTEs (`name AS (statement)`) the ingest INSERT runs after storing runs, reading its CTE `stored`. */
export function afterRunsStoredCtes(stored: string): string[] {
  return [`usage_deltas AS (${recordStoredTracesSql(stored)})`];
}
