-- AlterTable
ALTER TABLE "trace_run_pending_patches" ADD COLUMN     "usage_delta" JSONB;

-- AlterTable
ALTER TABLE "trace_runs" ADD COLUMN     "own_completion_cost" DOUBLE PRECISION,
ADD COLUMN     "own_completion_tokens" INTEGER,
ADD COLUMN     "own_prompt_cost" DOUBLE PRECISION,
ADD COLUMN     "own_prompt_tokens" INTEGER,
ADD COLUMN     "own_total_cost" DOUBLE PRECISION,
ADD COLUMN     "own_total_tokens" INTEGER;

-- Runs stored before this carried only their own usage (LLM runs): that is their own, and their
-- ancestors' totals gain the sum of their descendants' (as ingest now keeps them). Only runs with
-- usage are read, and each ancestor's row is found through trace_run_ids (one partition).
UPDATE "trace_runs" SET "own_total_tokens" = "total_tokens", "own_prompt_tokens" = "prompt_tokens",
  "own_completion_tokens" = "completion_tokens", "own_total_cost" = "total_cost",
  "own_prompt_cost" = "prompt_cost", "own_completion_cost" = "completion_cost"
WHERE "total_tokens" IS NOT NULL OR "total_cost" IS NOT NULL;

WITH d AS (
  SELECT r.tenant_id, a.id AS ancestor,
         sum(r.own_total_tokens) AS total_tokens, sum(r.own_prompt_tokens) AS prompt_tokens,
         sum(r.own_completion_tokens) AS completion_tokens, sum(r.own_total_cost) AS total_cost,
         sum(r.own_prompt_cost) AS prompt_cost, sum(r.own_completion_cost) AS completion_cost
    FROM "trace_runs" r CROSS JOIN LATERAL unnest(r.parent_run_ids) AS a(id)
   WHERE r.own_total_tokens IS NOT NULL OR r.own_total_cost IS NOT NULL
   GROUP BY r.tenant_id, a.id)
UPDATE "trace_runs" t SET
  "total_tokens" = CASE WHEN d.total_tokens IS NULL THEN t.total_tokens ELSE COALESCE(t.total_tokens, 0) + d.total_tokens END,
  "prompt_tokens" = CASE WHEN d.prompt_tokens IS NULL THEN t.prompt_tokens ELSE COALESCE(t.prompt_tokens, 0) + d.prompt_tokens END,
  "completion_tokens" = CASE WHEN d.completion_tokens IS NULL THEN t.completion_tokens ELSE COALESCE(t.completion_tokens, 0) + d.completion_tokens END,
  "total_cost" = CASE WHEN d.total_cost IS NULL THEN t.total_cost ELSE COALESCE(t.total_cost, 0) + d.total_cost END,
  "prompt_cost" = CASE WHEN d.prompt_cost IS NULL THEN t.prompt_cost ELSE COALESCE(t.prompt_cost, 0) + d.prompt_cost END,
  "completion_cost" = CASE WHEN d.completion_cost IS NULL THEN t.completion_cost ELSE COALESCE(t.completion_cost, 0) + d.completion_cost END
FROM d JOIN "trace_run_ids" i ON i.tenant_id = d.tenant_id AND i.id = d.ancestor
WHERE t.tenant_id = d.tenant_id AND t.id = d.ancestor AND t.start_time = i.start_time;
