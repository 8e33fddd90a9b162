// S3-compatible storage for exports: the client for a destination, the write test run on create and
// rotate, multipart uploads, and the classification of storage errors (not retried) versus the rest.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { AppError } from '../../../errors.js';
import { newId } from '../../../ids.js';
import type { DestinationConfigValue, DestinationCredentialsValue } from './exports.schemas.js';

/** A client for one destination; without credentials the SDK's default credential chain applies. */
export function destinationClient(config: DestinationConfigValue, credentials: DestinationCredentialsValue | null, requestTimeoutSeconds = 30): S3Client {
  return new S3Client({
    requestHandler: { requestTimeout: requestTimeoutSeconds * 1000, connectionTimeout: 10_000 },
    region: config.region ?? 'us-east-1',
    ...(config.endpoint_url ? { endpoint: config.endpoint_url, forcePathStyle: true } : {}),
    ...(credentials
      ? {
          credentials: {
            accessKeyId: credentials.access_key_id,
            secretAccessKey: credentials.secret_access_key,
            ...(credentials.session_token ? { sessionToken: credentials.session_token } : {}),
          },
        }
      : {}),
    // Checksums only when an operation needs them: with the default, streamed bodies are sent with
    // aws-chunked framing that several S3-compatible stores (s3rver, older MinIO) store verbatim.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A wrong endpoint should fail a request quickly rather than hang a worker.
    maxAttempts: 2,
  });
}

/** Object key prefix of a destination: its prefix, and the bucket first when include_bucket_in_prefix. */
export function destinationRoot(config: DestinationConfigValue): string {
  const parts = [config.include_bucket_in_prefix ? config.bucket_name : '', ...config.prefix.split('/')].filter(Boolean);
  return parts.join('/');
}

/** Why a storage call failed, in the words of the spec's destination errors; undefined: not a storage error. */
export function storageErrorReason(error: unknown): string | undefined {
  const { name, Code, code, $metadata } = (error ?? {}) as { name?: string; Code?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const id = name ?? Code ?? '';
  if (id === 'InvalidAccessKeyId') return 'Key ID you provided does not exist';
  if (id === 'NoSuchBucket' || id === 'InvalidBucketName' || id === 'PermanentRedirect') return 'Bucket is not valid';
  if (id === 'AccessDenied' || id === 'SignatureDoesNotMatch' || id === 'InvalidToken' || id === 'ExpiredToken' || $metadata?.httpStatusCode === 403) {
    return 'Access denied';
  }
  if (['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT'].includes(code ?? '')) {
    return 'Invalid endpoint';
  }
  if (id === 'CredentialsProviderError') return 'Access denied';
  return undefined;
}

/**
 * Checks that the destination accepts writes: puts a small object under `tmp/` and deletes it when
 * allowed (delete permission is optional). Throws BAD_REQUEST "Failed to validate S3 destination:
 * <reason>" with the spec's reasons.
 */
export async function validateDestinationAccess(config: DestinationConfigValue, credentials: DestinationCredentialsValue | null): Promise<void> {
  const client = destinationClient(config, credentials);
  const key = [destinationRoot(config), 'tmp', `agent-platform-write-test-${newId()}.txt`].filter(Boolean).join('/');
  try {
    await client.send(new PutObjectCommand({ Bucket: config.bucket_name, Key: key, Body: 'agent-platform export destination write test\n' }));
    await client.send(new DeleteObjectCommand({ Bucket: config.bucket_name, Key: key })).catch(() => undefined);
  } catch (error) {
    throw AppError.badRequest(`Failed to validate S3 destination: ${storageErrorReason(error) ?? 'Invalid endpoint'}`);
  } finally {
    client.destroy();
  }
}

/**
 * One object written by S3 multipart upload from a stream of byte chunks: chunks are copied into one
 * part buffer, uploaded once it holds `partSize` bytes and then reused, so memory holds one part per
 * object (not the chunks and a joined copy of them), and no part-sized garbage is left per part.
 */
export class MultipartObject {
  private uploadId: string | undefined;
  private readonly parts: { PartNumber: number; ETag: string | undefined }[] = [];
  /** The part being filled; grown up to partSize as chunks come (a small file never takes a whole part). */
  private part = Buffer.alloc(0);
  private partBytes = 0;
  bytes = 0;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    readonly key: string,
    private readonly partSize: number,
  ) {}

  async write(chunk: Uint8Array): Promise<void> {
    this.bytes += chunk.byteLength;
    let offset = 0;
    while (offset < chunk.byteLength) {
      const take = Math.min(chunk.byteLength - offset, this.partSize - this.partBytes);
      if (this.partBytes + take > this.part.byteLength) {
        const bigger = Buffer.allocUnsafe(Math.min(this.partSize, Math.max(this.part.byteLength * 2, this.partBytes + take, 1 << 20)));
        this.part.copy(bigger, 0, 0, this.partBytes);
        this.part = bigger;
      }
      this.part.set(chunk.subarray(offset, offset + take), this.partBytes);
      this.partBytes += take;
      offset += take;
      if (this.partBytes === this.partSize) await this.flushPart();
    }
  }

  async complete(): Promise<void> {
    if (this.partBytes > 0 || this.parts.length === 0) await this.flushPart();
    await this.client.send(
      new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: this.key, UploadId: this.uploadId, MultipartUpload: { Parts: this.parts } }),
    );
  }

  /** Best effort: abort permission is optional and some stores (s3rver) answer 405. */
  async abort(): Promise<void> {
    if (!this.uploadId) return;
    await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.key, UploadId: this.uploadId })).catch(() => undefined);
  }

  private async flushPart() {
    if (!this.uploadId) {
      const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key, ContentType: 'application/vnd.apache.parquet' }));
      this.uploadId = created.UploadId;
    }
    // The buffer is reused once the upload answered: write() awaits this, so nothing fills it meanwhile.
    const body = this.part.subarray(0, this.partBytes);
    const PartNumber = this.parts.length + 1;
    const uploaded = await this.client.send(
      new UploadPartCommand({ Bucket: this.bucket, Key: this.key, UploadId: this.uploadId, PartNumber, Body: body, ContentLength: body.byteLength }),
    );
    this.parts.push({ PartNumber, ETag: uploaded.ETag });
    this.partBytes = 0;
  }
}
