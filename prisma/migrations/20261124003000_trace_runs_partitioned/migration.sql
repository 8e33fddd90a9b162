-- trace_runs partitioned by start_time (weekly ranges, Monday 00:00 UTC; a DEFAULT partition takes
-- runs of weeks without one), so scans prune partitions and retention drops whole weeks. A unique
-- index on a partitioned table must contain the partition key, so the duplicate-id rule (a run id
-- posted twice is a 409) moves to the small unpartitioned trace_run_ids, claimed by a trigger on every
-- insert and cleared by one on every delete. Existing rows are moved.

-- CreateTable
CREATE TABLE "trace_run_ids" (
    "tenant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "start_time" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "trace_run_ids_pkey" PRIMARY KEY ("tenant_id","id")
);

-- CreateIndex
CREATE INDEX "trace_run_ids_start_time_idx" ON "trace_run_ids"("start_time");

ALTER TABLE "trace_runs" RENAME TO "trace_runs_unpartitioned";
ALTER TABLE "trace_runs_unpartitioned" RENAME CONSTRAINT "trace_runs_pkey" TO "trace_runs_unpartitioned_pkey";
DROP INDEX "trace_runs_tenant_id_session_id_start_time_id_idx";
DROP INDEX "trace_runs_tenant_id_session_id_name_start_time_id_idx";
DROP INDEX "trace_runs_tenant_id_session_id_status_start_time_id_idx";
DROP INDEX "trace_runs_tenant_id_session_id_run_type_start_time_id_idx";
DROP INDEX "trace_runs_tenant_id_session_id_is_root_start_time_id_idx";
DROP INDEX "trace_runs_tenant_id_trace_id_idx";
DROP INDEX "trace_runs_tags_idx";
DROP INDEX "trace_runs_extra_idx";

CREATE TABLE "trace_runs" (LIKE "trace_runs_unpartitioned" INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE ("start_time");
ALTER TABLE "trace_runs" ADD CONSTRAINT "trace_runs_pkey" PRIMARY KEY ("tenant_id","id","start_time");
CREATE INDEX "trace_runs_tenant_id_session_id_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "start_time" DESC, "id" DESC);
CREATE INDEX "trace_runs_tenant_id_session_id_name_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "name", "start_time" DESC, "id" DESC);
CREATE INDEX "trace_runs_tenant_id_session_id_status_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "status", "start_time" DESC, "id" DESC);
CREATE INDEX "trace_runs_tenant_id_session_id_run_type_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "run_type", "start_time" DESC, "id" DESC);
CREATE INDEX "trace_runs_tenant_id_session_id_is_root_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "is_root", "start_time" DESC, "id" DESC);
CREATE INDEX "trace_runs_tenant_id_trace_id_idx" ON "trace_runs"("tenant_id", "trace_id");
CREATE INDEX "trace_runs_tags_idx" ON "trace_runs" USING GIN ("tags");
CREATE INDEX "trace_runs_extra_idx" ON "trace_runs" USING GIN ("extra" jsonb_path_ops);
CREATE TABLE "trace_runs_default" PARTITION OF "trace_runs" DEFAULT;

-- One partition per week from the oldest week with runs (at most 60 weeks back) to 4 weeks ahead;
-- the `traces.partitions` schedule keeps creating them ahead.
DO $$
DECLARE
  week timestamptz := date_trunc('week', GREATEST(
    COALESCE((SELECT min(start_time) FROM trace_runs_unpartitioned), now()),
    now() - interval '60 weeks') AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
BEGIN
  WHILE week < now() + interval '4 weeks' LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF trace_runs FOR VALUES FROM (%L) TO (%L)',
      'trace_runs_' || to_char(week AT TIME ZONE 'UTC', 'YYYYMMDD'), week, week + interval '1 week');
    week := week + interval '1 week';
  END LOOP;
END $$;

INSERT INTO "trace_run_ids" ("tenant_id", "id", "start_time") SELECT "tenant_id", "id", "start_time" FROM "trace_runs_unpartitioned";
INSERT INTO "trace_runs" SELECT * FROM "trace_runs_unpartitioned";
DROP TABLE "trace_runs_unpartitioned";

-- Every insert claims its id first; a taken id skips the row (INSERT … RETURNING then omits it, which
-- is how ingestion tells a duplicate). Cloned onto each partition.
CREATE FUNCTION trace_runs_claim_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO trace_run_ids (tenant_id, id, start_time) VALUES (NEW.tenant_id, NEW.id, NEW.start_time) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER trace_runs_claim_id BEFORE INSERT ON trace_runs FOR EACH ROW EXECUTE FUNCTION trace_runs_claim_id();

-- Deleted runs (a project's deletion, row-wise retention) free their ids. Dropped partitions do not
-- fire it: retention deletes their ids by start time.
CREATE FUNCTION trace_runs_release_ids() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM trace_run_ids i USING deleted d WHERE i.tenant_id = d.tenant_id AND i.id = d.id;
  RETURN NULL;
END $$;
CREATE TRIGGER trace_runs_release_ids AFTER DELETE ON trace_runs REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION trace_runs_release_ids();
