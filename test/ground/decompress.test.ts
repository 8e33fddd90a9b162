import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decompress } from '../../src/limits/decompress.js';

const limits = { outputBytes: 10 * 1024 * 1024, zstdWindowBytes: 8 * 1024 * 1024 };
const text = Buffer.from('trace agent tool search answer context model token graph state '.repeat(4000));

/** The gzip body with its trailer's decoded size (ISIZE) replaced by `size`. */
function withDeclaredSize(body: Buffer, size: number): Buffer {
  const copy = Buffer.from(body);
  copy.writeUInt32LE(size, copy.length - 4);
  return copy;
}

describe('gzip decoding sized by its trailer', () => {
  it('decodes a body into one buffer of its declared size', async () => {
    const decoded = await decompress(gzipSync(text), 'gzip', limits);
    expect(decoded.equals(text)).toBe(true);
    // One output chunk (ISIZE + 1), not 16 KiB chunks joined by a copy.
    expect(decoded.buffer.byteLength).toBeLessThanOrEqual(text.length + 1);
  });

  it('refuses a trailer that misstates the size, and decodes several members whose last trailer is not the whole', async () => {
    const body = gzipSync(text);
    // zlib checks the trailer against the output (400, as before): a lie only sizes the first chunk.
    await expect(decompress(withDeclaredSize(body, 100), 'gzip', limits)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(decompress(withDeclaredSize(body, 3 * 1024 * 1024), 'gzip', limits)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    // Two members: the trailer read is the last member's, smaller than the whole (more chunks).
    const twoMembers = Buffer.concat([gzipSync(text), gzipSync(text.subarray(0, 1000))]);
    const decoded = await decompress(twoMembers, 'gzip', limits);
    expect(decoded.equals(Buffer.concat([text, text.subarray(0, 1000)]))).toBe(true);
  });

  it('does not keep an overstated chunk behind a small result', async () => {
    const small = Buffer.from('{"name":"a run"}');
    // Bytes after the member that are no gzip header are ignored by zlib; read as a trailer they claim 3 MiB.
    const decoded = await decompress(Buffer.concat([gzipSync(small), Buffer.from([0, 0, 0x30, 0])]), 'gzip', limits);
    expect(decoded.equals(small)).toBe(true);
    expect(decoded.buffer.byteLength).toBeLessThan(64 * 1024);
  });

  it('still stops at the output limit (413)', async () => {
    await expect(decompress(gzipSync(text), 'gzip', { ...limits, outputBytes: 1000 })).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });
});
