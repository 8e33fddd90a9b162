// OAuth provider configuration of an organization (control plane, auth service v2). Providers are
// organization-wide: reading needs organization:read, changing organization:manage. The client
// secret is sealed at rest and never leaves this service.
import { AppError, isUniqueViolation } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import type { ServiceContext } from '../../../context.js';
import { assertCan, organizationOf } from '../../../viewer.js';
import { parseInput } from '../../../validate.js';
import { OAuthProviderCreate, ProviderId, type OAuthProviderCreateInput, OAuthProviderUpdate, type OAuthProviderUpdateInput } from './auth-providers.schemas.js';
import * as store from './auth-providers.store.js';

export type { OAuthProvider } from './auth-providers.store.js';

/** Creates a provider; CONFLICT when its provider_id is taken in the organization. Throws VALIDATION_FAILED, FORBIDDEN. */
export async function createProvider(ctx: ServiceContext, input: OAuthProviderCreateInput): Promise<store.OAuthProvider> {
  const organizationId = organizationOf(ctx.viewer);
  assertCan(ctx.viewer, 'organization:manage');
  const data = parseInput(OAuthProviderCreate, input, 'body');
  try {
    return await store.insertProvider(ctx.db, {
      organizationId,
      providerId: data.provider_id,
      name: data.name,
      clientId: data.client_id,
      clientSecret: data.client_secret ? ctx.secrets.encrypt(data.client_secret) : null,
      authUrl: data.auth_url,
      tokenUrl: data.token_url,
      usesPkce: data.uses_pkce,
      codeChallengeMethod: data.code_challenge_method ?? null,
      providerType: data.provider_type ?? null,
      mcpServerUrl: data.mcp_server_url ?? null,
      tokenEndpointAuthMethod: data.token_endpoint_auth_method,
      isDynamicClient: data.is_dynamic_client,
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw AppError.conflict(`OAuth provider ${data.provider_id} already exists.`);
    throw error;
  }
}

/** The organization's providers, oldest first; `selection` folds relations (GraphQL) into the read. */
export async function listProviders(ctx: ServiceContext, selection: Prisma.OAuthProviderFindManyArgs = {}): Promise<store.OAuthProvider[]> {
  const organizationId = organizationOf(ctx.viewer);
  assertCan(ctx.viewer, 'organization:read');
  return store.listProviders(ctx.db, organizationId, selection);
}

/** One provider of the viewer's organization; NOT_FOUND otherwise (never another organization's row). */
export async function getProvider(ctx: ServiceContext, providerId: string, selection: Prisma.OAuthProviderFindFirstArgs = {}): Promise<store.OAuthProvider> {
  const organizationId = organizationOf(ctx.viewer);
  assertCan(ctx.viewer, 'organization:read');
  return findOwnProvider(ctx, organizationId, providerId, selection);
}

/** Applies the spec's PATCH body: absent (and null, for fields never null) leaves a field unchanged. */
export async function updateProvider(ctx: ServiceContext, providerId: string, input: OAuthProviderUpdateInput): Promise<store.OAuthProvider> {
  const organizationId = organizationOf(ctx.viewer);
  assertCan(ctx.viewer, 'organization:manage');
  const data = parseInput(OAuthProviderUpdate, input, 'body');
  const provider = await findOwnProvider(ctx, organizationId, providerId);
  return store.updateProvider(ctx.db, provider.id, {
    name: data.name ?? undefined,
    clientId: data.client_id ?? undefined,
    clientSecret: data.client_secret ? ctx.secrets.encrypt(data.client_secret) : undefined,
    authUrl: data.auth_url ?? undefined,
    tokenUrl: data.token_url ?? undefined,
    usesPkce: data.uses_pkce ?? undefined,
    codeChallengeMethod: data.code_challenge_method,
  });
}

/** Deletes a provider and returns it as it was. */
export async function deleteProvider(ctx: ServiceContext, providerId: string): Promise<store.OAuthProvider> {
  const organizationId = organizationOf(ctx.viewer);
  assertCan(ctx.viewer, 'organization:manage');
  const provider = await findOwnProvider(ctx, organizationId, providerId);
  await store.deleteProvider(ctx.db, provider.id);
  return provider;
}

async function findOwnProvider(ctx: ServiceContext, organizationId: string, providerId: string, selection: Prisma.OAuthProviderFindFirstArgs = {}) {
  // An ID no provider could have (e.g. a NUL byte PostgreSQL refuses) is simply not found.
  const provider = ProviderId.safeParse(providerId).success ? await store.findProvider(ctx.db, organizationId, providerId, selection) : null;
  if (!provider) throw AppError.notFound(`OAuth provider ${providerId} not found.`);
  return provider;
}
