-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "thread_default_ttl_minutes" DOUBLE PRECISION,
ADD COLUMN     "thread_sweep_interval_minutes" INTEGER,
ADD COLUMN     "threads_swept_at" TIMESTAMPTZ(6);
