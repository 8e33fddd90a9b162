// The exporter's read of trace runs: an export run's runs in (start_time, id) order, in batches bounded
// by keys and read by binary COPY (the exporter decodes the bytes straight into Arrow columns, see
// exports/copy-decode.ts).
import type pg from 'pg';
import { escapeLiteral } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { compileFilter, SqlParams } from './filter.js';
import { isoSql } from './trace-runs.store.js';

/**
 * One batch of an export run's trace runs after `cursor`, in (start_time, id) order: keyset paging on
 * the (tenant_id, session_id, start_time, id) index, read by binary COPY (the exporter decodes the
 * bytes straight into Arrow columns, see exports/copy-decode.ts). Each row is the columns followed by the
 * row's `start_time` and `id`, its cursor. The batch is every row up to `upTo` (inclusive; from
 * runBatchBoundary) or, without it, the rest of the range: bounded by keys rather than a LIMIT, so
 * batches planned ahead and read at once meet exactly. The bytes are written into `into` when it is
 * large enough (the returned buffer is a view of it, or of a larger one that replaced it).
 */
export async function copyRunBatch(
  pool: pg.Pool,
  scope: RunBatchScope,
  columns: readonly { sql: string }[],
  cursor: RunBatchCursor,
  upTo: RunBatchCursor,
  into?: Buffer,
): Promise<Buffer> {
  const client = await pool.connect();
  try {
    // Into `into` (grown when too small) rather than a fresh buffer per batch: first touching the pages
    // of a fresh multi-megabyte buffer costs more than the copy (see exports/copy-decode.ts, DecodeArena).
    let target = into ?? Buffer.allocUnsafe(1 << 20);
    let length = 0;
    for await (const chunk of client.query(copyTo(`COPY (${runBatchSelect(scope, columns, cursor, upTo)}) TO STDOUT (FORMAT binary)`))) {
      const bytes = chunk as Buffer;
      if (length + bytes.length > target.length) {
        // By half, not double: a batch is sized to about the exporter's batch bytes, and a doubled
        // buffer would hold up to twice that for the rest of the run.
        const bigger = Buffer.allocUnsafe(Math.max(Math.ceil(target.length * 1.5), length + bytes.length));
        target.copy(bigger, 0, 0, length);
        target = bigger;
      }
      bytes.copy(target, length);
      length += bytes.length;
    }
    client.release();
    return target.subarray(0, length);
  } catch (error) {
    // A COPY stopped halfway leaves the connection mid-protocol: it is closed, not reused.
    client.release(error as Error);
    throw error;
  }
}

type RunBatchScope = { tenantId: string; sessionId: string; start: Date; end: Date; filter: string | null };
type RunBatchCursor = { start_time: string; id: string } | null | undefined;

/** The SELECT of one export batch, values inlined (COPY takes no bind parameters); bench:export profiles it alone too. */
export function runBatchSelect(scope: RunBatchScope, columns: readonly { sql: string }[], cursor: RunBatchCursor, upTo: RunBatchCursor): string {
  const params = new SqlParams();
  const conditions = runBatchConditions(scope, cursor, params);
  if (upTo) conditions.push(`(r.start_time, r.id) <= (${params.add(upTo.start_time)}::timestamptz, ${params.add(upTo.id)}::uuid)`);
  const select = `SELECT ${columns.map((column) => column.sql).join(', ')}, r.start_time, r.id
                    FROM trace_runs r
                   WHERE ${conditions.join(' AND ')}
                   ORDER BY r.start_time, r.id`;
  return inlineParams(select, params.values);
}

/**
 * The (start_time, id) of the `rows`-th run after `cursor`, the end of a batch of `rows` runs; null
 * when fewer remain. Reads only the index's keys (and the filter's columns), so the exporter can plan
 * its next batches before the current one has arrived.
 */
export async function runBatchBoundary(pool: pg.Pool, scope: RunBatchScope, cursor: RunBatchCursor, rows: number): Promise<{ start_time: string; id: string } | null> {
  const params = new SqlParams();
  const conditions = runBatchConditions(scope, cursor, params);
  const { rows: found } = await pool.query<{ start_time: string; id: string }>(
    // Formatted outside: in the inner SELECT to_char would run on every row skipped by the OFFSET.
    `SELECT ${isoSql('k.start_time')} AS start_time, k.id::text AS id
       FROM (SELECT r.start_time, r.id
               FROM trace_runs r
              WHERE ${conditions.join(' AND ')}
              ORDER BY r.start_time, r.id
             OFFSET ${Number(rows) - 1} LIMIT 1) AS k`,
    params.values,
  );
  return found[0] ?? null;
}

function runBatchConditions(scope: RunBatchScope, cursor: RunBatchCursor, params: SqlParams): string[] {
  const conditions = [
    `r.tenant_id = ${params.add(scope.tenantId)}::uuid`,
    `r.session_id = ${params.add(scope.sessionId)}::uuid`,
    `r.start_time >= ${params.add(scope.start.toISOString())}::timestamptz`,
    `r.start_time < ${params.add(scope.end.toISOString())}::timestamptz`,
  ];
  if (cursor) conditions.push(`(r.start_time, r.id) > (${params.add(cursor.start_time)}::timestamptz, ${params.add(cursor.id)}::uuid)`);
  if (scope.filter) conditions.push(`(${compileFilter(scope.filter, 'r', params)})`);
  return conditions;
}

/**
 * COPY takes no bind parameters, so the values go into the statement as quoted literals. An untyped
 * literal is what an untyped parameter is to PostgreSQL; each placeholder keeps its `::cast`. Values
 * are what the filter compiler and this store bind: strings, numbers, booleans and arrays of them.
 */
function inlineParams(sql: string, values: unknown[]): string {
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'NULL';
    if (Array.isArray(value)) {
      return escapeLiteral(`{${value.map((item) => (item == null ? 'NULL' : `"${String(item).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`);
    }
    if (value instanceof Date) return escapeLiteral(value.toISOString());
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return escapeLiteral(String(value));
    throw new Error(`cannot inline a ${typeof value} into COPY`);
  };
  // Placeholders are only ever written by SqlParams: user text reaches this SQL as values, never inline.
  return sql.replace(/\$(\d+)/g, (_, index: string) => literal(values[Number(index) - 1]));
}
