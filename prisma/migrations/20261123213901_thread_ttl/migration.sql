-- AlterTable
ALTER TABLE "agent_threads" ADD COLUMN     "ttl_minutes" DOUBLE PRECISION;
