import { builder } from '../builder.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../../services/tenancy/api-keys.service.js';

const ApiKeyRef = builder.prismaObject('ApiKey', {
  description: 'An API key. The secret is shown once, when the key is created, and never again.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'API key ID (UUID).' }),
    shortKey: t.exposeString('shortKey', { description: 'A display form that identifies the key without revealing it.' }),
    description: t.exposeString('description', { description: 'What the key is for.' }),
    workspace: t.relation('workspace', { nullable: true, description: 'The one workspace the key is bound to, if any.' }),
    // Only a deployment's trace key has no user, and those are never listed (tenancy.service.ts).
    user: t.relation('user', { onNull: 'error', description: 'The user the key acts for.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true, description: 'When it last authenticated a request (minute resolution).' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true, description: 'When it was revoked; revoked keys are refused.' }),
  }),
});

builder.queryField('apiKeys', (t) =>
  t.prismaField({
    type: ['ApiKey'],
    description: 'API keys of the viewer’s user (organization admins: every key of the organization).',
    args: { includeRevoked: t.arg.boolean({ description: 'Include revoked keys.' }) },
    resolve: (query, _root, args, ctx) => listApiKeys(ctx, { includeRevoked: args.includeRevoked ?? false }, query),
  }),
);

const CreatedApiKey = builder.objectRef<Awaited<ReturnType<typeof createApiKey>>>('CreatedApiKey').implement({
  description: 'A new API key and its secret. Store the secret now: it cannot be read again.',
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The secret API key; send it as X-Api-Key.' }),
    apiKey: t.field({ type: ApiKeyRef, description: 'The key’s record.', resolve: (created) => created.apiKey }),
  }),
});

const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  description: 'A new API key for the viewer’s user.',
  fields: (t) => ({
    description: t.string({ description: 'What the key is for.' }),
    workspaceId: t.id({ description: 'Bind the key to this workspace; omit for all of the user’s workspaces.' }),
  }),
});

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: CreatedApiKey,
    description: 'Creates an API key for the viewer’s user and returns its secret once.',
    errors: {},
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    resolve: (_root, args, ctx) =>
      createApiKey(ctx, {
        description: args.input.description ?? undefined,
        workspaceId: args.input.workspaceId == null ? null : String(args.input.workspaceId),
      }),
  }),
  revokeApiKey: t.prismaField({
    type: 'ApiKey',
    description: 'Revokes an API key: it is refused from now on. Idempotent.',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'API key ID.' }) },
    resolve: (_query, _root, args, ctx) => revokeApiKey(ctx, String(args.id)),
  }),
}));
