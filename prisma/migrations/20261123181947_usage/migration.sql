-- AlterEnum
ALTER TYPE "OrganizationRole" ADD VALUE 'ORGANIZATION_GUEST';

-- CreateTable
CREATE TABLE "usage_trace_deltas" (
    "id" BIGSERIAL NOT NULL,
    "workspace_id" UUID NOT NULL,
    "hour" TIMESTAMPTZ(6) NOT NULL,
    "project_id" UUID NOT NULL,
    "user_id" UUID,
    "api_key_id" UUID,
    "traces" INTEGER NOT NULL,

    CONSTRAINT "usage_trace_deltas_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "usage_hourly_rollups" (
    "workspace_id" UUID NOT NULL,
    "dimension" TEXT NOT NULL,
    "hour" TIMESTAMPTZ(6) NOT NULL,
    "dimension_id" UUID NOT NULL,
    "traces" BIGINT NOT NULL,

    CONSTRAINT "usage_hourly_rollups_pkey" PRIMARY KEY ("workspace_id","dimension","hour","dimension_id")
);

-- CreateTable
CREATE TABLE "usage_daily_rollups" (
    "workspace_id" UUID NOT NULL,
    "dimension" TEXT NOT NULL,
    "day" TIMESTAMPTZ(6) NOT NULL,
    "dimension_id" UUID NOT NULL,
    "traces" BIGINT NOT NULL,

    CONSTRAINT "usage_daily_rollups_pkey" PRIMARY KEY ("workspace_id","dimension","day","dimension_id")
);

-- CreateIndex
CREATE INDEX "usage_trace_deltas_workspace_id_hour_idx" ON "usage_trace_deltas"("workspace_id", "hour");
