-- AlterTable
ALTER TABLE "agent_runs" ADD COLUMN     "cancel_reason" TEXT;
