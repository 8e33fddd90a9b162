import { builder } from '../builder.js';

builder.prismaObject('User', {
  description: 'A person (or service identity) with memberships in organizations and workspaces.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'User ID (UUID).' }),
    email: t.exposeString('email', { description: 'Email address, unique across the installation.' }),
    name: t.exposeString('name', { nullable: true, description: 'Display name.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
  }),
});
