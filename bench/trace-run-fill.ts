// Synthetic trace runs for bench:scale and the query-plan tests, straight into trace_runs with
// INSERT … SELECT generate_series, everything derived from the row number so a table grows by appending.
// fillTraceRuns inserts through trace_runs (its indexes row by row, ids claimed in the same statement, as
// ingestion does);
// fastFillTraceRuns builds each new week's partition as a bare table, indexes it in one sorted pass
// per index and attaches it, which is what makes 10M affordable.
import type pg from 'pg';
import { escapeLiteral } from 'pg';
import { insertClaimingIdsSql } from '../src/platform/ingest/ingest.store.js';

// A version-4-shaped UUID derived from a text (the API validates UUIDs strictly).
export const uuidOf = (text: string) => `overlay(overlay(md5(${text}) placing '4' from 13) placing '8' from 17)::uuid`;

/** The synthetic history starts here, one run every FILL_SECONDS_PER_RUN seconds. */
export const FILL_START = new Date('2026-01-01T00:00:00Z');
export const FILL_SECONDS_PER_RUN = 2;

const COLUMNS = `tenant_id, id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type, start_time, end_time,
                 status, is_root, dotted_order, inputs, outputs, error, extra, tags, total_tokens, prompt_tokens, completion_tokens`;

/**
 * The INSERT of runs $3..$4-1 into `table` ($1 tenant, $2 projects): traces of five runs (a chain root
 * with llm, tool and retriever children), projects skewed (the first one is the busiest and never
 * errs), newer rows later in time.
 */
function insertSql(table: string, projectCount: number): string {
  return `WITH g AS (
         SELECT i, i / 5 AS t, i % 5 AS k, abs(hashint4(i)) AS h, abs(hashint4(i / 5)) AS th FROM generate_series($3::int, $4::int - 1) AS i
       ), s AS (
         SELECT g.*, floor(${projectCount} * power((th % 1024) / 1024.0, 2))::int AS p,
                ${uuidOf("'trace-' || t")} AS trace_id,
                CASE WHEN k = 0 THEN ${uuidOf("'trace-' || t")} ELSE ${uuidOf("'run-' || i")} END AS id,
                timestamptz '${FILL_START.toISOString()}' + make_interval(secs => i * ${FILL_SECONDS_PER_RUN}.0) AS start_time
           FROM g
       ), r AS (
         SELECT s.*, CASE WHEN p <> 0 AND h % 100 < 2 THEN 'error' WHEN h % 1000 < 3 THEN 'pending' ELSE 'success' END AS status FROM s
       )
       INSERT INTO ${table} (${COLUMNS})
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
         FROM r`;
}

const CHUNK = 50_000;

/** Appends runs `from`..`to`-1 of the synthetic history through trace_runs (its partitions must exist). */
export async function fillTraceRuns(pool: pg.Pool | pg.PoolClient, tenantId: string, projects: string[], from: number, to: number, progress?: (done: number) => void): Promise<void> {
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK);
    await pool.query(insertClaimingIdsSql(insertSql('trace_runs', projects.length)), [tenantId, projects, start, end]);
    progress?.(end);
  }
}

const WEEK_MS = 7 * 86_400_000;
/** The first run (row number) that starts at or after `time`. */
const firstRunAt = (time: number) => Math.max(0, Math.ceil((time - FILL_START.getTime()) / (FILL_SECONDS_PER_RUN * 1000)));

/**
 * Appends runs `from`..`to`-1 week by week. A week whose partition exists already (a week the previous
 * size ended in) is topped up through trace_runs; a new week is filled as a bare table (no indexes; its
 * ids go to trace_run_ids in one statement, in key order so the id index is appended to in order rather
 * than at random), then attached as trace_runs's partition,
 * which builds each of its indexes in one sorted pass rather than an insert per row per index.
 * The same rows as fillTraceRuns; the indexes come out packed (as after a REINDEX).
 */
export async function fastFillTraceRuns(pool: pg.Pool, tenantId: string, projects: string[], from: number, to: number, log?: (line: string) => void): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(`SET maintenance_work_mem = '256MB'`);
    const { rows } = await client.query<{ name: string }>(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'trace_runs'::regclass`);
    const existing = new Set(rows.map((row) => row.name));
    const fromTime = FILL_START.getTime() + from * FILL_SECONDS_PER_RUN * 1000;
    // Weeks start on Monday 00:00 UTC (4 days before Thursday 1 January 1970).
    let week = fromTime - ((fromTime - Date.UTC(1970, 0, 5)) % WEEK_MS + WEEK_MS) % WEEK_MS;
    for (; firstRunAt(week) < to; week += WEEK_MS) {
      const start = Math.max(from, firstRunAt(week));
      const end = Math.min(to, firstRunAt(week + WEEK_MS));
      if (start >= end) continue;
      const name = `trace_runs_${new Date(week).toISOString().slice(0, 10).replaceAll('-', '')}`;
      const started = performance.now();
      const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);
      if (existing.has(name)) {
        await fillTraceRuns(client, tenantId, projects, start, end);
        log?.(`${name}: ${(end - start).toLocaleString('en')} runs topped up through trace_runs in ${seconds(started)} s`);
        continue;
      }
      await client.query(`CREATE TABLE ${name} (LIKE trace_runs INCLUDING DEFAULTS INCLUDING STORAGE)`);
      await client.query(insertSql(name, projects.length), [tenantId, projects, start, end]);
      const inserted = performance.now();
      await client.query(`INSERT INTO trace_run_ids (tenant_id, id, start_time) SELECT tenant_id, id, start_time FROM ${name} ORDER BY tenant_id, id`);
      const claimed = performance.now();
      const [lower, upper] = [escapeLiteral(new Date(week).toISOString()), escapeLiteral(new Date(week + WEEK_MS).toISOString())];
      await client.query(`ALTER TABLE trace_runs ATTACH PARTITION ${name} FOR VALUES FROM (${lower}) TO (${upper})`);
      existing.add(name);
      log?.(
        `${name}: ${(end - start).toLocaleString('en')} runs in ${seconds(started)} s (insert ${((inserted - started) / 1000).toFixed(1)}, ids ${((claimed - inserted) / 1000).toFixed(1)}, attach and index ${seconds(claimed)})`,
      );
    }
  } finally {
    client.release();
  }
}
