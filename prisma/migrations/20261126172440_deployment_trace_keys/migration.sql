-- A deployment's trace key: an API key made for one launch of a deployment's agent server, acting for
-- no user, that writes runs into one tracing project of its workspace (`trace_project`, the
-- deployment's name) and is refused everywhere else. Deleted with its deployment.
-- A patch sent with such a key and kept for its run's post applies only to a run of that project.
-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "deployment_id" UUID,
ADD COLUMN     "trace_project" TEXT,
ALTER COLUMN "user_id" DROP NOT NULL;

-- AlterTable
ALTER TABLE "trace_run_pending_patches" ADD COLUMN     "session_id" UUID;

-- CreateIndex
CREATE INDEX "api_keys_deployment_id_idx" ON "api_keys"("deployment_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_deployment_id_fkey" FOREIGN KEY ("deployment_id") REFERENCES "deployments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A trace key names its deployment, project and workspace and no user; every other key has a user.
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_trace_key_shape" CHECK (
  CASE WHEN "deployment_id" IS NULL THEN "user_id" IS NOT NULL AND "trace_project" IS NULL
       ELSE "user_id" IS NULL AND "trace_project" IS NOT NULL AND "workspace_id" IS NOT NULL END);
