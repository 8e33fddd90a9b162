// Input schemas of OAuth provider configuration (control plane, auth service v2), named after the API nouns.
import { z } from 'zod';

/** The ways a client authenticates at the token endpoint (RFC 7591 names). */
const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_post', 'client_secret_basic', 'none'] as const;
/** PKCE code challenge methods (RFC 7636). */
const CODE_CHALLENGE_METHODS = ['S256', 'plain'] as const;

const httpUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((value) => {
    try {
      return ['http:', 'https:'].includes(new URL(value).protocol);
    } catch {
      return false;
    }
  }, 'must be an http(s) URL');

const name = z.string().trim().min(1).max(200);
const clientId = z.string().trim().min(1).max(1024);
const clientSecret = z.string().min(1).max(4096);

/** A provider_id: a short slug chosen by the caller, unique in its organization (it is the path key). */
export const ProviderId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit');

export const OAuthProviderCreate = z.object({
  provider_id: ProviderId,
  name,
  client_id: clientId,
  client_secret: clientSecret.nullish(),
  auth_url: httpUrl,
  token_url: httpUrl,
  uses_pkce: z.boolean().default(false),
  code_challenge_method: z.enum(CODE_CHALLENGE_METHODS).nullish(),
  provider_type: z.string().trim().min(1).max(100).nullish(),
  mcp_server_url: httpUrl.nullish(),
  token_endpoint_auth_method: z.enum(TOKEN_ENDPOINT_AUTH_METHODS).default('client_secret_post'),
  is_dynamic_client: z.boolean().default(false),
});
export type OAuthProviderCreateInput = z.input<typeof OAuthProviderCreate>;

/**
 * PATCH body, exactly the spec's: every field optional and nullable. Null on a field the response
 * always carries (name, client_id, client_secret, auth_url, token_url, uses_pkce) leaves it as it is;
 * `code_challenge_method`, which the response may show as null, is cleared by null.
 */
export const OAuthProviderUpdate = z.object(
  {
    name: name.nullish(),
    client_id: clientId.nullish(),
    client_secret: clientSecret.nullish(),
    auth_url: httpUrl.nullish(),
    token_url: httpUrl.nullish(),
    uses_pkce: z.boolean().nullish(),
    code_challenge_method: z.enum(CODE_CHALLENGE_METHODS).nullish(),
  },
  // The body is required: a missing or non-object body is a validation error, not an empty update.
  { error: (issue) => (issue.input === undefined ? 'Field required' : 'Input should be a valid dictionary') },
);
export type OAuthProviderUpdateInput = z.input<typeof OAuthProviderUpdate>;
