-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "usage" JSONB;
