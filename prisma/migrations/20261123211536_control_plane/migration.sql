-- AlterTable
ALTER TABLE "deployment_runtimes" ADD COLUMN     "key_id" TEXT,
ADD COLUMN     "revision_id" UUID;

-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "deleted_at" TIMESTAMPTZ(6),
ADD COLUMN     "latest_revision_id" UUID,
ADD COLUMN     "secrets" TEXT;

-- CreateTable
CREATE TABLE "deployment_revisions" (
    "id" UUID NOT NULL,
    "deployment_id" UUID NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'CREATING',
    "source_revision_config" JSONB NOT NULL DEFAULT '{}',
    "commit_sha" TEXT,
    "graph_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "deployment_revisions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "deployment_revision_logs" (
    "id" BIGSERIAL NOT NULL,
    "revision_id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deployment_revision_logs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "deployment_revisions_deployment_id_created_at_idx" ON "deployment_revisions"("deployment_id", "created_at");

-- CreateIndex
CREATE INDEX "deployment_revision_logs_revision_id_type_id_idx" ON "deployment_revision_logs"("revision_id", "type", "id");

-- AddForeignKey
ALTER TABLE "deployment_revisions" ADD CONSTRAINT "deployment_revisions_deployment_id_fkey" FOREIGN KEY ("deployment_id") REFERENCES "deployments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deployment_revision_logs" ADD CONSTRAINT "deployment_revision_logs_revision_id_fkey" FOREIGN KEY ("revision_id") REFERENCES "deployment_revisions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
