-- DropForeignKey
ALTER TABLE "agent_assistant_versions" DROP CONSTRAINT "agent_assistant_versions_assistant_id_fkey";

-- AlterTable (existing versions take their assistant's deployment)
ALTER TABLE "agent_assistant_versions" DROP CONSTRAINT "agent_assistant_versions_pkey",
ADD COLUMN     "deployment_id" UUID;
UPDATE "agent_assistant_versions" v SET "deployment_id" = a."deployment_id" FROM "agent_assistants" a WHERE a."id" = v."assistant_id";
ALTER TABLE "agent_assistant_versions" ALTER COLUMN "deployment_id" SET NOT NULL,
ADD CONSTRAINT "agent_assistant_versions_pkey" PRIMARY KEY ("deployment_id", "assistant_id", "version");

-- AlterTable
ALTER TABLE "agent_assistants" DROP CONSTRAINT "agent_assistants_pkey",
ADD CONSTRAINT "agent_assistants_pkey" PRIMARY KEY ("deployment_id", "id");

-- AddForeignKey
ALTER TABLE "agent_assistant_versions" ADD CONSTRAINT "agent_assistant_versions_deployment_id_assistant_id_fkey" FOREIGN KEY ("deployment_id", "assistant_id") REFERENCES "agent_assistants"("deployment_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;
