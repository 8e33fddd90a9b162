-- CreateTable
CREATE TABLE "tracing_projects" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "extra" JSONB,
    "reference_dataset_id" UUID,
    "start_time" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "end_time" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "tracing_projects_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "trace_runs" (
    "tenant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "trace_id" UUID NOT NULL,
    "parent_run_id" UUID,
    "parent_run_ids" UUID[],
    "reference_example_id" UUID,
    "name" TEXT NOT NULL,
    "run_type" TEXT NOT NULL,
    "start_time" TIMESTAMPTZ(6) NOT NULL,
    "end_time" TIMESTAMPTZ(6),
    "status" TEXT NOT NULL,
    "is_root" BOOLEAN NOT NULL,
    "dotted_order" TEXT NOT NULL,
    "trace_tier" TEXT,
    "thread_id" TEXT,
    "inputs" JSONB,
    "outputs" JSONB,
    "error" TEXT,
    "extra" JSONB,
    "events" JSONB,
    "serialized" JSONB,
    "tags" TEXT[],
    "feedback_stats" JSONB,
    "total_tokens" INTEGER,
    "prompt_tokens" INTEGER,
    "completion_tokens" INTEGER,
    "total_cost" DOUBLE PRECISION,
    "prompt_cost" DOUBLE PRECISION,
    "completion_cost" DOUBLE PRECISION,
    "first_token_time" TIMESTAMPTZ(6),
    "api_key_id" UUID,
    "user_id" UUID,
    "received_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "trace_runs_pkey" PRIMARY KEY ("tenant_id","id")
);

-- CreateTable
CREATE TABLE "trace_run_pending_patches" (
    "id" BIGSERIAL NOT NULL,
    "tenant_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "payload" JSONB NOT NULL,
    "received_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "trace_run_pending_patches_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "trace_run_attachments" (
    "tenant_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "content_type" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "trace_run_attachments_pkey" PRIMARY KEY ("tenant_id","run_id","name")
);

-- CreateIndex
CREATE UNIQUE INDEX "tracing_projects_workspace_id_name_key" ON "tracing_projects"("workspace_id", "name");

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_session_id_start_time_idx" ON "trace_runs"("tenant_id", "session_id", "start_time" DESC);

-- CreateIndex
CREATE INDEX "trace_runs_tenant_id_trace_id_idx" ON "trace_runs"("tenant_id", "trace_id");

-- CreateIndex
CREATE INDEX "trace_run_pending_patches_tenant_id_run_id_idx" ON "trace_run_pending_patches"("tenant_id", "run_id");

-- AddForeignKey
ALTER TABLE "tracing_projects" ADD CONSTRAINT "tracing_projects_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;
