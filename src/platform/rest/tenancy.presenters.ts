// snake_case JSON for tenancy rows. Secrets (hashes) are never presented.
import type { ApiKey, Organization, Workspace } from '../../generated/prisma/client.js';

export const presentOrganization = (org: Organization) => ({
  id: org.id,
  display_name: org.name,
  plan_tier: org.planTier,
  self_hosted: org.selfHosted,
  created_at: org.createdAt.toISOString(),
});

export const presentWorkspace = (workspace: Workspace) => ({
  id: workspace.id,
  organization_id: workspace.organizationId,
  display_name: workspace.name,
  created_at: workspace.createdAt.toISOString(),
});

export const presentApiKey = (apiKey: ApiKey) => ({
  id: apiKey.id,
  short_key: apiKey.shortKey,
  description: apiKey.description,
  workspace_id: apiKey.workspaceId,
  created_at: apiKey.createdAt.toISOString(),
  last_used_at: apiKey.lastUsedAt?.toISOString() ?? null,
  revoked_at: apiKey.revokedAt?.toISOString() ?? null,
});
