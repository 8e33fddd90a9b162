// Synthetic trace runs for bench:scale and the query-plan tests: multi-row INSERT … SELECT straight into
// trace_runs, everything derived from the row number so a table grows by appending.
import type pg from 'pg';
import { insertClaimingIdsSql } from '../src/services/traces/trace-runs.store.js';

// A version-4-shaped UUID derived from a text (the API validates UUIDs strictly).
export const uuidOf = (text: string) => `overlay(overlay(md5(${text}) placing '4' from 13) placing '8' from 17)::uuid`;

/** The synthetic history starts here, one run every FILL_SECONDS_PER_RUN seconds. */
export const FILL_START = new Date('2026-01-01T00:00:00Z');
export const FILL_SECONDS_PER_RUN = 2;

/**
 * Appends runs `from`..`to`-1 of the synthetic history. Everything is derived from the row number, so
 * sizes grow by appending: traces of five runs (a chain root with llm, tool and retriever children),
 * projects skewed (the first one is the busiest and never errs), newer rows later in time.
 */
export async function fillTraceRuns(pool: pg.Pool, tenantId: string, projects: string[], from: number, to: number, progress?: (done: number) => void): Promise<void> {
  const CHUNK = 50_000;
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK);
    await pool.query(
      insertClaimingIdsSql(`WITH g AS (
         SELECT i, i / 5 AS t, i % 5 AS k, abs(hashint4(i)) AS h, abs(hashint4(i / 5)) AS th FROM generate_series($3::int, $4::int - 1) AS i
       ), s AS (
         SELECT g.*, floor(${projects.length} * power((th % 1024) / 1024.0, 2))::int AS p,
                ${uuidOf("'trace-' || t")} AS trace_id,
                CASE WHEN k = 0 THEN ${uuidOf("'trace-' || t")} ELSE ${uuidOf("'run-' || i")} END AS id,
                timestamptz '2026-01-01 00:00:00Z' + make_interval(secs => i * 2.0) AS start_time
           FROM g
       ), r AS (
         SELECT s.*, CASE WHEN p <> 0 AND h % 100 < 2 THEN 'error' WHEN h % 1000 < 3 THEN 'pending' ELSE 'success' END AS status FROM s
       )
       INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type, start_time, end_time,
                               status, is_root, dotted_order, inputs, outputs, error, extra, tags, total_tokens, prompt_tokens, completion_tokens)
       SELECT $1::uuid, id, ($2::uuid[])[p + 1], trace_id, CASE WHEN k = 0 THEN NULL ELSE trace_id END,
              CASE WHEN k = 0 THEN '{}'::uuid[] ELSE ARRAY[trace_id] END,
              CASE WHEN k = 0 THEN 'agent_' || (th % 8) ELSE 'step_' || (h % 64) END,
              (ARRAY['chain', 'llm', 'tool', 'retriever', 'llm'])[k + 1], start_time,
              CASE WHEN status = 'pending' THEN NULL ELSE start_time + make_interval(secs => (h % 5000) / 1000.0) END,
              status, k = 0, to_char(start_time, 'YYYYMMDD"T"HH24MISSUS"Z"') || id,
              jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat('question ', 12) || i))),
              CASE WHEN status = 'success' THEN jsonb_build_object('output', repeat('answer ', 20) || i) END,
              CASE WHEN status = 'error' THEN 'ValueError: failed at step ' || k END,
              jsonb_build_object('metadata', jsonb_build_object('user_id', 'user-' || (th % 1000), 'env', CASE WHEN th % 10 < 7 THEN 'prod' ELSE 'dev' END,
                                                                'ls_model_name', CASE WHEN k IN (1, 4) THEN 'gpt-4o-mini' END)),
              CASE WHEN th % 20 = 0 THEN ARRAY['env:' || CASE WHEN th % 10 < 7 THEN 'prod' ELSE 'dev' END, 'vip'] ELSE ARRAY['env:' || CASE WHEN th % 10 < 7 THEN 'prod' ELSE 'dev' END] END,
              CASE WHEN k IN (1, 4) THEN h % 2000 END, CASE WHEN k IN (1, 4) THEN h % 1500 END, CASE WHEN k IN (1, 4) THEN h % 500 END
         FROM r`),
      [tenantId, projects, start, end],
    );
    progress?.(end);
  }
}

