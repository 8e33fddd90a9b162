-- Deployed agent servers keep their data in databases of their own (their own login owns them), so
-- no runtime login reads the platform's agent-server tables any more: the row-level security that
-- limited such logins to their deployment's rows goes (local deployments run on the platform's own
-- login, which owns these tables and was never subject to it).
DROP POLICY IF EXISTS runtime_own_deployment ON "agent_threads";
DROP POLICY IF EXISTS runtime_own_deployment ON "agent_runs";
DROP POLICY IF EXISTS runtime_own_deployment ON "agent_assistants";
DROP POLICY IF EXISTS runtime_own_deployment ON "deployment_runtimes";
DROP POLICY IF EXISTS runtime_own_deployment ON "run_events";
DROP POLICY IF EXISTS runtime_own_deployment ON "agent_assistant_versions";
ALTER TABLE "agent_threads" DISABLE ROW LEVEL SECURITY;
ALTER TABLE "agent_runs" DISABLE ROW LEVEL SECURITY;
ALTER TABLE "agent_assistants" DISABLE ROW LEVEL SECURITY;
ALTER TABLE "deployment_runtimes" DISABLE ROW LEVEL SECURITY;
ALTER TABLE "run_events" DISABLE ROW LEVEL SECURITY;
ALTER TABLE "agent_assistant_versions" DISABLE ROW LEVEL SECURITY;

-- The same limits on tables made outside migrations (LangGraph's checkpoints, pg-boss's jobs), where they exist.
DO $$
DECLARE
  target text;
BEGIN
  FOREACH target IN ARRAY ARRAY['langgraph.checkpoints', 'langgraph.checkpoint_blobs', 'langgraph.checkpoint_writes'] LOOP
    IF to_regclass(target) IS NOT NULL THEN
      EXECUTE format('DROP POLICY IF EXISTS runtime_own_threads ON %s', target);
      EXECUTE format('ALTER TABLE %s DISABLE ROW LEVEL SECURITY', target);
    END IF;
  END LOOP;
  IF to_regclass('pgboss.job_common') IS NOT NULL THEN
    DROP POLICY IF EXISTS runtime_own_queue ON pgboss.job_common;
    ALTER TABLE pgboss.job_common DISABLE ROW LEVEL SECURITY;
  END IF;
END $$;

DROP FUNCTION IF EXISTS runtime_login_deployment();
