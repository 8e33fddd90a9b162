// What s3rver cannot produce (it does not verify SigV4 signatures, so a wrong secret is accepted):
// the storage errors of real S3 map to the spec's destination reasons.
import { S3ServiceException } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { storageErrorReason } from '../../../../src/platform/services/exports/s3.js';

const s3Error = (name: string, status: number) =>
  new S3ServiceException({ name, $fault: 'client', $metadata: { httpStatusCode: status }, message: name });

describe('storage error reasons', () => {
  it('maps S3 error codes and network failures to the spec reasons', () => {
    expect(storageErrorReason(s3Error('AccessDenied', 403))).toBe('Access denied');
    expect(storageErrorReason(s3Error('SignatureDoesNotMatch', 403))).toBe('Access denied');
    expect(storageErrorReason(s3Error('InvalidAccessKeyId', 403))).toBe('Key ID you provided does not exist');
    expect(storageErrorReason(s3Error('NoSuchBucket', 404))).toBe('Bucket is not valid');
    expect(storageErrorReason(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('Invalid endpoint');
  });

  it('leaves other failures to the retry policy', () => {
    expect(storageErrorReason(new Error('connection terminated'))).toBeUndefined();
    expect(storageErrorReason(s3Error('InternalError', 500))).toBeUndefined();
  });
});
