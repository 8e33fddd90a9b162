-- The opt-in rate limits' token buckets. UNLOGGED: no WAL per request; a crash empties it, which
-- only refills the buckets.
CREATE UNLOGGED TABLE "rate_limit_buckets" (
    "key" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "capacity" DOUBLE PRECISION NOT NULL,
    "per_second" DOUBLE PRECISION NOT NULL,
    "tokens" DOUBLE PRECISION NOT NULL,
    "last_allowed" BOOLEAN NOT NULL,
    "allowed_total" BIGINT NOT NULL DEFAULT 0,
    "limited_total" BIGINT NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "rate_limit_buckets_pkey" PRIMARY KEY ("key")
);
