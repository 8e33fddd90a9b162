// Ids the platform mints are UUID v7 that sort in the order they were minted, even many within one
// millisecond: keyset pages, "newest first" lists and B-tree locality rely on it.
import { describe, expect, it } from 'vitest';
import { isUuid, newId } from '../../src/ids.js';

describe('newId', () => {
  it('mints version 7 UUIDs that sort in minting order and never repeat, across refills of its random pool', () => {
    const ids = Array.from({ length: 20_000 }, newId);
    expect(ids.every(isUuid)).toBe(true);
    expect(ids.every((id) => id[14] === '7' && '89ab'.includes(id[19]!))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('carries the time it was minted', () => {
    const before = Date.now();
    const id = newId();
    const msecs = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(msecs).toBeGreaterThanOrEqual(before);
    expect(msecs).toBeLessThanOrEqual(Date.now() + 1);
  });
});
