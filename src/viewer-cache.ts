// Resolved API-key viewers, kept for a few seconds in each process, so a client sending many requests
// with one key costs one lookup (a round trip and the JSON of its roles) per TTL instead of one per
// request.
//
// Staleness is bounded two ways. In the process that revokes a key or changes roles, the service
// clears the cache before it answers, so the next request there is refused. Every other process hears
// a `tenancy.changed` notification and clears its cache too; if that notification were lost (the
// LISTEN connection down), a revoked key still works there for at most the TTL
// (AGENT_PLATFORM_API_KEY_CACHE_SECONDS). Failed lookups are never cached: a new key works at once.
import type { EventBus } from './events.js';
import type { ApiKeyViewer, TraceWriterViewer } from './viewer.js';

type KeyViewer = ApiKeyViewer | TraceWriterViewer;

// Keys beyond this many are evicted oldest first; a process rarely sees more distinct keys per TTL.
const MAX_ENTRIES = 10_000;

export class ViewerCache {
  private readonly entries = new Map<string, { viewer: KeyViewer; expiresAt: number }>();
  private clears = 0;

  constructor(private readonly ttlMs: number) {}

  /**
   * Taken before reading a key from the database and handed to `set`: a lookup that was under way
   * when the cache was cleared (it may have read the key just before its revocation committed) is
   * then not cached, so it cannot outlive the clear.
   */
  get generation(): number {
    return this.clears;
  }

  /** The viewer cached for a key's hash and requested tenant, while it is fresh. */
  get(secretHash: string, tenantId: string | undefined): KeyViewer | undefined {
    const id = entryId(secretHash, tenantId);
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt > Date.now()) return entry.viewer;
    this.entries.delete(id);
    return undefined;
  }

  /** Caches a viewer read while the cache was at `generation` (see there); dropped if it was cleared since. */
  set(secretHash: string, tenantId: string | undefined, viewer: KeyViewer, generation: number): void {
    if (this.ttlMs <= 0 || generation !== this.clears) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(entryId(secretHash, tenantId), { viewer, expiresAt: Date.now() + this.ttlMs });
  }

  clear(): void {
    this.entries.clear();
    this.clears++;
  }

  /** Clears the cache whenever any process reports a tenancy change, until the bus stops. */
  followChanges(events: EventBus): void {
    void (async () => {
      for await (const _change of events.subscribe('tenancy.changed')) this.clear();
    })();
  }
}

const entryId = (secretHash: string, tenantId: string | undefined) => `${secretHash}\u0000${tenantId ?? ''}`;
