-- AlterTable
ALTER TABLE "deployment_revisions" ADD COLUMN     "cors" JSONB;

-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "cors" JSONB;
