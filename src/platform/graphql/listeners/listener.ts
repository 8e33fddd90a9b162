// Listeners in GraphQL, over the same service as /v2/listeners (self-hosted Enterprise organizations).
import { builder } from '../builder.js';
import * as listeners from '../../services/listeners/listeners.service.js';

builder.prismaObject('Listener', {
  description: 'A compute target (e.g. a Kubernetes cluster) of a self-hosted Enterprise installation that deploys the workspace’s agent servers.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Listener ID.' }),
    workspaceId: t.exposeID('workspaceId', { description: 'The workspace it belongs to.' }),
    computeType: t.exposeString('computeType', { description: 'Kind of compute target: k8s.' }),
    computeId: t.exposeString('computeId', { description: 'Identifier of the compute target, unique in the workspace.' }),
    computeConfig: t.expose('computeConfig', { type: 'JSON', description: 'Settings of the compute target, e.g. k8s_namespaces.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

builder.queryFields((t) => ({
  listeners: t.prismaField({
    type: ['Listener'],
    description: 'A page of the workspace’s listeners, newest first.',
    args: {
      limit: t.arg.int({ description: 'Page size, 1–100 (default 20).' }),
      offset: t.arg.int({ description: 'Listeners to skip (default 0).' }),
    },
    resolve: async (query, _root, args, ctx) =>
      (await listeners.listListeners(ctx, { limit: args.limit ?? undefined, offset: args.offset ?? undefined }, query)).resources,
  }),
  listener: t.prismaField({
    type: 'Listener',
    description: 'One listener by ID.',
    args: { id: t.arg.id({ required: true, description: 'Listener ID.' }) },
    resolve: (query, _root, args, ctx) => listeners.getListener(ctx, String(args.id), query),
  }),
}));

builder.mutationFields((t) => ({
  createListener: t.prismaField({
    type: 'Listener',
    description: 'Creates a listener (self-hosted Enterprise organizations; needs workspaces:write). One per compute ID.',
    errors: {},
    args: {
      computeId: t.arg.string({ required: true, description: 'Identifier of the compute target.' }),
      computeType: t.arg.string({ description: 'Kind of compute target (default k8s).' }),
      computeConfig: t.arg({ type: 'JSON', description: 'Settings of the compute target (an object).' }),
    },
    resolve: (_query, _root, args, ctx) =>
      listeners.createListener(ctx, {
        compute_id: args.computeId,
        compute_type: (args.computeType ?? undefined) as never,
        compute_config: args.computeConfig as never,
      }),
  }),
  updateListener: t.prismaField({
    type: 'Listener',
    description: 'Replaces a listener’s compute settings (needs workspaces:write).',
    errors: {},
    args: {
      id: t.arg.id({ required: true, description: 'Listener ID.' }),
      computeConfig: t.arg({ type: 'JSON', required: true, description: 'The new settings (an object).' }),
    },
    resolve: (_query, _root, args, ctx) => listeners.updateListener(ctx, String(args.id), { compute_config: args.computeConfig as never }),
  }),
  deleteListener: t.prismaField({
    type: 'Listener',
    description: 'Deletes a listener and returns it as it was (needs workspaces:write).',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Listener ID.' }) },
    resolve: (_query, _root, args, ctx) => listeners.deleteListener(ctx, String(args.id)),
  }),
}));
