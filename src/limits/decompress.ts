// Undoing a Content-Encoding without letting a small body cost the server a lot of time or memory.
//
// Two attacks shape this module. A zstd frame can declare a window of up to ~2 GiB that the decoder
// must allocate, and then hold thousands of one-byte blocks, each of which made the previous
// (JavaScript) decoder shift the whole window; a gzip body of 100 KB can inflate to 100 MB. So: the
// declared window is read from every frame header before anything is decoded and refused above the
// cap, decoding stops at the output limit (zlib's maxOutputLength), and everything beyond a small size
// is decoded on libuv's thread pool, a few bodies at a time, never on the event loop.
import v8 from 'node:v8';
import vm from 'node:vm';
import zlib from 'node:zlib';
import { Decompress } from 'fzstd';
import { AppError } from '../errors.js';
import { createGate } from './concurrency.js';

export type DecompressLimits = {
  /** Largest decoded size accepted (PAYLOAD_TOO_LARGE beyond). */
  outputBytes: number;
  /** Largest zstd window a frame may declare (PAYLOAD_TOO_LARGE beyond); never more than outputBytes. */
  zstdWindowBytes: number;
};

/** zstd's own recommendation for what every decoder should accept; also what `zstd -19` uses. */
export const DEFAULT_ZSTD_WINDOW_BYTES = 8 * 1024 * 1024;

const tooLarge = (limit: number) => new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds ${limit} bytes.`);
const corrupt = (encoding: string) => new AppError('BAD_REQUEST', `Request body is not valid ${encoding} data.`);

// Small bodies whose decoded size is bounded by this are inflated on the event loop: well under a
// millisecond, and async zlib would hand every 16 KiB of output back to a busy event loop (measured:
// ~200 ms per 250 KiB body at 32 concurrent posts). Anything that would decode larger goes to a stream.
const SYNC_INPUT_MAX = 256 * 1024;
const SYNC_OUTPUT_MAX = 4 * 1024 * 1024;

// Node 22.15+ has libzstd in zlib: streaming, on the thread pool, with a window cap (ZSTD_d_windowLogMax).
const nativeZstd = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function';

/** Undoes one content coding (gzip, x-gzip, deflate, br, zstd) within `limits`. */
export async function decompress(body: Buffer, encoding: string, limits: DecompressLimits): Promise<Buffer> {
  const outputLimit = limits.outputBytes;
  try {
    switch (encoding) {
      case 'gzip':
      case 'x-gzip':
        return await inflate(body, outputLimit, zlib.gunzipSync, zlib.gunzip, gzipOutputChunk(body));
      case 'deflate':
        return await inflate(body, outputLimit, zlib.inflateSync, zlib.inflate);
      case 'br':
        return await inflate(body, outputLimit, zlib.brotliDecompressSync, zlib.brotliDecompress);
      case 'zstd': {
        const windowLimit = Math.min(limits.zstdWindowBytes, outputLimit);
        assertZstdWindows(body, windowLimit);
        if (!nativeZstd) return unzstdInJs(body, outputLimit);
        const windowLogMax = Math.max(10, Math.ceil(Math.log2(windowLimit)));
        const constants = zlib.constants as unknown as Record<string, number>;
        const params = { [constants.ZSTD_d_windowLogMax!]: windowLogMax };
        const zstdDecompress = (zlib as unknown as { zstdDecompress: AsyncDecoder }).zstdDecompress;
        return await decodeOffLoop(body, outputLimit, (input, options, done) => zstdDecompress(input, { ...options, params }, done));
      }
      default:
        throw new AppError('BAD_REQUEST', `Unsupported Content-Encoding: ${encoding}.`);
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError) throw tooLarge(outputLimit);
    throw corrupt(encoding);
  }
}

type SyncDecoder = (body: Buffer, options: { maxOutputLength: number; chunkSize?: number }) => Buffer;
type DecodeOptions = { maxOutputLength: number; chunkSize: number; params?: Record<number, number> };
type AsyncDecoder = (body: Buffer, options: DecodeOptions, done: (error: Error | null, result: Buffer) => void) => void;

async function inflate(body: Buffer, limit: number, decodeSync: SyncDecoder, decodeAsync: AsyncDecoder, chunkSize?: number): Promise<Buffer> {
  if (body.length <= SYNC_INPUT_MAX) {
    try {
      const decoded = decodeSync(body, { maxOutputLength: Math.min(limit, SYNC_OUTPUT_MAX), chunkSize });
      // A chunk sized by a trailer that overstated the body is not kept whole behind a small result.
      return chunkSize && decoded.length < chunkSize / 2 ? Buffer.copyBytesFrom(decoded) : decoded;
    } catch (error) {
      // Larger than the event loop's share: decode again on the thread pool, up to the real limit.
      if ((error as { code?: string }).code !== 'ERR_BUFFER_TOO_LARGE' || limit <= SYNC_OUTPUT_MAX) throw error;
    }
  }
  return decodeOffLoop(body, limit, decodeAsync);
}

// zlib's default output chunk is 16 KiB: a 250 KiB multipart body was 16 chunks joined by one more
// copy. A gzip member ends with its decoded size (ISIZE, modulo 2^32), so the output gets one chunk of
// that size (one byte more, so a full chunk does not make zlib allocate another for nothing); a
// trailer that understates it only means more chunks, one that overstates it is capped by the sync limit.
const MIN_OUTPUT_CHUNK = 16 * 1024;

function gzipOutputChunk(body: Buffer): number | undefined {
  if (body.length < 18) return undefined;
  const declared = body.readUInt32LE(body.length - 4);
  return Math.min(Math.max(declared + 1, MIN_OUTPUT_CHUNK), SYNC_OUTPUT_MAX);
}

// Large decodes run a few at a time: each may hold up to the output limit (and its caller the parsed
// copy), so eight bodies inflating to 95 MB at once would hold a gigabyte.
const largeDecodes = createGate(2);

/** Decodes on libuv's thread pool in 1 MiB steps (not 16 KiB ones), stopping with an error past `limit`. */
async function decodeOffLoop(body: Buffer, limit: number, decode: AsyncDecoder): Promise<Buffer> {
  try {
    return await largeDecodes.run(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          decode(body, { maxOutputLength: limit, chunkSize: 1024 * 1024 }, (error, result) => (error ? reject(error) : resolve(result)));
        }),
    );
  } finally {
    collectAfterLargeDecodes();
  }
}

// A large decode leaves garbage several times its output (zlib's 1 MiB output chunks, the joined body,
// the string JSON is parsed from), mostly outside V8's heap, where it does not prompt a collection; a
// thread that goes quiet afterwards runs none, so it stayed resident: eight parallel 95 MB gzip bodies
// left about 0.6 GB (npm run bench:bombs), all of it freed by one full collection. So a full collection
// runs once a burst of large decodes is over (each thread has its own heap and its own timer).
const COLLECT_DELAY_MS = 1000;
let collectTimer: NodeJS.Timeout | undefined;
let fullCollection: (() => void) | undefined | null = null;

function collectAfterLargeDecodes() {
  if (fullCollection === null) {
    // `gc` without starting node with --expose-gc: the flag applies to contexts created after it is set.
    v8.setFlagsFromString('--expose-gc');
    fullCollection = vm.runInNewContext('gc') as (() => void) | undefined;
  }
  if (!fullCollection) return;
  clearTimeout(collectTimer);
  collectTimer = setTimeout(() => fullCollection!(), COLLECT_DELAY_MS).unref();
}

const ZSTD_MAGIC = 0xfd2fb528;

/**
 * Walks the frames of a zstd body (headers and block headers only, no decoding) and refuses any
 * frame whose window, the memory a decoder must hold, exceeds `windowLimit`. Frames whose headers are
 * malformed are left for the decoder to reject.
 */
function assertZstdWindows(body: Uint8Array, windowLimit: number): void {
  let pos = 0;
  while (pos + 4 <= body.length) {
    const magic = (body[pos]! | (body[pos + 1]! << 8) | (body[pos + 2]! << 16) | (body[pos + 3]! << 24)) >>> 0;
    if ((magic & 0xfffffff0) === 0x184d2a50) {
      // Skippable frame: 4-byte magic, 4-byte size, then that many bytes.
      if (pos + 8 > body.length) return;
      pos += 8 + ((body[pos + 4]! | (body[pos + 5]! << 8) | (body[pos + 6]! << 16) | (body[pos + 7]! << 24)) >>> 0);
      continue;
    }
    if (magic !== ZSTD_MAGIC || pos + 5 > body.length) return;
    const descriptor = body[pos + 4]!;
    const singleSegment = (descriptor >> 5) & 1;
    const contentSizeFlag = descriptor >> 6;
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
    const contentSizeBytes = [singleSegment, 2, 4, 8][contentSizeFlag]!;
    let cursor = pos + 5;
    let window: number;
    if (singleSegment) {
      // No window descriptor: the window is the frame's whole content size.
      const at = cursor + dictionaryBytes;
      if (at + contentSizeBytes > body.length) return;
      let contentSize = 0;
      for (let i = contentSizeBytes - 1; i >= 0; i--) contentSize = contentSize * 256 + body[at + i]!;
      if (contentSizeBytes === 2) contentSize += 256;
      window = contentSize;
    } else {
      const windowDescriptor = body[cursor]!;
      cursor += 1;
      const base = 2 ** (10 + (windowDescriptor >> 3));
      window = base + (base / 8) * (windowDescriptor & 7);
    }
    if (window > windowLimit) {
      throw new AppError('PAYLOAD_TOO_LARGE', `zstd frame declares a ${window}-byte window; at most ${windowLimit} bytes are accepted.`);
    }
    cursor += dictionaryBytes + contentSizeBytes;
    // Blocks: a 3-byte header (last flag, type, size); RLE blocks carry one byte whatever their size.
    for (;;) {
      if (cursor + 3 > body.length) return;
      const header = body[cursor]! | (body[cursor + 1]! << 8) | (body[cursor + 2]! << 16);
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      cursor += 3 + (type === 1 ? 1 : size);
      if (header & 1) break;
    }
    if (descriptor & 4) cursor += 4; // content checksum
    pos = cursor;
  }
}

// Each block makes fzstd shift its whole window, so blocks × window is the work a body costs it.
// Only used on Node versions without zlib zstd (below 22.15); bounded to about a second of copying.
const JS_ZSTD_WORK_MAX = 1024 * 1024 * 1024;

/** zstd through fzstd's streaming decoder (Node < 22.15), stopping at `limit` bytes. */
function unzstdInJs(body: Buffer, limit: number): Buffer {
  if (body.length === 0) throw corrupt('zstd');
  const out: Uint8Array[] = [];
  let size = 0;
  let blocks = 0;
  const decoder = new Decompress((data) => {
    size += data.length;
    blocks += 1;
    if (size > limit) throw tooLarge(limit);
    if (blocks * Math.min(limit, DEFAULT_ZSTD_WINDOW_BYTES) > JS_ZSTD_WORK_MAX && blocks * 1024 > size) {
      throw new AppError('PAYLOAD_TOO_LARGE', 'zstd body has too many small blocks; compress it with a standard encoder.');
    }
    out.push(data);
  });
  // Feed in slices so the size check runs before a bomb is fully inflated.
  const step = 1 << 20;
  for (let offset = 0; offset < body.length; offset += step) {
    decoder.push(body.subarray(offset, offset + step), offset + step >= body.length);
  }
  return Buffer.concat(out, size);
}
