-- The agent server's own schema, in its own database (src/agent-server/prisma/schema.prisma): one
-- deployment's assistants, threads, runs and their events, crons, its event bus's payloads, and its
-- record of itself (served_deployments) and of its runtimes (runtimes).
--
-- A deployment's database made by an earlier version holds the platform's whole schema instead (one
-- migration chain was applied to every database): the agent server's tables, already of this shape,
-- with the deployment's data, beside the platform's, empty but for a made-up organization and
-- workspace and the deployment's own row in `deployments`. There the agent server's tables are kept
-- as they are (IF NOT EXISTS), the deployment's row is carried into served_deployments, and the
-- platform's tables, types, functions and migration records are dropped.

-- A database that holds the platform's own rows is not a deployment's: nothing is converted there.
DO $$
BEGIN
  IF to_regclass('public.deployments') IS NOT NULL THEN
    IF EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM api_keys) OR EXISTS (SELECT 1 FROM deployment_revisions)
       OR EXISTS (SELECT 1 FROM trace_run_ids) OR EXISTS (SELECT 1 FROM bulk_exports) OR (SELECT count(*) FROM deployments) > 1 THEN
      RAISE EXCEPTION 'this database holds the platform''s own rows: it is not a deployment''s agent server database';
    END IF;
  END IF;
END $$;

-- CreateTable
CREATE TABLE "served_deployments" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "config_path" TEXT NOT NULL,
    "graph_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "thread_default_ttl_minutes" DOUBLE PRECISION,
    "thread_sweep_interval_minutes" INTEGER,
    "threads_swept_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

CONSTRAINT "served_deployments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "runtimes" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "runtimes_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE IF NOT EXISTS "event_payloads" (
    "id" BIGSERIAL NOT NULL,
    "channel" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "event_payloads_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE IF NOT EXISTS "agent_assistants" (
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

CONSTRAINT "agent_assistants_pkey" PRIMARY KEY ("deployment_id","id")
);

-- CreateTable
CREATE TABLE IF NOT EXISTS "agent_assistant_versions" (
    "deployment_id" UUID NOT NULL,
    "assistant_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "graph_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "config" JSONB NOT NULL DEFAULT '{}',
    "context" JSONB NOT NULL DEFAULT '{}',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "agent_assistant_versions_pkey" PRIMARY KEY ("deployment_id","assistant_id","version")
);

-- CreateTable
CREATE TABLE IF NOT EXISTS "agent_threads" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "status" TEXT NOT NULL DEFAULT 'idle',
    "values" JSONB,
    "interrupts" JSONB NOT NULL DEFAULT '{}',
    "config" JSONB NOT NULL DEFAULT '{}',
    "error" JSONB,
    "ttl_minutes" DOUBLE PRECISION,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

CONSTRAINT "agent_threads_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE IF NOT EXISTS "agent_runs" (
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
CREATE TABLE IF NOT EXISTS "agent_crons" (
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

-- CreateTable
CREATE TABLE IF NOT EXISTS "run_events" (
    "run_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

CONSTRAINT "run_events_pkey" PRIMARY KEY ("run_id","seq")
);

-- CreateIndex
CREATE INDEX IF NOT EXISTS "runtimes_deployment_id_started_at_idx" ON "runtimes"("deployment_id", "started_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "event_payloads_created_at_idx" ON "event_payloads"("created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "agent_assistants_deployment_id_created_at_idx" ON "agent_assistants"("deployment_id", "created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "agent_threads_deployment_id_created_at_idx" ON "agent_threads"("deployment_id", "created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "agent_runs_thread_id_created_at_idx" ON "agent_runs"("thread_id", "created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "agent_runs_deployment_id_status_idx" ON "agent_runs"("deployment_id", "status");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "agent_crons_deployment_id_created_at_idx" ON "agent_crons"("deployment_id", "created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "agent_crons_thread_id_idx" ON "agent_crons"("thread_id");

-- AddForeignKey
ALTER TABLE "runtimes" ADD CONSTRAINT "runtimes_deployment_id_fkey" FOREIGN KEY ("deployment_id") REFERENCES "served_deployments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey (present already in an earlier version's database)
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'agent_assistant_versions_deployment_id_assistant_id_fkey') THEN
    ALTER TABLE "agent_assistant_versions" ADD CONSTRAINT "agent_assistant_versions_deployment_id_assistant_id_fkey" FOREIGN KEY ("deployment_id", "assistant_id") REFERENCES "agent_assistants"("deployment_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;
  END IF;
END $$;

-- An earlier version's record of the deployment (its tenant's organization from the made-up workspace).
DO $$
BEGIN
  IF to_regclass('public.deployments') IS NOT NULL THEN
    INSERT INTO "served_deployments" (
      "id", "tenant_id", "organization_id", "name", "config_path", "graph_ids",
      "thread_default_ttl_minutes", "thread_sweep_interval_minutes", "threads_swept_at", "created_at", "updated_at"
    )
    SELECT d."id", d."tenant_id", w."organization_id", d."name", coalesce(d."source_config"->>'config_path', ''), d."graph_ids",
           d."thread_default_ttl_minutes", d."thread_sweep_interval_minutes", d."threads_swept_at", d."created_at", d."updated_at"
      FROM "deployments" d JOIN "workspaces" w ON w."id" = d."tenant_id"
     WHERE d."deleted_at" IS NULL;
  END IF;
END $$;

-- The platform's schema as an earlier version made it here (every table empty but those carried over above).
DROP TABLE IF EXISTS
  "deployment_runtimes", "deployment_revision_logs", "deployment_revisions", "api_keys", "bulk_export_runs", "bulk_exports",
  "export_destinations", "oauth_providers", "integrations", "listeners", "deployments", "workspace_memberships",
  "organization_memberships", "tracing_projects", "trace_run_attachments", "trace_run_awaited_parents",
  "trace_run_pending_patches", "trace_runs", "trace_run_ids", "usage_trace_deltas", "usage_hourly_rollups",
  "usage_daily_rollups", "workspaces", "users", "organizations"
  CASCADE;
DROP FUNCTION IF EXISTS trace_runs_release_ids(), trace_runs_claim_id(), runtime_login_deployment();
DROP TYPE IF EXISTS "PlanTier", "OrganizationRole", "WorkspaceRole";
-- The platform's migrations an earlier version recorded here are not this database's history.
DO $$
BEGIN
  IF to_regclass('public._prisma_migrations') IS NOT NULL THEN
    DELETE FROM "_prisma_migrations" WHERE "migration_name" IN (
      '20261121221211_init', '20261121221837_traces', '20261121222440_agent_server', '20261121223248_agent_assistants_per_deployment',
      '20261123181447_bulk_exports', '20261123181901_deployments', '20261123181947_usage', '20261123211536_control_plane',
      '20261123212037_aux_oauth_integrations_listeners', '20261123212338_trace_run_query_indexes', '20261123212458_crons',
      '20261123213901_thread_ttl', '20261123214925_workspace_trace_retention', '20261124001158_checkpointer_ttl',
      '20261124003000_trace_runs_partitioned', '20261124031500_trace_run_ids_claimed_set_based',
      '20261124031629_trace_runs_project_index_covers_ranges', '20261124032000_runtime_login_rls', '20261126114246_deployment_sandbox_id',
      '20261126124003_trace_run_awaited_parents', '20261126150000_runtime_login_rls_removed', '20261126172420_deployment_custom_auth',
      '20261126172440_deployment_trace_keys', '20261128160000_deployment_usage'
    );
  END IF;
END $$;
