// Binary COPY → Arrow, without a JavaScript value per field: text and JSON bytes are copied from the
// COPY buffer into the Arrow column as they are (no UTF-8 decode and re-encode, no JSON parse),
// numbers are byte-swapped in place. This is where the export spent most of its CPU before. Columns are
// built from offsets plus one buffer (`makeData`): vectorFromArray on strings was about 3× slower and
// doubled memory (STACK-NOTES, "Arrow → Parquet").
import {
  Bool,
  type Data,
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
import type { ExportColumn } from './export-columns.js';

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
