// The realistic trace runs bench:export exports (and its stage profile reads).
import type pg from 'pg';
import { insertClaimingIdsSql } from '../src/platform/ingest/ingest.store.js';

/**
 * Realistic trace runs straight into trace_runs (one INSERT … SELECT per chunk): traces of five runs
 * (chain root, two chain nodes, an LLM call, a tool) with inputs, outputs, metadata, tags, tokens and
 * costs of typical sizes, spread evenly over `days` UTC days from `day0` (epoch ms).
 */
export async function insertExportRuns(pool: pg.Pool, tenantId: string, sessionId: string, rows: number, days: number, day0: number) {
  const chunk = 50_000;
  for (let from = 0; from < rows; from += chunk) {
    await pool.query(
      insertClaimingIdsSql(`INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type, start_time, end_time, status,
                               is_root, dotted_order, inputs, outputs, error, extra, events, tags, total_tokens, prompt_tokens, completion_tokens,
                               total_cost, prompt_cost, completion_cost, first_token_time)
       SELECT $1::uuid, id, $2::uuid, trace, CASE WHEN pos = 0 THEN NULL ELSE trace END, CASE WHEN pos = 0 THEN '{}'::uuid[] ELSE ARRAY[trace] END,
              (ARRAY['AgentExecutor','planner','executor','ChatOpenAI','search'])[pos + 1], (ARRAY['chain','chain','chain','llm','tool'])[pos + 1],
              t, t + make_interval(secs => 0.2 + (g % 900) / 1000.0), CASE WHEN g % 50 = 0 THEN 'error' ELSE 'success' END,
              pos = 0, to_char(t AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISSUS"Z"') || id::text,
              jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat(md5(g::text), 8))), 'context', repeat(md5((g + 1)::text), 6)),
              CASE WHEN g % 50 = 0 THEN NULL ELSE jsonb_build_object('output', repeat(md5((g + 2)::text), 10)) END,
              CASE WHEN g % 50 = 0 THEN 'ToolException: upstream timed out' END,
              jsonb_build_object('metadata', jsonb_build_object('user_id', 'user-' || g % 50, 'thread_id', 'thread-' || g % 200, 'ls_model_name', 'gpt-4o-mini'),
                                 'runtime', jsonb_build_object('sdk', 'langsmith-js', 'sdk_version', '0.12.0')),
              CASE WHEN pos = 3 THEN jsonb_build_array(jsonb_build_object('name', 'new_token', 'time', t)) END,
              ARRAY['bench', 'shard-' || g % 8], CASE WHEN pos = 3 THEN 300 + g % 700 END, CASE WHEN pos = 3 THEN 200 + g % 500 END,
              CASE WHEN pos = 3 THEN 100 + g % 200 END, CASE WHEN pos = 3 THEN (g % 1000) / 100000.0 END,
              CASE WHEN pos = 3 THEN (g % 700) / 100000.0 END, CASE WHEN pos = 3 THEN (g % 300) / 100000.0 END, CASE WHEN pos = 3 THEN t + interval '150 ms' END
         FROM (SELECT g, g % 5 AS pos, gen_random_uuid() AS id,
                      ('00000000-0000-4000-8000-' || lpad(to_hex(g / 5), 12, '0'))::uuid AS trace,
                      to_timestamp($3::float8 + (g::float8 / $4::float8) * $5::float8) AS t
                 FROM generate_series($6::bigint, $7::bigint) AS g) AS s`),
      [tenantId, sessionId, day0 / 1000, rows, days * 86_400, from, Math.min(rows, from + chunk) - 1],
    );
  }
}
