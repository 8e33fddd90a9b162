-- CreateTable
CREATE TABLE "feedback" (
    "tenant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "trace_id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "score" DOUBLE PRECISION,
    "value" JSONB,
    "comment" TEXT,
    "correction" JSONB,
    "feedback_source" JSONB,
    "feedback_group_id" UUID,
    "comparative_experiment_id" UUID,
    "api_key_id" UUID,
    "user_id" UUID,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "modified_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "feedback_pkey" PRIMARY KEY ("tenant_id","id")
);

-- CreateTable
CREATE TABLE "feedback_tokens" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "feedback_key" TEXT NOT NULL,
    "feedback_config" JSONB,
    "trace_project" TEXT,
    "url" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "feedback_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "feedback_tenant_id_run_id_created_at_id_idx" ON "feedback"("tenant_id", "run_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "feedback_tenant_id_key_created_at_id_idx" ON "feedback"("tenant_id", "key", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "feedback_tokens_tenant_id_run_id_idx" ON "feedback_tokens"("tenant_id", "run_id");

-- CreateIndex
CREATE INDEX "feedback_tokens_expires_at_idx" ON "feedback_tokens"("expires_at");
