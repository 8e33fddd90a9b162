// The viewer in GraphQL: what a key may do in the workspace it selects (workspacePermissions), from its
// organization role or its role in that workspace, so a client shows only the actions that will work.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApiKey, buildTenant, buildUser, buildWorkspace } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(() => platform?.stop());

const VIEWER = '{ viewer { permissions workspacePermissions workspace { id } } }';

it('lists the key’s permissions in the selected workspace, by organization role and workspace role, and none for another organization', async () => {
  const tenant = await buildTenant(platform.system);
  const second = await buildWorkspace(platform.system, tenant.organization.id, 'Second');
  const editor = await buildUser(platform.system, tenant.organization.id, {
    role: 'ORGANIZATION_MEMBER',
    workspaces: [
      { workspaceId: tenant.workspace.id, role: 'WORKSPACE_EDITOR' },
      { workspaceId: second.id, role: 'WORKSPACE_VIEWER' },
    ],
  });
  const editorKey = (await buildApiKey(platform.system, tenant.organization.id, editor.id)).key;
  const ask = async (key: string, workspaceId: string) => (await graphql(platform.url, VIEWER, { key, tenant: workspaceId })).body;

  // The organization's admin: everything, in every workspace.
  expect((await ask(tenant.adminKey, second.id)).data.viewer).toEqual({
    permissions: ['organization:read', 'organization:manage', 'workspaces:read', 'workspaces:write', 'workspaces:manage'],
    workspacePermissions: ['workspaces:read', 'workspaces:write', 'workspaces:manage'],
    workspace: { id: second.id },
  });
  // A workspace viewer reads only.
  expect((await ask(tenant.viewerKey, tenant.workspace.id)).data.viewer.workspacePermissions).toEqual(['workspaces:read']);
  // A member: what their role in the selected workspace grants, which differs by workspace.
  expect((await ask(editorKey, tenant.workspace.id)).data.viewer).toMatchObject({ permissions: ['organization:read'], workspacePermissions: ['workspaces:read', 'workspaces:write'] });
  expect((await ask(editorKey, second.id)).data.viewer.workspacePermissions).toEqual(['workspaces:read']);

  // Another organization's key cannot select the workspace at all.
  const other = await buildTenant(platform.system);
  const refused = await ask(other.adminKey, tenant.workspace.id);
  expect(refused.data?.viewer).toBeUndefined();
  expect(refused.errors?.[0]?.extensions?.code).toMatch(/FORBIDDEN|NOT_FOUND|UNAUTHENTICATED/);
});
