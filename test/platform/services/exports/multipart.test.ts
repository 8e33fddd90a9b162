// The multipart object an export file is written through, against s3rver: chunks of any size, across
// part boundaries, arrive as exactly the bytes written, in parts of the configured size (the part
// buffer is reused from part to part, so a part must not see the next one's bytes).
import { randomBytes } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MultipartObject } from '../../../../src/platform/services/exports/s3.js';
import { type S3Server, startS3 } from '../../../support/exports.js';

const PART = 5 * 1024 ** 2; // S3's smallest part but the last

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('parts');
});
afterAll(() => s3?.stop());

it('uploads chunks across part boundaries as exactly the bytes written, in parts of the part size', async () => {
  // Chunks smaller than, larger than and straddling a part; 12.5 MiB in all: two full parts and a last one.
  const chunks = [1, 3 * 1024 ** 2, 2 * 1024 ** 2 + 17, 7 * 1024 ** 2, 1024 ** 2 / 2 - 18].map((size) => randomBytes(size));
  // The size of each part sent, seen on the real client (s3rver has no ListParts).
  const partSizes: number[] = [];
  s3.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UploadPartCommand') partSizes.push((args.input as { ContentLength: number }).ContentLength);
      return next(args);
    },
    { step: 'initialize', name: 'recordPartSizes' },
  );
  const object = new MultipartObject(s3.client, 'parts', 'file.parquet', PART);
  // The caller reuses its chunk buffers (as parquet-wasm's output may): what was written must not change.
  const expected = Buffer.concat(chunks);
  for (const chunk of chunks) {
    await object.write(chunk);
    chunk.fill(0);
  }
  expect(object.bytes).toBe(expected.byteLength);
  // Before complete(), the parts uploaded so far are the full ones; the rest is the last part.
  expect(partSizes).toEqual([PART, PART]);
  await object.complete();
  s3.client.middlewareStack.remove('recordPartSizes');
  expect(partSizes).toEqual([PART, PART, expected.byteLength - 2 * PART]);

  const stored = await s3.client.send(new GetObjectCommand({ Bucket: 'parts', Key: 'file.parquet' }));
  const body = Buffer.from(await stored.Body!.transformToByteArray());
  expect(body.byteLength).toBe(expected.byteLength);
  expect(body.equals(expected)).toBe(true);
});

it('writes a small file as one part', async () => {
  const object = new MultipartObject(s3.client, 'parts', 'small.parquet', PART);
  await object.write(Buffer.from('PAR1'));
  await object.write(Buffer.from('…PAR1'));
  await object.complete();
  const stored = await s3.client.send(new GetObjectCommand({ Bucket: 'parts', Key: 'small.parquet' }));
  expect(await stored.Body!.transformToString()).toBe('PAR1…PAR1');
});
