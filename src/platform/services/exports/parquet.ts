// Trace rows (binary COPY) → Arrow record batches → Parquet (parquet-wasm, streaming) → one S3
// multipart object. Columns are built from offsets plus one buffer (`makeData`): vectorFromArray on
// strings was about 3× slower and doubled memory (STACK-NOTES, "Arrow → Parquet").
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
  TimestampMicrosecond,
  Utf8,
} from 'apache-arrow';
// The IPC writer's own parts (the package exports every module): see IpcStreamEncoder.
import { Message, RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
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

const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

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

// Binary COPY → Arrow, without a JavaScript value per field: text and JSON bytes are copied from the
// COPY buffer into the Arrow column as they are (no UTF-8 decode and re-encode, no JSON parse),
// numbers are byte-swapped in place. This is where the export spent most of its CPU before.

const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** PostgreSQL timestamps count microseconds from 2000-01-01; Arrow's from 1970-01-01. */
const PG_EPOCH_MICROS = 946_684_800_000_000;
const TWO_32 = 2 ** 32;

/**
 * The memory of one batch's Arrow columns, reused from batch to batch: on this kind of machine (a VM)
 * first touching a fresh buffer's pages cost more than the copies into it, and a batch's columns are
 * megabytes. Everything handed out stays valid until reset(), called once the batch was handed to
 * parquet-wasm (which copies it). A batch larger than the arena gets more chunks, merged at reset.
 */
export class DecodeArena {
  private chunk: ArrayBuffer;
  private used = 0;
  private extra = 0;

  constructor(bytes = 1 << 20) {
    this.chunk = new ArrayBuffer(bytes);
  }

  /** Takes back everything handed out. */
  reset(): void {
    if (this.extra) this.chunk = new ArrayBuffer(Math.ceil((this.chunk.byteLength + this.extra) * 1.25));
    this.used = 0;
    this.extra = 0;
  }

  bytes(length: number, zeroed = false): Uint8Array {
    const [buffer, offset] = this.take(length);
    const bytes = new Uint8Array(buffer, offset, length);
    if (zeroed) bytes.fill(0);
    return bytes;
  }

  int32(length: number, zeroed = false): Int32Array {
    const [buffer, offset] = this.take(length * 4);
    const values = new Int32Array(buffer, offset, length);
    if (zeroed) values.fill(0);
    return values;
  }

  /** `bytes` bytes at an 8-byte aligned offset (Arrow's alignment, and any typed array's). */
  private take(bytes: number): [ArrayBuffer, number] {
    const offset = (this.used + 7) & ~7;
    if (offset + bytes <= this.chunk.byteLength) {
      this.used = offset + bytes;
      return [this.chunk, offset];
    }
    // Past the arena: a buffer of its own this time, and a larger arena from the next reset.
    this.extra += bytes + 8;
    return [new ArrayBuffer(bytes), 0];
  }
}

/** Where each field of a column lies in the COPY buffer: start and length (-1: NULL) per row. */
type FieldSpans = { starts: Int32Array; lengths: Int32Array };

/** One decoded batch: its Arrow record batch, and the (start_time, id) of its last row for the cursor. */
export type CopyBatch = { batch: RecordBatch; rows: number; last: { start_time: string; id: string } | null };

/**
 * Decodes the output of `COPY (SELECT <columns' sql>, r.start_time, r.id …) TO STDOUT (FORMAT binary)`
 * into an Arrow record batch; `expectedRows` sizes the first allocation.
 */
export function recordBatchFromCopy(columns: ExportColumn[], copy: Buffer, expectedRows: number, arena = new DecodeArena()): CopyBatch {
  return recordBatchFromSpans(columns, copy, copyFieldSpans(copy, columns.length + 2, expectedRows, arena), arena);
}

/** Where each field of each row lies in a binary COPY buffer (the first stage of decoding). */
export type CopySpans = { fields: FieldSpans[]; rows: number };

export function copyFieldSpans(copy: Buffer, fieldCount: number, expectedRows: number, arena = new DecodeArena()): CopySpans {
  if (copy.length < 19 || !copy.subarray(0, 11).equals(COPY_SIGNATURE)) throw new Error('not a binary COPY stream');
  let position = 19 + copy.readInt32BE(15);
  let capacity = Math.max(16, expectedRows);
  let fields: FieldSpans[] = Array.from({ length: fieldCount }, () => ({ starts: arena.int32(capacity), lengths: arena.int32(capacity) }));
  let rows = 0;
  for (;;) {
    const count = copy.readInt16BE(position);
    position += 2;
    if (count === -1) break;
    if (count !== fieldCount) throw new Error(`binary COPY row of ${count} fields, expected ${fieldCount}`);
    if (rows === capacity) {
      // More rows than planned: runs ingested into the batch's key range since it was planned.
      capacity *= 2;
      fields = fields.map(({ starts, lengths }) => {
        const grown = { starts: arena.int32(capacity), lengths: arena.int32(capacity) };
        grown.starts.set(starts);
        grown.lengths.set(lengths);
        return grown;
      });
    }
    for (let field = 0; field < fieldCount; field++) {
      const length = copy.readInt32BE(position);
      position += 4;
      fields[field]!.starts[rows] = position;
      fields[field]!.lengths[rows] = length;
      if (length > 0) position += length;
    }
    rows++;
  }
  return { fields, rows };
}

/** The Arrow columns of a scanned COPY buffer (the second stage of decoding), and the batch's cursor. */
export function recordBatchFromSpans(columns: ExportColumn[], copy: Buffer, { fields: spans, rows }: CopySpans, arena = new DecodeArena()): CopyBatch {
  const fields = columns.map((column) => new Field(column.name, column.type, true));
  const children = columns.map((column, index) => columnFromCopy(column, copy, spans[index]!, rows, arena));
  const batch = new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: rows, children }));
  const startTimes = spans[columns.length]!;
  const ids = spans[columns.length + 1]!;
  const lastRow = rows - 1;
  const last = rows
    ? {
        start_time: microsToIso(pgMicros(copy, startTimes.starts[lastRow]!)),
        id: copy.toString('hex', ids.starts[lastRow]!, ids.starts[lastRow]! + 16).replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'),
      }
    : null;
  return { batch, rows, last };
}

/** A timestamptz field (int64 big-endian, microseconds since 2000) as microseconds since 1970. */
function pgMicros(copy: Buffer, start: number): number {
  // Exact as a double within ±285 years of 1970, which covers any trace.
  return copy.readInt32BE(start) * TWO_32 + copy.readUInt32BE(start + 4) + PG_EPOCH_MICROS;
}

/** ISO 8601 with microseconds, the form the cursor is stored in. */
function microsToIso(micros: number): string {
  const millis = Math.floor(micros / 1000);
  return `${new Date(millis).toISOString().slice(0, 19)}.${String(micros - Math.floor(micros / 1_000_000) * 1_000_000).padStart(6, '0')}Z`;
}

/** Validity bitmap (bit set: value present) and null count of a column, from its field lengths. */
function validityOf(lengths: Int32Array, rows: number, arena: DecodeArena): { nullBitmap: Uint8Array | undefined; nullCount: number } {
  let nullCount = 0;
  const bitmap = arena.bytes((rows + 7) >> 3, true);
  for (let i = 0; i < rows; i++) {
    if (lengths[i] === -1) nullCount++;
    else bitmap[i >> 3]! |= 1 << (i & 7);
  }
  return { nullBitmap: nullCount ? bitmap : undefined, nullCount };
}

/** A Utf8 column from the byte spans of its values: offsets, then one copy per value. */
function utf8FromSpans(copy: Buffer, starts: Int32Array, lengths: Int32Array, count: number, arena: DecodeArena): Data<Utf8> {
  const offsets = arena.int32(count + 1);
  offsets[0] = 0;
  let total = 0;
  for (let i = 0; i < count; i++) {
    if (lengths[i]! > 0) total += lengths[i]!;
    offsets[i + 1] = total;
  }
  const data = arena.bytes(total);
  for (let i = 0; i < count; i++) {
    const length = lengths[i]!;
    if (length <= 0) continue;
    const from = starts[i]!;
    const to = offsets[i]!;
    // Short values byte by byte: a native copy call costs more than the copy itself below ~64 bytes.
    if (length < 64) for (let b = 0; b < length; b++) data[to + b] = copy[from + b]!;
    else copy.copy(data, to, from, from + length);
  }
  return makeData({ type: new Utf8(), length: count, valueOffsets: offsets, data, ...validityOf(lengths, count, arena) });
}

const HEX = new TextEncoder().encode('0123456789abcdef');
/** Where the dashes of a UUID's text go: after its 4th, 6th, 8th and 10th byte. */
const UUID_DASH_AFTER = [0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0];

/** A Utf8 column of UUIDs in PostgreSQL's text form (36 characters, lowercase) from binary 16-byte values. */
function uuidTextFromSpans(copy: Buffer, starts: Int32Array, lengths: Int32Array, count: number, arena: DecodeArena): Data<Utf8> {
  const offsets = arena.int32(count + 1);
  offsets[0] = 0;
  let total = 0;
  for (let i = 0; i < count; i++) {
    if (lengths[i] === 16) total += 36;
    else if (lengths[i] !== -1) throw new Error(`binary uuid of ${lengths[i]} bytes`);
    offsets[i + 1] = total;
  }
  const data = arena.bytes(total);
  for (let i = 0; i < count; i++) {
    if (lengths[i] !== 16) continue;
    let to = offsets[i]!;
    const from = starts[i]!;
    for (let b = 0; b < 16; b++) {
      const byte = copy[from + b]!;
      data[to++] = HEX[byte >> 4]!;
      data[to++] = HEX[byte & 15]!;
      if (UUID_DASH_AFTER[b]) data[to++] = 45; // '-'
    }
  }
  return makeData({ type: new Utf8(), length: count, valueOffsets: offsets, data, ...validityOf(lengths, count, arena) });
}

/** The text spans of binary jsonb values: past the format's version byte (1). */
function jsonbText(copy: Buffer, spans: FieldSpans, rows: number, arena: DecodeArena): [Int32Array, Int32Array] {
  const starts = arena.int32(rows);
  const lengths = arena.int32(rows);
  for (let i = 0; i < rows; i++) {
    const length = spans.lengths[i]!;
    if (length === -1) {
      lengths[i] = -1;
      continue;
    }
    if (length < 1 || copy[spans.starts[i]!] !== 1) throw new Error('binary jsonb of an unknown version');
    starts[i] = spans.starts[i]! + 1;
    lengths[i] = length - 1;
  }
  return [starts, lengths];
}

/** Eight big-endian bytes per value → little-endian, in place of a typed array's buffer (Arrow is little-endian). */
function swap64(copy: Buffer, spans: FieldSpans, rows: number, arena: DecodeArena): Uint8Array {
  const out = arena.bytes(rows * 8, true);
  for (let i = 0; i < rows; i++) {
    if (spans.lengths[i] !== 8) continue;
    const from = spans.starts[i]!;
    const to = i * 8;
    for (let b = 0; b < 8; b++) out[to + b] = copy[from + 7 - b]!;
  }
  return out;
}

function columnFromCopy(column: ExportColumn, copy: Buffer, spans: FieldSpans, rows: number, arena: DecodeArena): Data {
  const { starts, lengths } = spans;
  const validity = () => validityOf(lengths, rows, arena);
  const int64 = (bytes: Uint8Array) => new BigInt64Array(bytes.buffer, bytes.byteOffset, rows);
  switch (column.kind) {
    case 'timestamp': {
      const words = arena.int32(rows * 2, true);
      for (let i = 0; i < rows; i++) {
        if (lengths[i] === -1) continue;
        const micros = pgMicros(copy, starts[i]!);
        const high = Math.floor(micros / TWO_32);
        words[2 * i] = micros - high * TWO_32;
        words[2 * i + 1] = high;
      }
      return makeData({ type: column.type as TimestampMicrosecond, length: rows, data: new BigInt64Array(words.buffer, words.byteOffset, rows), ...validity() });
    }
    case 'int':
      return makeData({ type: new Int64(), length: rows, data: int64(swap64(copy, spans, rows, arena)), ...validity() });
    case 'float': {
      const bytes = swap64(copy, spans, rows, arena);
      return makeData({ type: new Float64(), length: rows, data: new Float64Array(bytes.buffer, bytes.byteOffset, rows), ...validity() });
    }
    case 'bool': {
      const data = arena.bytes((rows + 7) >> 3, true);
      for (let i = 0; i < rows; i++) if (lengths[i] === 1 && copy[starts[i]!]) data[i >> 3]! |= 1 << (i & 7);
      return makeData({ type: new Bool(), length: rows, data, ...validity() });
    }
    case 'textList':
      return listFromCopy(column, copy, spans, rows, arena, utf8FromSpans);
    case 'uuidList':
      return listFromCopy(column, copy, spans, rows, arena, uuidTextFromSpans);
    case 'uuid':
      return uuidTextFromSpans(copy, starts, lengths, rows, arena);
    case 'json':
      return utf8FromSpans(copy, ...jsonbText(copy, spans, rows, arena), rows, arena);
    default:
      return utf8FromSpans(copy, starts, lengths, rows, arena);
  }
}

/**
 * A list<string> column from binary array values (text[], uuid[]): ndim, has-nulls flag, element
 * type, then per dimension its size and lower bound, then the elements (length, bytes), turned into
 * strings by `itemColumn`. Dimensions are flattened.
 */
function listFromCopy(
  column: ExportColumn,
  copy: Buffer,
  spans: FieldSpans,
  rows: number,
  arena: DecodeArena,
  itemColumn: (copy: Buffer, starts: Int32Array, lengths: Int32Array, count: number, arena: DecodeArena) => Data<Utf8>,
): Data {
  const offsets = arena.int32(rows + 1);
  offsets[0] = 0;
  let itemStarts = arena.int32(rows * 2 + 16);
  let itemLengths = arena.int32(rows * 2 + 16);
  let items = 0;
  for (let i = 0; i < rows; i++) {
    if (spans.lengths[i]! > 0) {
      let position = spans.starts[i]!;
      const dimensions = copy.readInt32BE(position);
      position += 12;
      let count = dimensions ? 1 : 0;
      for (let d = 0; d < dimensions; d++, position += 8) count *= copy.readInt32BE(position);
      if (items + count > itemStarts.length) {
        const grow = (array: Int32Array) => {
          const bigger = arena.int32(Math.max(array.length * 2, items + count));
          bigger.set(array);
          return bigger;
        };
        itemStarts = grow(itemStarts);
        itemLengths = grow(itemLengths);
      }
      for (let k = 0; k < count; k++, items++) {
        const length = copy.readInt32BE(position);
        position += 4;
        itemStarts[items] = position;
        itemLengths[items] = length;
        if (length > 0) position += length;
      }
    }
    offsets[i + 1] = items;
  }
  const child = itemColumn(copy, itemStarts, itemLengths, items, arena);
  return makeData({ type: column.type as List<Utf8>, length: rows, valueOffsets: offsets, child, ...validityOf(spans.lengths, rows, arena) });
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

/**
 * Arrow (JS) record batches → Arrow IPC stream bytes (schema, one record batch, end of stream) in one
 * buffer that is reused from batch to batch. apache-arrow's tableToIPC joins its pieces into a freshly
 * allocated buffer per call, and on this kind of machine (a VM) first touching fresh pages cost more
 * than the copy itself: ~11 µs per row of an export batch, against ~1 µs into a buffer already touched.
 * The bytes are the IPC writer's (its flatbuffer messages, 8-byte aligned body buffers); the returned
 * view is only valid until the next call, parquet-wasm copies it into wasm memory at once.
 */
export class IpcStreamEncoder {
  private buffer = new Uint8Array(0);
  private schemaMessage: { schema: Schema; bytes: Uint8Array } | undefined;

  encode(batch: RecordBatch): Uint8Array {
    if (this.schemaMessage?.schema !== batch.schema) this.schemaMessage = { schema: batch.schema, bytes: Message.encode(Message.from(batch.schema)) };
    const { byteLength, nodes, bufferRegions, buffers, variadicBufferCounts } = VectorAssembler.assemble(batch);
    const header = Message.encode(Message.from(new RecordBatchHeader(batch.numRows, nodes, bufferRegions, null, variadicBufferCounts), byteLength));
    const size = framedSize(this.schemaMessage.bytes) + framedSize(header) + byteLength + 8;
    // Grown with headroom, never shrunk: batches of one export are about the same size.
    if (this.buffer.byteLength < size) this.buffer = new Uint8Array(Math.ceil(size * 1.25));
    const out = this.buffer;
    const view = new DataView(out.buffer, out.byteOffset, size);
    let position = writeFramed(out, view, 0, this.schemaMessage.bytes);
    position = writeFramed(out, view, position, header);
    for (let i = 0; i < buffers.length; i++) {
      const { offset, length } = bufferRegions[i]!;
      const bytes = buffers[i]!;
      const start = position + Number(offset);
      out.set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), start);
      // The region is the buffer padded to 8 bytes: zero the padding (the reused buffer holds old bytes).
      out.fill(0, start + bytes.byteLength, start + Number(length));
    }
    position += byteLength;
    view.setInt32(position, -1, true); // end of stream: continuation marker, then a zero length
    view.setInt32(position + 4, 0, true);
    return out.subarray(0, position + 8);
  }
}

/** A message's size in the stream: continuation marker, length, flatbuffer padded to 8 bytes. */
const framedSize = (flatbuffer: Uint8Array) => (flatbuffer.byteLength + 8 + 7) & ~7;

function writeFramed(out: Uint8Array, view: DataView, position: number, flatbuffer: Uint8Array): number {
  const size = framedSize(flatbuffer);
  view.setInt32(position, -1, true);
  view.setInt32(position + 4, size - 8, true);
  out.set(flatbuffer, position + 8);
  out.fill(0, position + 8 + flatbuffer.byteLength, position + size);
  return position + size;
}

/** Arrow (JS) record batch → parquet-wasm record batches, through one IPC stream buffer. */
export function toWasmBatches(batch: RecordBatch, encoder = new IpcStreamEncoder()): parquet.RecordBatch[] {
  const table = parquet.Table.fromIPCStream(encoder.encode(batch));
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
  private readonly ipc = new IpcStreamEncoder();
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
    this.queue.push(...toWasmBatches(batch, this.ipc));
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
