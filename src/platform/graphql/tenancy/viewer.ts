import { builder } from '../builder.js';
import { can, PERMISSIONS, type Viewer, workspacePermissions } from '../../../viewer.js';
import { getOrganization, getViewerUser, getWorkspace, listWorkspaces } from '../../services/tenancy/tenancy.service.js';

const ViewerRef = builder.objectRef<Viewer>('Viewer').implement({
  description: 'Who is asking: the API key of this request, its user, organization and selected workspace.',
  fields: (t) => ({
    apiKeyShortKey: t.string({
      nullable: true,
      description: 'Display form of the API key that authenticated this request.',
      resolve: (viewer) => (viewer.kind === 'api-key' ? viewer.shortKey : null),
    }),
    permissions: t.stringList({
      description: 'Organization-wide permissions of this key.',
      resolve: (viewer) => PERMISSIONS.filter((permission) => can(viewer, permission)),
    }),
    workspacePermissions: t.stringList({
      description: 'What this key may do in the selected workspace: workspaces:read, workspaces:write (create and change its deployments, threads, exports…), workspaces:manage.',
      resolve: (viewer) => workspacePermissions(viewer),
    }),
    user: t.prismaField({
      type: 'User',
      nullable: true,
      description: 'The user the key acts for.',
      resolve: (query, _viewer, _args, ctx) => getViewerUser(ctx, query),
    }),
    organization: t.prismaField({
      type: 'Organization',
      nullable: true,
      description: 'The key’s organization.',
      resolve: (query, viewer, _args, ctx) => (viewer.kind === 'api-key' ? getOrganization(ctx, viewer.organizationId, query) : null),
    }),
    workspace: t.prismaField({
      type: 'Workspace',
      nullable: true,
      description: 'The workspace selected by X-Tenant-Id (or the key’s own workspace).',
      resolve: (query, viewer, _args, ctx) =>
        viewer.kind === 'api-key' && viewer.workspaceId ? getWorkspace(ctx, viewer.workspaceId, query) : null,
    }),
    workspaces: t.prismaField({
      type: ['Workspace'],
      description: 'Every workspace the key can read.',
      resolve: (query, _viewer, _args, ctx) => listWorkspaces(ctx, {}, query),
    }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({ type: ViewerRef, description: 'The authenticated caller.', resolve: (_root, _args, ctx) => ctx.viewer }),
);
