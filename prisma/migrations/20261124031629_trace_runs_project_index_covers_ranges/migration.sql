-- DropIndex
DROP INDEX "trace_runs_tenant_id_session_id_start_time_id_idx";

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_session_id_start_time_id_idx" ON "trace_runs"("tenant_id", "session_id", "start_time" DESC, "id" DESC, "end_time", "total_tokens", "prompt_tokens", "completion_tokens");
