-- DropIndex
DROP INDEX "trace_runs_tenant_id_session_id_start_time_idx";

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_session_id_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "start_time" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_session_id_name_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "name", "start_time" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_session_id_status_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "status", "start_time" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_session_id_run_type_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "run_type", "start_time" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_session_id_is_root_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "is_root", "start_time" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "trace_runs_tags_idx" ON "trace_runs" USING GIN ("tags");

-- CreateIndex
CREATE INDEX "trace_runs_extra_idx" ON "trace_runs" USING GIN ("extra" jsonb_path_ops);
