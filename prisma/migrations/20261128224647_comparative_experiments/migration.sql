-- CreateTable
CREATE TABLE "comparative_experiments" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "reference_dataset_id" UUID NOT NULL,
    "experiment_ids" UUID[],
    "extra" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "modified_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "comparative_experiments_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "comparative_experiments_reference_dataset_id_created_at_idx" ON "comparative_experiments"("reference_dataset_id", "created_at");

-- AddForeignKey
ALTER TABLE "comparative_experiments" ADD CONSTRAINT "comparative_experiments_reference_dataset_id_fkey" FOREIGN KEY ("reference_dataset_id") REFERENCES "datasets"("id") ON DELETE CASCADE ON UPDATE CASCADE;
