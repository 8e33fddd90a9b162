-- CreateTable
CREATE TABLE "datasets" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "data_type" TEXT NOT NULL DEFAULT 'kv',
    "inputs_schema_definition" JSONB,
    "outputs_schema_definition" JSONB,
    "extra" JSONB,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "modified_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "datasets_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "examples" (
    "tenant_id" UUID NOT NULL,
    "id" UUID NOT NULL,
    "valid_from" TIMESTAMPTZ(6) NOT NULL,
    "valid_to" TIMESTAMPTZ(6),
    "dataset_id" UUID NOT NULL,
    "inputs" JSONB NOT NULL,
    "outputs" JSONB,
    "metadata" JSONB,
    "source_run_id" UUID,
    "created_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "examples_pkey" PRIMARY KEY ("tenant_id","id","valid_from")
);

-- CreateTable
CREATE TABLE "dataset_tags" (
    "dataset_id" UUID NOT NULL,
    "tag" TEXT NOT NULL,
    "as_of" TIMESTAMPTZ(6) NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dataset_tags_pkey" PRIMARY KEY ("dataset_id","tag")
);

-- CreateIndex
CREATE INDEX "datasets_workspace_id_created_at_id_idx" ON "datasets"("workspace_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "datasets_workspace_id_name_key" ON "datasets"("workspace_id", "name");

-- CreateIndex
CREATE INDEX "examples_dataset_id_created_at_id_idx" ON "examples"("dataset_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "feedback_tenant_id_session_id_key_idx" ON "feedback"("tenant_id", "session_id", "key");

-- CreateIndex
CREATE INDEX "tracing_projects_workspace_id_reference_dataset_id_idx" ON "tracing_projects"("workspace_id", "reference_dataset_id");

-- AddForeignKey
ALTER TABLE "datasets" ADD CONSTRAINT "datasets_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "examples" ADD CONSTRAINT "examples_dataset_id_fkey" FOREIGN KEY ("dataset_id") REFERENCES "datasets"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "dataset_tags" ADD CONSTRAINT "dataset_tags_dataset_id_fkey" FOREIGN KEY ("dataset_id") REFERENCES "datasets"("id") ON DELETE CASCADE ON UPDATE CASCADE;
