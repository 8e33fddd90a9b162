// A tenant of its own for a benchmark, as a user would have: organization, workspace, admin user and
// an organization-wide key (no X-Tenant-Id needed: what the SDKs send with just an API key).
import { randomUUID } from 'node:crypto';
import type { Deps } from '../src/services/context.js';
import * as tenancy from '../src/services/tenancy/tenancy.service.js';
import { SYSTEM_VIEWER } from '../src/services/tenancy/viewer.js';

export async function createBenchTenant(deps: Deps) {
  const system = { ...deps, viewer: SYSTEM_VIEWER };
  const organization = await tenancy.createOrganization(system, { name: 'Bench Org' });
  const workspace = await tenancy.createWorkspace(system, { organizationId: organization.id, name: 'Bench Workspace' });
  const user = await tenancy.createUser(system, {
    organizationId: organization.id,
    email: `bench-${randomUUID()}@example.test`,
    organizationRole: 'ORGANIZATION_ADMIN',
    workspaces: [{ workspaceId: workspace.id, role: 'WORKSPACE_ADMIN' }],
  });
  const { key } = await tenancy.createApiKey(system, { organizationId: organization.id, userId: user.id, workspaceId: null });
  return { organization, workspace, user, key };
}
