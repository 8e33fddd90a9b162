-- AlterTable
ALTER TABLE "workspaces" ADD COLUMN     "trace_retention_days" INTEGER;
