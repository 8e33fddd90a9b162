-- Deployments keep their assistants, threads, runs and their events, crons, checkpoints and store in
-- their agent server's own database (src/agent-server/prisma). Earlier versions kept them here, in the
-- platform's database: the agent-server tables, LangGraph's checkpoint schema `langgraph` and one store
-- schema `langgraph_store_<id>` per deployment. They go, with the columns of `deployments` that only
-- the agent server's thread TTL sweep used, once no deployment's rows remain in them: the platform
-- moves each deployment's rows into its own database when it starts, then migrates again
-- (src/platform/services/deployments/shared-agent-rows.ts). While rows remain, this migration is held
-- back (SQLSTATE AP101, src/database/migrate.ts): nothing is dropped, and it is tried at the next start.
DO $$
DECLARE
  store_schema name;
  remaining boolean;
BEGIN
  remaining := EXISTS (SELECT 1 FROM "agent_assistants") OR EXISTS (SELECT 1 FROM "agent_assistant_versions")
    OR EXISTS (SELECT 1 FROM "agent_threads") OR EXISTS (SELECT 1 FROM "agent_runs") OR EXISTS (SELECT 1 FROM "run_events")
    OR EXISTS (SELECT 1 FROM "agent_crons");
  FOR store_schema IN SELECT nspname FROM pg_namespace WHERE nspname LIKE 'langgraph\_store\_%' LOOP
    IF NOT remaining AND to_regclass(format('%I.store', store_schema)) IS NOT NULL THEN
      EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.store)', store_schema) INTO remaining;
    END IF;
  END LOOP;
  IF remaining THEN
    RAISE EXCEPTION 'deployments'' rows remain in the platform''s agent-server tables: they move into the deployments'' own databases when the platform starts'
      USING ERRCODE = 'AP101';
  END IF;
END $$;

-- DropForeignKey
ALTER TABLE "agent_assistant_versions" DROP CONSTRAINT "agent_assistant_versions_deployment_id_assistant_id_fkey";

-- AlterTable
ALTER TABLE "deployments" DROP COLUMN "thread_default_ttl_minutes",
DROP COLUMN "thread_sweep_interval_minutes",
DROP COLUMN "threads_swept_at";

-- DropTable
DROP TABLE "agent_assistant_versions";

-- DropTable
DROP TABLE "agent_assistants";

-- DropTable
DROP TABLE "agent_crons";

-- DropTable
DROP TABLE "agent_runs";

-- DropTable
DROP TABLE "agent_threads";

-- DropTable
DROP TABLE "run_events";

-- LangGraph's checkpoints and each deployment's store, made here by earlier versions' code (not by
-- migrations): checkpoints of threads no deployment has any more, and empty stores.
DROP SCHEMA IF EXISTS "langgraph" CASCADE;
DO $$
DECLARE
  store_schema name;
BEGIN
  FOR store_schema IN SELECT nspname FROM pg_namespace WHERE nspname LIKE 'langgraph\_store\_%' LOOP
    EXECUTE format('DROP SCHEMA %I CASCADE', store_schema);
  END LOOP;
END $$;
