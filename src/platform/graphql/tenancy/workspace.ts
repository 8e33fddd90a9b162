import { builder } from '../builder.js';
import { createWorkspace, getWorkspace, listWorkspaces } from '../../services/tenancy/tenancy.service.js';

export const WorkspaceRef = builder.prismaObject('Workspace', {
  description: 'A tenant: deployments, traces and exports belong to one workspace. Its ID is the X-Tenant-Id.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Workspace ID (UUID); the tenant ID of the REST APIs.' }),
    name: t.exposeString('name', { description: 'Display name, unique in the organization.' }),
    organization: t.relation('organization', { description: 'The organization that owns it.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
  }),
});

builder.queryFields((t) => ({
  workspaces: t.prismaField({
    type: ['Workspace'],
    description: 'Workspaces the viewer can read.',
    resolve: (query, _root, _args, ctx) => listWorkspaces(ctx, {}, query),
  }),
  workspace: t.prismaField({
    type: 'Workspace',
    description: 'One workspace by ID.',
    args: { id: t.arg.id({ required: true, description: 'Workspace ID.' }) },
    resolve: (query, _root, args, ctx) => getWorkspace(ctx, String(args.id), query),
  }),
}));

const CreateWorkspaceInput = builder.inputType('CreateWorkspaceInput', {
  description: 'A new workspace.',
  fields: (t) => ({ name: t.string({ required: true, description: 'Display name, unique in the organization.' }) }),
});

builder.mutationField('createWorkspace', (t) =>
  t.prismaField({
    type: 'Workspace',
    description: 'Creates a workspace in the viewer’s organization (needs organization:manage).',
    errors: {},
    args: { input: t.arg({ type: CreateWorkspaceInput, required: true }) },
    resolve: (_query, _root, args, ctx) => createWorkspace(ctx, args.input),
  }),
);
