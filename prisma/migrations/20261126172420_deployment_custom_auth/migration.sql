-- Whether a revision's graph config declares custom auth (langgraph.json `auth`), recorded by its build,
-- and the active revision's, on its deployment: the gateway forwards a deployment's end users'
-- requests without a platform key only when its serving revision authenticates them itself.
-- AlterTable
ALTER TABLE "deployment_revisions" ADD COLUMN     "custom_auth" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "custom_auth" BOOLEAN NOT NULL DEFAULT false;
