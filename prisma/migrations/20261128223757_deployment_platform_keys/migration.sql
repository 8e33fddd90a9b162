-- AlterTable
ALTER TABLE "deployment_revisions" ADD COLUMN     "platform_keys" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "platform_keys" BOOLEAN NOT NULL DEFAULT false;
