// The export hands parquet-wasm Arrow IPC bytes written into one reused buffer (IpcStreamEncoder):
// they must be exactly apache-arrow's own IPC stream, also for a second, smaller batch written over
// the bytes of the first (stale padding would corrupt a body buffer or a message).
import { Field, Int64, List, makeData, RecordBatch, Schema, Struct, Table, tableFromIPC, tableToIPC, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import * as parquet from 'parquet-wasm';
import { IpcStreamEncoder } from '../../../../src/platform/services/exports/parquet.js';

const encoder = new TextEncoder();

function batchOf(texts: (string | null)[], tags: string[][]): RecordBatch {
  const rows = texts.length;
  const utf8 = (values: (string | null)[]) => {
    const bytes = values.map((value) => encoder.encode(value ?? ''));
    const offsets = new Int32Array(values.length + 1);
    bytes.forEach((value, i) => (offsets[i + 1] = offsets[i]! + value.byteLength));
    const data = new Uint8Array(offsets[values.length]!);
    bytes.forEach((value, i) => data.set(value, offsets[i]!));
    const nullBitmap = new Uint8Array((values.length + 7) >> 3);
    values.forEach((value, i) => value !== null && (nullBitmap[i >> 3]! |= 1 << (i & 7)));
    const nullCount = values.filter((value) => value === null).length;
    return makeData({ type: new Utf8(), length: values.length, valueOffsets: offsets, data, nullBitmap, nullCount });
  };
  const listOffsets = new Int32Array(rows + 1);
  tags.forEach((list, i) => (listOffsets[i + 1] = listOffsets[i]! + list.length));
  const fields = [
    new Field('text', new Utf8(), true),
    new Field('tags', new List(new Field('item', new Utf8(), true)), true),
    new Field('tokens', new Int64(), true),
  ];
  const children = [
    utf8(texts),
    makeData({ type: fields[1]!.type as List<Utf8>, length: rows, valueOffsets: listOffsets, child: utf8(tags.flat()) }),
    makeData({ type: new Int64(), length: rows, data: BigInt64Array.from(texts, (_, i) => BigInt(i * 1000)) }),
  ];
  return new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: rows, children }));
}

describe('IpcStreamEncoder', () => {
  it('writes the bytes of apache-arrow IPC stream, batch after batch into its reused buffer', () => {
    const ipc = new IpcStreamEncoder();
    const first = batchOf(['a longer first value', null, 'ünïcödé', 'x'.repeat(300)], [['bench'], [], ['a', 'b', 'c'], ['shard-1']]);
    const second = batchOf(['b', 'cc', null], [[], ['t'], []]);
    expect(ipc.encode(first)).toEqual(tableToIPC(new Table([first]), 'stream'));
    expect(ipc.encode(second)).toEqual(tableToIPC(new Table([second]), 'stream'));
  });

  it('is read by parquet-wasm with the rows and values it was given', () => {
    const batch = batchOf(['one', null, 'three'], [['x'], [], ['y', 'z']]);
    const table = parquet.Table.fromIPCStream(new IpcStreamEncoder().encode(batch));
    const bytes = parquet.writeParquet(table);
    const rows = [...tableFromIPC(parquet.readParquet(bytes).intoIPCStream())].map((row) => row.toJSON());
    expect(rows.map((row) => [row.text, row.tags?.toArray(), row.tokens])).toEqual([
      ['one', ['x'], 0n],
      [null, [], 1000n],
      ['three', ['y', 'z'], 2000n],
    ]);
  });
});
