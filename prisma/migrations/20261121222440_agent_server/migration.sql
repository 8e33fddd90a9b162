-- CreateTable
CREATE TABLE "agent_assistants" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "graph_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "config" JSONB NOT NULL DEFAULT '{}',
    "context" JSONB NOT NULL DEFAULT '{}',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "agent_assistants_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_assistant_versions" (
    "assistant_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "graph_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "config" JSONB NOT NULL DEFAULT '{}',
    "context" JSONB NOT NULL DEFAULT '{}',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_assistant_versions_pkey" PRIMARY KEY ("assistant_id","version")
);

-- CreateTable
CREATE TABLE "agent_threads" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "status" TEXT NOT NULL DEFAULT 'idle',
    "values" JSONB,
    "interrupts" JSONB NOT NULL DEFAULT '{}',
    "config" JSONB NOT NULL DEFAULT '{}',
    "error" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "agent_threads_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_runs" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "thread_id" UUID NOT NULL,
    "assistant_id" UUID NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "kwargs" JSONB NOT NULL DEFAULT '{}',
    "multitask_strategy" TEXT NOT NULL DEFAULT 'enqueue',
    "output" JSONB,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "worker_id" TEXT,
    "job_id" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,
    "started_at" TIMESTAMPTZ(6),
    "ended_at" TIMESTAMPTZ(6),

    CONSTRAINT "agent_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run_events" (
    "run_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "run_events_pkey" PRIMARY KEY ("run_id","seq")
);

-- CreateIndex
CREATE INDEX "agent_assistants_deployment_id_created_at_idx" ON "agent_assistants"("deployment_id", "created_at");

-- CreateIndex
CREATE INDEX "agent_threads_deployment_id_created_at_idx" ON "agent_threads"("deployment_id", "created_at");

-- CreateIndex
CREATE INDEX "agent_runs_thread_id_created_at_idx" ON "agent_runs"("thread_id", "created_at");

-- CreateIndex
CREATE INDEX "agent_runs_deployment_id_status_idx" ON "agent_runs"("deployment_id", "status");

-- AddForeignKey
ALTER TABLE "agent_assistant_versions" ADD CONSTRAINT "agent_assistant_versions_assistant_id_fkey" FOREIGN KEY ("assistant_id") REFERENCES "agent_assistants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
