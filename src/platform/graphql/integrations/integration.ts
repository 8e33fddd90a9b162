// Git host integrations in GraphQL (never the access token), over the same service as /v1/integrations.
import { builder } from '../builder.js';
import * as integrations from '../../services/integrations/integrations.service.js';

builder.prismaObject('Integration', {
  description: 'A git host integration of the workspace: an access token (stored encrypted, never returned) that deployments clone private repositories with.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Integration ID; the integration_id of a deployment’s source_config.' }),
    workspaceId: t.exposeID('workspaceId', { description: 'The workspace it belongs to.' }),
    name: t.exposeString('name', { description: 'Display name.' }),
    host: t.exposeString('host', { description: 'Git host (and port), e.g. github.com.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was registered.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

builder.queryFields((t) => ({
  integrations: t.prismaField({
    type: ['Integration'],
    description: 'Git host integrations of the workspace (X-Tenant-Id), newest first.',
    resolve: (query, _root, _args, ctx) => integrations.listIntegrations(ctx, query),
  }),
  integration: t.prismaField({
    type: 'Integration',
    description: 'One integration by ID.',
    args: { id: t.arg.id({ required: true, description: 'Integration ID.' }) },
    resolve: (query, _root, args, ctx) => integrations.getIntegration(ctx, String(args.id), query),
  }),
}));

builder.mutationFields((t) => ({
  createIntegration: t.prismaField({
    type: 'Integration',
    description: 'Registers a git host integration in the workspace (needs workspaces:write).',
    errors: {},
    args: {
      name: t.arg.string({ required: true, description: 'Display name.' }),
      host: t.arg.string({ required: true, description: 'Git host (and port), e.g. github.com.' }),
      accessToken: t.arg.string({ required: true, description: 'Access token; stored encrypted, never returned.' }),
    },
    resolve: (_query, _root, args, ctx) => integrations.createIntegration(ctx, { name: args.name, host: args.host, access_token: args.accessToken }),
  }),
  deleteIntegration: t.prismaField({
    type: 'Integration',
    description: 'Deletes an integration and returns it as it was (needs workspaces:write).',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Integration ID.' }) },
    resolve: (_query, _root, args, ctx) => integrations.deleteIntegration(ctx, String(args.id)),
  }),
}));
