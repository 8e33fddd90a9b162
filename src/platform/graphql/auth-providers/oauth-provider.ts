// OAuth providers in GraphQL: the organization's provider configurations (never the client secret)
// and their mutations, over the same service as /v2/auth/providers.
import { builder } from '../builder.js';
import * as providers from '../../services/auth-providers/auth-providers.service.js';

builder.prismaObject('OAuthProvider', {
  description: 'An OAuth provider configuration of the organization. Its client secret is stored encrypted and never returned.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Row ID.' }),
    organizationId: t.exposeID('organizationId', { description: 'The organization it belongs to.' }),
    providerId: t.exposeString('providerId', { description: 'The caller-chosen key of the provider, unique in the organization.' }),
    name: t.exposeString('name', { description: 'Display name.' }),
    clientId: t.exposeString('clientId', { description: 'OAuth client ID.' }),
    hasClientSecret: t.boolean({ description: 'Whether a client secret is stored.', resolve: (provider) => provider.clientSecret !== null }),
    authUrl: t.exposeString('authUrl', { description: 'Authorization endpoint.' }),
    tokenUrl: t.exposeString('tokenUrl', { description: 'Token endpoint.' }),
    usesPkce: t.exposeBoolean('usesPkce', { description: 'Whether the flow uses PKCE.' }),
    codeChallengeMethod: t.exposeString('codeChallengeMethod', { nullable: true, description: 'PKCE method: S256 or plain.' }),
    providerType: t.exposeString('providerType', { nullable: true, description: 'Kind of provider, free text.' }),
    mcpServerUrl: t.exposeString('mcpServerUrl', { nullable: true, description: 'MCP server the provider authorizes, if any.' }),
    tokenEndpointAuthMethod: t.exposeString('tokenEndpointAuthMethod', { description: 'client_secret_post (default), client_secret_basic or none.' }),
    isDynamicClient: t.exposeBoolean('isDynamicClient', { description: 'Whether the client was registered dynamically.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

builder.queryFields((t) => ({
  oauthProviders: t.prismaField({
    type: ['OAuthProvider'],
    description: 'OAuth providers of the organization, oldest first.',
    resolve: (query, _root, _args, ctx) => providers.listProviders(ctx, query),
  }),
  oauthProvider: t.prismaField({
    type: 'OAuthProvider',
    description: 'One OAuth provider by its provider ID.',
    args: { providerId: t.arg.string({ required: true, description: 'Provider ID.' }) },
    resolve: (query, _root, args, ctx) => providers.getProvider(ctx, args.providerId, query),
  }),
}));

const CreateOAuthProviderInput = builder.inputType('CreateOAuthProviderInput', {
  description: 'A new OAuth provider configuration.',
  fields: (t) => ({
    providerId: t.string({ required: true, description: 'Key of the provider, unique in the organization (letters, digits, ".", "_", "-").' }),
    name: t.string({ required: true, description: 'Display name.' }),
    clientId: t.string({ required: true, description: 'OAuth client ID.' }),
    clientSecret: t.string({ description: 'OAuth client secret; stored encrypted, never returned.' }),
    authUrl: t.string({ required: true, description: 'Authorization endpoint (http(s)).' }),
    tokenUrl: t.string({ required: true, description: 'Token endpoint (http(s)).' }),
    usesPkce: t.boolean({ description: 'Whether the flow uses PKCE (default false).' }),
    codeChallengeMethod: t.string({ description: 'PKCE method: S256 or plain.' }),
    providerType: t.string({ description: 'Kind of provider, free text.' }),
    mcpServerUrl: t.string({ description: 'MCP server the provider authorizes.' }),
    tokenEndpointAuthMethod: t.string({ description: 'client_secret_post (default), client_secret_basic or none.' }),
    isDynamicClient: t.boolean({ description: 'Whether the client was registered dynamically (default false).' }),
  }),
});

const UpdateOAuthProviderInput = builder.inputType('UpdateOAuthProviderInput', {
  description: 'The fields to change; omitted (or null) fields keep their value, except codeChallengeMethod, which null clears.',
  fields: (t) => ({
    name: t.string({ description: 'Display name.' }),
    clientId: t.string({ description: 'OAuth client ID.' }),
    clientSecret: t.string({ description: 'A new client secret; stored encrypted, never returned.' }),
    authUrl: t.string({ description: 'Authorization endpoint.' }),
    tokenUrl: t.string({ description: 'Token endpoint.' }),
    usesPkce: t.boolean({ description: 'Whether the flow uses PKCE.' }),
    codeChallengeMethod: t.string({ description: 'PKCE method: S256 or plain; null clears it.' }),
  }),
});

builder.mutationFields((t) => ({
  createOAuthProvider: t.prismaField({
    type: 'OAuthProvider',
    description: 'Creates an OAuth provider configuration (needs organization:manage).',
    errors: {},
    args: { input: t.arg({ type: CreateOAuthProviderInput, required: true }) },
    resolve: (_query, _root, { input }, ctx) =>
      providers.createProvider(ctx, {
        provider_id: input.providerId,
        name: input.name,
        client_id: input.clientId,
        client_secret: input.clientSecret,
        auth_url: input.authUrl,
        token_url: input.tokenUrl,
        uses_pkce: input.usesPkce ?? undefined,
        code_challenge_method: input.codeChallengeMethod as never,
        provider_type: input.providerType,
        mcp_server_url: input.mcpServerUrl,
        token_endpoint_auth_method: (input.tokenEndpointAuthMethod ?? undefined) as never,
        is_dynamic_client: input.isDynamicClient ?? undefined,
      }),
  }),
  updateOAuthProvider: t.prismaField({
    type: 'OAuthProvider',
    description: 'Changes an OAuth provider configuration (needs organization:manage).',
    errors: {},
    args: {
      providerId: t.arg.string({ required: true, description: 'Provider ID.' }),
      input: t.arg({ type: UpdateOAuthProviderInput, required: true }),
    },
    resolve: (_query, _root, { providerId, input }, ctx) =>
      providers.updateProvider(ctx, providerId, {
        name: input.name,
        client_id: input.clientId,
        client_secret: input.clientSecret,
        auth_url: input.authUrl,
        token_url: input.tokenUrl,
        uses_pkce: input.usesPkce,
        code_challenge_method: input.codeChallengeMethod as never,
      }),
  }),
  deleteOAuthProvider: t.prismaField({
    type: 'OAuthProvider',
    description: 'Deletes an OAuth provider configuration and returns it as it was (needs organization:manage).',
    errors: {},
    args: { providerId: t.arg.string({ required: true, description: 'Provider ID.' }) },
    resolve: (_query, _root, args, ctx) => providers.deleteProvider(ctx, args.providerId),
  }),
}));
