-- CreateTable
CREATE TABLE "agent_crons" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "assistant_id" UUID NOT NULL,
    "thread_id" UUID,
    "schedule" TEXT NOT NULL,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "end_time" TIMESTAMPTZ(6),
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "on_run_completed" TEXT NOT NULL DEFAULT 'delete',
    "payload" JSONB NOT NULL DEFAULT '{}',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "user_id" TEXT,
    "next_run_date" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "agent_crons_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "agent_crons_deployment_id_created_at_idx" ON "agent_crons"("deployment_id", "created_at");

-- CreateIndex
CREATE INDEX "agent_crons_thread_id_idx" ON "agent_crons"("thread_id");
