-- Each deployment gets a number of its own, from which its sandbox's OS user id is made (a base plus
-- this number) when the platform runs as root: no two deployments share a uid, by construction.
-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "sandbox_id" SERIAL NOT NULL;

-- CreateIndex
CREATE UNIQUE INDEX "deployments_sandbox_id_key" ON "deployments"("sandbox_id");
