// Arrow record batches → Parquet (parquet-wasm, streaming) → one S3 multipart object. The batches come
// from trace rows read by binary COPY (copy-decode.ts).
import type { RecordBatch, Schema } from 'apache-arrow';
// The IPC writer's own parts (the package exports every module): see IpcStreamEncoder.
import { Message, RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
import * as parquet from 'parquet-wasm';
import type { Compression } from './exports.schemas.js';

/** Where a Parquet file's bytes go: an S3 multipart object (s3.ts), or a counter in the benchmark. */
export type ByteSink = {
  readonly key: string;
  readonly bytes: number;
  write(chunk: Uint8Array): Promise<void>;
  complete(): Promise<void>;
  abort(): Promise<void>;
};

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
