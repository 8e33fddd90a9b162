-- Row-level security by deployment for the agent-server tables, against the database logins of
-- deployed runtimes (`agent_runtime_<deployment id without dashes>`, granted in
-- src/runtime/runtime-database.ts): such a login sees and writes only its own deployment's rows. The
-- platform's role owns these tables and so is not subject to the policies (RLS is not FORCEd).

-- The deployment whose runtime logs in as the current user; NULL for every other login.
CREATE FUNCTION runtime_login_deployment() RETURNS uuid LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN current_user ~ '^agent_runtime_[0-9a-f]{32}$' THEN substr(current_user, 15)::uuid END
$$;

ALTER TABLE "agent_threads" ENABLE ROW LEVEL SECURITY;
CREATE POLICY runtime_own_deployment ON "agent_threads" USING ("deployment_id" = runtime_login_deployment());

ALTER TABLE "agent_runs" ENABLE ROW LEVEL SECURITY;
CREATE POLICY runtime_own_deployment ON "agent_runs" USING ("deployment_id" = runtime_login_deployment());

ALTER TABLE "agent_assistants" ENABLE ROW LEVEL SECURITY;
CREATE POLICY runtime_own_deployment ON "agent_assistants" USING ("deployment_id" = runtime_login_deployment());

ALTER TABLE "deployment_runtimes" ENABLE ROW LEVEL SECURITY;
CREATE POLICY runtime_own_deployment ON "deployment_runtimes" USING ("deployment_id" = runtime_login_deployment());

-- Rows without a deployment column of their own belong to their run's or assistant's (whose own
-- policy applies inside the subquery).
ALTER TABLE "run_events" ENABLE ROW LEVEL SECURITY;
CREATE POLICY runtime_own_deployment ON "run_events" USING (EXISTS (SELECT 1 FROM "agent_runs" r WHERE r."id" = "run_events"."run_id"));

ALTER TABLE "agent_assistant_versions" ENABLE ROW LEVEL SECURITY;
CREATE POLICY runtime_own_deployment ON "agent_assistant_versions" USING (EXISTS (SELECT 1 FROM "agent_assistants" a WHERE a."id" = "agent_assistant_versions"."assistant_id"));
