// The columns of an export's files: for each exportable field of trace runs, the SQL the exporter reads
// it with (trace-run-export.store.ts) and its Arrow type in the file, which together say how its bytes
// are decoded (copy-decode.ts).
import { Bool, type DataType, Field, Float64, Int64, List, TimestampMicrosecond, Utf8 } from 'apache-arrow';
import { isoSql } from '../traces/trace-runs.store.js';
import type { ExportableField, FormatVersion } from './exports.schemas.js';

/** How a field is read from trace_runs and typed in the file. */
type ColumnKind = 'text' | 'uuid' | 'json' | 'timestamp' | 'textList' | 'uuidList' | 'bool' | 'int' | 'float';

const FIELD_KINDS: Record<ExportableField, ColumnKind> = {
  id: 'uuid',
  tenant_id: 'uuid',
  session_id: 'uuid',
  trace_id: 'uuid',
  parent_run_id: 'uuid',
  parent_run_ids: 'uuidList',
  reference_example_id: 'uuid',
  name: 'text',
  run_type: 'text',
  start_time: 'timestamp',
  end_time: 'timestamp',
  status: 'text',
  is_root: 'bool',
  dotted_order: 'text',
  trace_tier: 'text',
  inputs: 'json',
  outputs: 'json',
  error: 'text',
  extra: 'json',
  events: 'json',
  tags: 'textList',
  feedback_stats: 'json',
  total_tokens: 'int',
  prompt_tokens: 'int',
  completion_tokens: 'int',
  total_cost: 'float',
  prompt_cost: 'float',
  completion_cost: 'float',
  first_token_time: 'timestamp',
};

export type ExportColumn = { name: ExportableField; kind: ColumnKind; sql: string; type: DataType };

/**
 * The columns of an export's files. v2_beta types them (timestamps as timestamp[us, UTC], lists as
 * list<string>, JSON as strings); v1 writes timestamps as ISO strings and lists as JSON arrays.
 * Each column's SQL yields the PostgreSQL type its binary COPY decoder below expects. UUIDs and JSON
 * are read in their binary forms and turned into text here: PostgreSQL's casts to text were about half
 * of its time producing an export's rows (bench:export's stage profile).
 */
export function exportColumns(fields: readonly ExportableField[], format: FormatVersion): ExportColumn[] {
  return fields.map((name) => {
    const column = `r.${name}`;
    const kind = FIELD_KINDS[name];
    if (format === 'v1' && (kind === 'timestamp' || kind === 'textList' || kind === 'uuidList')) {
      const sql = kind === 'timestamp' ? isoSql(column) : `to_json(${column})::text`;
      return { name, kind: 'text', sql, type: new Utf8() };
    }
    switch (kind) {
      case 'timestamp':
        return { name, kind, sql: `${column}::timestamptz`, type: new TimestampMicrosecond('UTC') };
      case 'textList':
        return { name, kind, sql: `${column}::text[]`, type: new List(new Field('item', new Utf8(), true)) };
      case 'uuidList':
        return { name, kind, sql: `${column}::uuid[]`, type: new List(new Field('item', new Utf8(), true)) };
      case 'uuid':
        return { name, kind, sql: `${column}::uuid`, type: new Utf8() };
      case 'json':
        // Binary jsonb is a version byte and the same text as jsonb::text, without the cast's copy.
        return { name, kind, sql: `${column}::jsonb`, type: new Utf8() };
      case 'bool':
        return { name, kind, sql: `${column}::bool`, type: new Bool() };
      case 'int':
        return { name, kind, sql: `${column}::int8`, type: new Int64() };
      case 'float':
        return { name, kind, sql: `${column}::float8`, type: new Float64() };
      default:
        return { name, kind, sql: `${column}::text`, type: new Utf8() };
    }
  });
}
