// The opt-in rate limits' token buckets, in the agent server's own database (rate_limit_buckets): every
// process of a deployment takes from the same buckets, and a request costs one statement however many
// buckets it draws on. Raw SQL: the refill is arithmetic on the row under its lock, which no ORM call
// expresses in one round trip.
import type { Database } from '../../../db.js';

export type BucketKind = 'caller' | 'deployment' | 'search';
/** A bucket a request draws one token from: `capacity` tokens at most (the burst), refilled at `perSecond`. */
export type BucketDraw = { key: string; kind: BucketKind; capacity: number; perSecond: number };
export type BucketDecision = { key: string; kind: BucketKind; allowed: boolean; retryAfterSeconds: number };

// The bucket's tokens now: what it held, refilled for the time since, up to its capacity.
const REFILLED = 'least(excluded.capacity, b.tokens + greatest(0, extract(epoch FROM excluded.updated_at - b.updated_at)) * excluded.per_second)';

/**
 * Takes one token from each bucket that has one, made full on first use; a bucket without one is left
 * as it is and refuses. Rows are locked in key order, so requests drawing on the same buckets from
 * several processes wait for each other and never deadlock. Counts every decision in the bucket.
 */
export async function drawTokens(db: Database, draws: BucketDraw[]): Promise<BucketDecision[]> {
  const sorted = [...draws].sort((a, b) => (a.key < b.key ? -1 : 1));
  const { rows } = await db.pool.query<{ key: string; kind: BucketKind; allowed: boolean; tokens: number; per_second: number }>(
    `INSERT INTO rate_limit_buckets AS b (key, kind, capacity, per_second, tokens, last_allowed, allowed_total, limited_total, updated_at)
     SELECT key, kind, capacity, per_second, capacity - 1, true, 1, 0, clock_timestamp()
       FROM unnest($1::text[], $2::text[], $3::float8[], $4::float8[]) AS w(key, kind, capacity, per_second)
      ORDER BY key
     ON CONFLICT (key) DO UPDATE SET
       capacity = excluded.capacity,
       per_second = excluded.per_second,
       tokens = ${REFILLED} - CASE WHEN ${REFILLED} >= 1 THEN 1 ELSE 0 END,
       last_allowed = ${REFILLED} >= 1,
       allowed_total = b.allowed_total + (${REFILLED} >= 1)::int,
       limited_total = b.limited_total + (${REFILLED} < 1)::int,
       updated_at = excluded.updated_at
     RETURNING key, kind, last_allowed AS allowed, tokens, per_second`,
    [sorted.map((d) => d.key), sorted.map((d) => d.kind), sorted.map((d) => d.capacity), sorted.map((d) => d.perSecond)],
  );
  return rows.map((row) => ({
    key: row.key,
    kind: row.kind,
    allowed: row.allowed,
    // The time until it holds a whole token again.
    retryAfterSeconds: row.allowed ? 0 : Math.max(1, Math.ceil((1 - row.tokens) / row.per_second)),
  }));
}

/** Every decision the buckets counted, by bucket kind (all processes, since the buckets were made). */
export async function countDecisions(db: Database): Promise<{ kind: BucketKind; allowed: number; limited: number }[]> {
  const { rows } = await db.pool.query<{ kind: BucketKind; allowed: string; limited: string }>(
    'SELECT kind, sum(allowed_total)::text AS allowed, sum(limited_total)::text AS limited FROM rate_limit_buckets GROUP BY kind ORDER BY kind',
  );
  return rows.map((row) => ({ kind: row.kind, allowed: Number(row.allowed), limited: Number(row.limited) }));
}

/**
 * Deletes the buckets that have been full again for a while (idle for longer than their refill takes:
 * a new one would start as full, so nothing changes for their caller), folding their decision counts
 * into a totals row per kind, so /metrics' counters never go back. Without it, every caller identity
 * ever seen (custom auth makes them without bound) would keep a row. Returns how many it deleted.
 */
export async function pruneIdleBuckets(db: Pick<Database, 'pool'>, idleSeconds = 300): Promise<number> {
  const { rows } = await db.pool.query<{ deleted: string }>(
    `WITH idle AS (
       DELETE FROM rate_limit_buckets
        WHERE key NOT LIKE 'totals:%' AND per_second > 0
          AND updated_at + make_interval(secs => greatest($1::float8, (capacity - tokens) / per_second)) < clock_timestamp()
       RETURNING kind, allowed_total, limited_total),
     folded AS (
       INSERT INTO rate_limit_buckets AS b (key, kind, capacity, per_second, tokens, last_allowed, allowed_total, limited_total, updated_at)
       SELECT 'totals:' || kind, kind, 0, 0, 0, true, sum(allowed_total), sum(limited_total), clock_timestamp() FROM idle GROUP BY kind
       ON CONFLICT (key) DO UPDATE SET allowed_total = b.allowed_total + excluded.allowed_total, limited_total = b.limited_total + excluded.limited_total)
     SELECT count(*)::text AS deleted FROM idle`,
    [idleSeconds],
  );
  return Number(rows[0]!.deleted);
}
