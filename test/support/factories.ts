// Chained factories: every test builds the tenants it needs, in its file's own database.
import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../../src/context.js';
import * as apiKeys from '../../src/platform/services/tenancy/api-keys.service.js';
import * as tenancy from '../../src/platform/services/tenancy/tenancy.service.js';

type WorkspaceRole = 'WORKSPACE_ADMIN' | 'WORKSPACE_EDITOR' | 'WORKSPACE_VIEWER';

export async function buildOrganization(system: ServiceContext, overrides: { planTier?: 'free' | 'plus' | 'enterprise'; selfHosted?: boolean } = {}) {
  return tenancy.createOrganization(system, { name: `Org ${randomUUID().slice(0, 8)}`, ...overrides });
}

export async function buildWorkspace(system: ServiceContext, organizationId: string, name = `Workspace ${randomUUID().slice(0, 8)}`) {
  return tenancy.createWorkspace(system, { organizationId, name });
}

export async function buildUser(
  system: ServiceContext,
  organizationId: string,
  options: { role?: 'ORGANIZATION_ADMIN' | 'ORGANIZATION_MEMBER' | 'ORGANIZATION_GUEST'; workspaces?: { workspaceId: string; role: WorkspaceRole }[] } = {},
) {
  return tenancy.createUser(system, {
    organizationId,
    email: `user-${randomUUID()}@example.test`,
    organizationRole: options.role ?? 'ORGANIZATION_MEMBER',
    workspaces: options.workspaces ?? [],
  });
}

export async function buildApiKey(system: ServiceContext, organizationId: string, userId: string, workspaceId?: string) {
  return apiKeys.createApiKey(system, { organizationId, userId, workspaceId: workspaceId ?? null });
}

/**
 * A complete tenant: an organization with one workspace, an admin user and key, plus a viewer-role
 * member and key in the same workspace, for permission tests.
 */
export async function buildTenant(system: ServiceContext, overrides: { planTier?: 'free' | 'plus' | 'enterprise'; selfHosted?: boolean } = {}) {
  const organization = await buildOrganization(system, overrides);
  const workspace = await buildWorkspace(system, organization.id);
  const admin = await buildUser(system, organization.id, {
    role: 'ORGANIZATION_ADMIN',
    workspaces: [{ workspaceId: workspace.id, role: 'WORKSPACE_ADMIN' }],
  });
  const adminKey = await buildApiKey(system, organization.id, admin.id);
  const viewer = await buildUser(system, organization.id, { workspaces: [{ workspaceId: workspace.id, role: 'WORKSPACE_VIEWER' }] });
  const viewerKey = await buildApiKey(system, organization.id, viewer.id);
  return { organization, workspace, admin, adminKey: adminKey.key, viewer, viewerKey: viewerKey.key };
}
