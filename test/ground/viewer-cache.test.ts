// The per-process cache of resolved API keys (services/tenancy/viewer-cache.ts): what it may keep, and
// that a clear (a revocation, a role change) is never undone by a lookup that was under way during it.
import { describe, expect, it } from 'vitest';
import { ViewerCache } from '../../src/viewer-cache.js';
import type { ApiKeyViewer } from '../../src/viewer.js';

const viewer = { kind: 'api-key', apiKeyId: 'k1' } as ApiKeyViewer;

describe('ViewerCache', () => {
  it('keeps a viewer per key and tenant until its time is up', async () => {
    const cache = new ViewerCache(50);
    cache.set('hash', 'ws-1', viewer, cache.generation);
    expect(cache.get('hash', 'ws-1')).toBe(viewer);
    expect(cache.get('hash', undefined)).toBeUndefined();
    expect(cache.get('other', 'ws-1')).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(cache.get('hash', 'ws-1')).toBeUndefined();
  });

  it('does not cache a lookup that began before a clear', () => {
    const cache = new ViewerCache(5_000);
    const before = cache.generation;
    cache.clear(); // the key was revoked while the lookup read it
    cache.set('hash', undefined, viewer, before);
    expect(cache.get('hash', undefined)).toBeUndefined();
    cache.set('hash', undefined, viewer, cache.generation);
    expect(cache.get('hash', undefined)).toBe(viewer);
  });

  it('keeps nothing with a TTL of 0', () => {
    const cache = new ViewerCache(0);
    cache.set('hash', undefined, viewer, cache.generation);
    expect(cache.get('hash', undefined)).toBeUndefined();
  });
});
