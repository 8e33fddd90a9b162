// OAuth providers, integrations and listeners as the control plane shows them (snake_case; never a
// client secret or access token).
import type { Integration } from '../services/integrations/integrations.service.js';
import type { Listener } from '../services/listeners/listeners.service.js';
import type { OAuthProvider } from '../services/auth-providers/auth-providers.service.js';

/** Exactly the spec's "OAuth provider" fields. */
export function presentOAuthProvider(provider: OAuthProvider) {
  return {
    id: provider.id,
    organization_id: provider.organizationId,
    provider_id: provider.providerId,
    name: provider.name,
    client_id: provider.clientId,
    auth_url: provider.authUrl,
    token_url: provider.tokenUrl,
    uses_pkce: provider.usesPkce,
    code_challenge_method: provider.codeChallengeMethod,
    provider_type: provider.providerType,
    mcp_server_url: provider.mcpServerUrl,
    token_endpoint_auth_method: provider.tokenEndpointAuthMethod,
    is_dynamic_client: provider.isDynamicClient,
    created_at: provider.createdAt.toISOString(),
    updated_at: provider.updatedAt.toISOString(),
  };
}

export function presentIntegration(integration: Integration) {
  return {
    id: integration.id,
    tenant_id: integration.workspaceId,
    name: integration.name,
    host: integration.host,
    created_at: integration.createdAt.toISOString(),
    updated_at: integration.updatedAt.toISOString(),
  };
}

export function presentListener(listener: Listener) {
  return {
    id: listener.id,
    tenant_id: listener.workspaceId,
    compute_type: listener.computeType,
    compute_id: listener.computeId,
    compute_config: listener.computeConfig,
    created_at: listener.createdAt.toISOString(),
    updated_at: listener.updatedAt.toISOString(),
  };
}
