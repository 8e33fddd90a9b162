-- Ingest claims a batch's run ids in trace_run_ids set-based, in its INSERT statement (a CTE … ON
-- CONFLICT DO NOTHING whose claimed ids alone go into trace_runs), instead of the per-row BEFORE INSERT
-- trigger: measured with `npm run bench:ingest-pg`, the trigger cost PostgreSQL 25-45 µs of CPU per
-- run, the CTE 5-20 µs. Whatever writes trace_runs now claims its ids itself (see
-- insertRunsUnnestSql and claimStoredRunIds in trace-runs.store.ts); deletes still release them by
-- trace_runs_release_ids.
DROP TRIGGER trace_runs_claim_id ON trace_runs;
DROP FUNCTION trace_runs_claim_id();
