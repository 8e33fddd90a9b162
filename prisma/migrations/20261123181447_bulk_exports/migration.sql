-- CreateTable
CREATE TABLE "export_destinations" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "destination_type" TEXT NOT NULL,
    "display_name" TEXT NOT NULL,
    "config" JSONB NOT NULL,
    "credentials" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "export_destinations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bulk_exports" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "destination_id" UUID,
    "session_id" UUID NOT NULL,
    "start_time" TIMESTAMPTZ(6) NOT NULL,
    "end_time" TIMESTAMPTZ(6),
    "filter" TEXT,
    "format_version" TEXT NOT NULL,
    "compression" TEXT NOT NULL,
    "export_fields" TEXT[],
    "interval_hours" INTEGER,
    "next_window_start" TIMESTAMPTZ(6),
    "status" TEXT NOT NULL,
    "source_bulk_export_id" UUID,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "bulk_exports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bulk_export_runs" (
    "id" UUID NOT NULL,
    "bulk_export_id" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "retry_number" INTEGER NOT NULL DEFAULT 0,
    "lease_owner" TEXT,
    "errors" JSONB NOT NULL DEFAULT '{}',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "start_time" TIMESTAMPTZ(6) NOT NULL,
    "end_time" TIMESTAMPTZ(6) NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,
    "started_at" TIMESTAMPTZ(6),
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "bulk_export_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "export_destinations_workspace_id_created_at_idx" ON "export_destinations"("workspace_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "bulk_exports_workspace_id_created_at_idx" ON "bulk_exports"("workspace_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "bulk_exports_status_idx" ON "bulk_exports"("status");

-- CreateIndex
CREATE INDEX "bulk_export_runs_bulk_export_id_start_time_idx" ON "bulk_export_runs"("bulk_export_id", "start_time");

-- CreateIndex
CREATE INDEX "bulk_export_runs_status_idx" ON "bulk_export_runs"("status");

-- AddForeignKey
ALTER TABLE "export_destinations" ADD CONSTRAINT "export_destinations_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_exports" ADD CONSTRAINT "bulk_exports_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_exports" ADD CONSTRAINT "bulk_exports_destination_id_fkey" FOREIGN KEY ("destination_id") REFERENCES "export_destinations"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "bulk_export_runs" ADD CONSTRAINT "bulk_export_runs_bulk_export_id_fkey" FOREIGN KEY ("bulk_export_id") REFERENCES "bulk_exports"("id") ON DELETE CASCADE ON UPDATE CASCADE;
