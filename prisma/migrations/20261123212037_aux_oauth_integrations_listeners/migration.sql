-- CreateTable
CREATE TABLE "oauth_providers" (
    "id" UUID NOT NULL,
    "organization_id" UUID NOT NULL,
    "provider_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "client_secret" TEXT,
    "auth_url" TEXT NOT NULL,
    "token_url" TEXT NOT NULL,
    "uses_pkce" BOOLEAN NOT NULL,
    "code_challenge_method" TEXT,
    "provider_type" TEXT,
    "mcp_server_url" TEXT,
    "token_endpoint_auth_method" TEXT NOT NULL DEFAULT 'client_secret_post',
    "is_dynamic_client" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "oauth_providers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "integrations" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "access_token" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "integrations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "listeners" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "compute_type" TEXT NOT NULL,
    "compute_id" TEXT NOT NULL,
    "compute_config" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "listeners_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "oauth_providers_organization_id_provider_id_key" ON "oauth_providers"("organization_id", "provider_id");

-- CreateIndex
CREATE INDEX "integrations_workspace_id_created_at_idx" ON "integrations"("workspace_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "listeners_workspace_id_created_at_idx" ON "listeners"("workspace_id", "created_at" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "listeners_workspace_id_compute_id_key" ON "listeners"("workspace_id", "compute_id");

-- AddForeignKey
ALTER TABLE "oauth_providers" ADD CONSTRAINT "oauth_providers_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "integrations" ADD CONSTRAINT "integrations_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "listeners" ADD CONSTRAINT "listeners_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;
