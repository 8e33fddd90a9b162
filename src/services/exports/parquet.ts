// Trace rows → Arrow record batches → Parquet (parquet-wasm, streaming) → one S3 multipart object.
// Utf8 columns are built from offsets plus one buffer (`makeData`): vectorFromArray on strings was
// about 3× slower and doubled memory (STACK-NOTES, "Arrow → Parquet").
import {
  Bool,
  type Data,
  type DataType,
  Field,
  Float64,
  Int64,
  List,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableToIPC,
  TimestampMicrosecond,
  Utf8,
} from 'apache-arrow';
import * as parquet from 'parquet-wasm';
import type { Compression, ExportableField, FormatVersion } from './exports.schemas.js';

/** Where a Parquet file's bytes go: an S3 multipart object (s3.ts), or a counter in the benchmark. */
export type ByteSink = {
  readonly key: string;
  readonly bytes: number;
  write(chunk: Uint8Array): Promise<void>;
  complete(): Promise<void>;
  abort(): Promise<void>;
};

/** How a field is read from trace_runs and typed in the file. */
type ColumnKind = 'text' | 'json' | 'timestamp' | 'textList' | 'bool' | 'int' | 'float';

const FIELD_KINDS: Record<ExportableField, ColumnKind> = {
  id: 'text',
  tenant_id: 'text',
  session_id: 'text',
  trace_id: 'text',
  parent_run_id: 'text',
  parent_run_ids: 'textList',
  reference_example_id: 'text',
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

const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * The columns of an export's files. v2_beta types them (timestamps as timestamp[us, UTC], lists as
 * list<string>, JSON as strings); v1 writes timestamps as ISO strings and lists as JSON arrays.
 */
export function exportColumns(fields: readonly ExportableField[], format: FormatVersion): ExportColumn[] {
  return fields.map((name) => {
    const column = `r.${name}`;
    let kind = FIELD_KINDS[name];
    if (format === 'v1' && (kind === 'timestamp' || kind === 'textList')) {
      const sql = kind === 'timestamp' ? isoSql(column) : `to_json(${column})::text`;
      return { name, kind: 'text', sql, type: new Utf8() };
    }
    switch (kind) {
      case 'timestamp':
        // float8 parses to a JS number without a string round trip; exact to the microsecond until 2255.
        return { name, kind, sql: `(extract(epoch FROM ${column}) * 1000000)::float8`, type: new TimestampMicrosecond('UTC') };
      case 'textList':
        return { name, kind, sql: `${column}::text[]`, type: new List(new Field('item', new Utf8(), true)) };
      case 'json':
        return { name, kind, sql: `${column}::text`, type: new Utf8() };
      case 'bool':
        return { name, kind, sql: column, type: new Bool() };
      case 'int':
        return { name, kind, sql: `${column}::float8`, type: new Int64() };
      case 'float':
        return { name, kind, sql: column, type: new Float64() };
      default:
        kind = 'text';
        return { name, kind, sql: `${column}::text`, type: new Utf8() };
    }
  });
}

/** Validity bitmap (bit set: value present) and null count of a column. */
function validity(values: unknown[]): { nullBitmap: Uint8Array | undefined; nullCount: number } {
  let nullCount = 0;
  const bitmap = new Uint8Array((values.length + 7) >> 3);
  for (let i = 0; i < values.length; i++) {
    if (values[i] == null) nullCount++;
    else bitmap[i >> 3]! |= 1 << (i & 7);
  }
  return { nullBitmap: nullCount ? bitmap : undefined, nullCount };
}

function utf8Data(values: (string | null)[]): Data<Utf8> {
  const offsets = new Int32Array(values.length + 1);
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value != null) total += Buffer.byteLength(value);
    offsets[i + 1] = total;
  }
  const data = Buffer.allocUnsafe(total);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value != null) data.write(value, offsets[i]!);
  }
  return makeData({ type: new Utf8(), length: values.length, valueOffsets: offsets, data, ...validity(values) });
}

function columnData(column: ExportColumn, values: unknown[]): Data {
  const length = values.length;
  switch (column.kind) {
    case 'timestamp':
    case 'int': {
      const data = new BigInt64Array(length);
      for (let i = 0; i < length; i++) if (values[i] != null) data[i] = BigInt(Math.round(values[i] as number));
      return column.kind === 'int'
        ? makeData({ type: new Int64(), length, data, ...validity(values) })
        : makeData({ type: column.type as TimestampMicrosecond, length, data, ...validity(values) });
    }
    case 'float': {
      const data = new Float64Array(length);
      for (let i = 0; i < length; i++) if (values[i] != null) data[i] = values[i] as number;
      return makeData({ type: new Float64(), length, data, ...validity(values) });
    }
    case 'bool': {
      const data = new Uint8Array((length + 7) >> 3);
      for (let i = 0; i < length; i++) if (values[i]) data[i >> 3]! |= 1 << (i & 7);
      return makeData({ type: new Bool(), length, data, ...validity(values) });
    }
    case 'textList': {
      const offsets = new Int32Array(length + 1);
      const items: string[] = [];
      for (let i = 0; i < length; i++) {
        const list = values[i] as string[] | null;
        if (list) for (const item of list) items.push(item);
        offsets[i + 1] = items.length;
      }
      return makeData({ type: column.type as List<Utf8>, length, valueOffsets: offsets, child: utf8Data(items), ...validity(values) });
    }
    default:
      return utf8Data(values as (string | null)[]);
  }
}

/** An Arrow record batch of rows read in `rowMode: 'array'`, column i at row index i + `offset`. */
export function toRecordBatch(columns: ExportColumn[], rows: unknown[][], offset = 0): RecordBatch {
  const fields = columns.map((column) => new Field(column.name, column.type, true));
  const children = columns.map((column, index) => columnData(column, rows.map((row) => row[index + offset])));
  return new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: rows.length, children }));
}

/** parquet-wasm writer properties of an export: its codec, row groups of `rowGroupRows`. */
export function writerProperties(compression: Compression, rowGroupRows: number): parquet.WriterProperties {
  return new parquet.WriterPropertiesBuilder()
    .setCompression(CODECS[compression])
    .setMaxRowGroupSize(rowGroupRows)
    .setCreatedBy('agent-platform bulk export')
    .build();
}

const CODECS: Record<Compression, parquet.Compression> = {
  gzip: parquet.Compression.GZIP,
  snappy: parquet.Compression.SNAPPY,
  zstandard: parquet.Compression.ZSTD,
  none: parquet.Compression.UNCOMPRESSED,
};

/** Arrow (JS) record batch → parquet-wasm record batches, through one IPC stream buffer. */
export function toWasmBatches(batch: RecordBatch): parquet.RecordBatch[] {
  const table = parquet.Table.fromIPCStream(tableToIPC(new Table([batch]), 'stream'));
  try {
    return table.recordBatches();
  } finally {
    table.free();
  }
}

/**
 * One Parquet file streamed into `sink`: record batches go into parquet-wasm's streaming writer one at
 * a time (write() resolves once the writer took the batch), its output goes to the sink as it comes,
 * so memory holds one batch and one row group, whatever the file's size.
 */
export class ParquetStreamWriter {
  private readonly queue: parquet.RecordBatch[] = [];
  private inputClosed = false;
  private wakeInput: (() => void) | undefined;
  private taken: (() => void) | undefined;
  private readonly done: Promise<void>;
  rows = 0;

  constructor(
    private readonly sink: ByteSink,
    options: { compression: Compression; rowGroupRows: number },
  ) {
    const input = new ReadableStream<parquet.RecordBatch>(
      {
        pull: async (controller) => {
          while (this.queue.length === 0 && !this.inputClosed) await new Promise<void>((resolve) => (this.wakeInput = resolve));
          const next = this.queue.shift();
          if (next) controller.enqueue(next);
          else controller.close();
          if (this.queue.length === 0) this.taken?.();
        },
      },
      { highWaterMark: 0 },
    );
    const properties = writerProperties(options.compression, options.rowGroupRows);
    this.done = (async () => {
      const output = await parquet.transformParquetStream(input, properties);
      for await (const chunk of output as unknown as AsyncIterable<Uint8Array>) await this.sink.write(chunk);
    })();
    // A failed sink (a deleted bucket) surfaces from write() or finish(); never as an unhandled rejection.
    this.done.catch(() => undefined);
  }

  /** The object key of this file. */
  get key(): string {
    return this.sink.key;
  }

  /** Bytes of Parquet produced so far (row groups flushed). */
  get bytes(): number {
    return this.sink.bytes;
  }

  async write(batch: RecordBatch): Promise<void> {
    const taken = new Promise<void>((resolve) => (this.taken = resolve));
    this.queue.push(...toWasmBatches(batch));
    this.rows += batch.numRows;
    this.wakeInput?.();
    await Promise.race([taken, this.done]);
  }

  /** Ends the file: closes the writer, uploads the rest and completes the object. */
  async finish(): Promise<void> {
    this.inputClosed = true;
    this.wakeInput?.();
    await this.done;
    await this.sink.complete();
  }

  /** Stops writing and abandons the object (best effort). */
  async abort(): Promise<void> {
    this.inputClosed = true;
    this.queue.length = 0;
    this.wakeInput?.();
    await this.done.catch(() => undefined);
    await this.sink.abort();
  }
}
