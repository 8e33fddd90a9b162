-- CreateTable
CREATE TABLE "deployments" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "source_config" JSONB NOT NULL DEFAULT '{}',
    "source_revision_config" JSONB NOT NULL DEFAULT '{}',
    "status" TEXT NOT NULL DEFAULT 'READY',
    "active_revision_id" UUID,
    "url" TEXT,
    "graph_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "deployments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "deployment_runtimes" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deployment_runtimes_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "deployments_tenant_id_created_at_idx" ON "deployments"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "deployment_runtimes_deployment_id_started_at_idx" ON "deployment_runtimes"("deployment_id", "started_at");

-- AddForeignKey
ALTER TABLE "deployments" ADD CONSTRAINT "deployments_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deployment_runtimes" ADD CONSTRAINT "deployment_runtimes_deployment_id_fkey" FOREIGN KEY ("deployment_id") REFERENCES "deployments"("id") ON DELETE CASCADE ON UPDATE CASCADE;
