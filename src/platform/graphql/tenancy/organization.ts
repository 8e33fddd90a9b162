import { builder } from '../builder.js';
import { listWorkspaces } from '../../services/tenancy/tenancy.service.js';

const PlanTierEnum = builder.enumType('PlanTier', {
  description: 'Plan tier of an organization; some features need a higher tier.',
  values: { free: { value: 'free' }, plus: { value: 'plus' }, enterprise: { value: 'enterprise' } } as const,
});

builder.prismaObject('Organization', {
  description: 'A customer: owns workspaces, users and API keys, and has a plan tier.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Organization ID (UUID).' }),
    name: t.exposeString('name', { description: 'Display name.' }),
    planTier: t.field({ type: PlanTierEnum, description: 'Plan tier: free, plus or enterprise.', resolve: (org) => org.planTier }),
    selfHosted: t.exposeBoolean('selfHosted', { description: 'Whether the organization runs on its own infrastructure.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    workspaces: t.prismaField({
      type: ['Workspace'],
      description: 'Workspaces of this organization the viewer can read.',
      resolve: (query, org, _args, ctx) => listWorkspaces(ctx, { organizationId: org.id }, query),
    }),
  }),
});
