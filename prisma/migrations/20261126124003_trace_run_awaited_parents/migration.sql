-- Runs that OTLP ingestion stored before their parent (in a provisional trace named after it) record
-- that parent here first, so a stored run adopts provisional runs only when a row names it: one probe
-- of this small table's key per batch, where every OTLP batch used to search trace_runs' (tenant_id,
-- trace_id) index in every partition for every run it stored (bench:ingest: a third of PostgreSQL's CPU
-- per span, and growing with the table).
-- CreateTable
CREATE TABLE "trace_run_awaited_parents" (
    "tenant_id" UUID NOT NULL,
    "parent_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "trace_run_awaited_parents_pkey" PRIMARY KEY ("tenant_id","parent_id")
);

-- CreateIndex
CREATE INDEX "trace_run_awaited_parents_created_at_idx" ON "trace_run_awaited_parents"("created_at");

-- Runs already waiting: their trace_id names a run not stored yet.
INSERT INTO "trace_run_awaited_parents" ("tenant_id", "parent_id")
SELECT DISTINCT r.tenant_id, r.trace_id FROM trace_runs r
 WHERE NOT EXISTS (SELECT 1 FROM trace_run_ids i WHERE i.tenant_id = r.tenant_id AND i.id = r.trace_id)
ON CONFLICT DO NOTHING;
