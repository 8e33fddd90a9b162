// OAuth providers, integrations and listeners over GraphQL, through the same services as REST: the
// types never carry a secret, mutations return typed AppErrors, and another organization sees nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;

const CLIENT_SECRET = 'gql-client-secret-never-shown-81c3';
const ACCESS_TOKEN = 'gql_token_never_shown_5a0e';

const gql = (query: string, variables: Record<string, unknown> = {}, as = tenant) =>
  graphql(platform.url, query, { key: as.adminKey, tenant: as.workspace.id, variables });

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system, { planTier: 'enterprise', selfHosted: true });
  other = await buildTenant(platform.system, { planTier: 'enterprise', selfHosted: true });
}, 120_000);
afterAll(async () => {
  await platform?.stop();
});

const PROVIDER_FIELDS = 'id organizationId providerId name clientId hasClientSecret authUrl tokenUrl usesPkce codeChallengeMethod tokenEndpointAuthMethod isDynamicClient';

describe('OAuthProvider', () => {
  it('create, update (null clears codeChallengeMethod), query and delete; the secret is never a field', async () => {
    const created = await gql(
      `mutation($input: CreateOAuthProviderInput!) { createOAuthProvider(input: $input) {
        __typename ... on MutationCreateOAuthProviderSuccess { data { ${PROVIDER_FIELDS} } } ... on AppError { code message } } }`,
      {
        input: {
          providerId: 'gh',
          name: 'GitHub',
          clientId: 'cid',
          clientSecret: CLIENT_SECRET,
          authUrl: 'https://github.com/login/oauth/authorize',
          tokenUrl: 'https://github.com/login/oauth/access_token',
          usesPkce: true,
          codeChallengeMethod: 'S256',
        },
      },
    );
    expect(created.body.data.createOAuthProvider.data).toMatchObject({
      providerId: 'gh',
      organizationId: tenant.organization.id,
      hasClientSecret: true,
      usesPkce: true,
      codeChallengeMethod: 'S256',
      tokenEndpointAuthMethod: 'client_secret_post',
      isDynamicClient: false,
    });

    const updated = await gql(
      `mutation { updateOAuthProvider(providerId: "gh", input: { name: "GitHub EMU", codeChallengeMethod: null }) {
        ... on MutationUpdateOAuthProviderSuccess { data { name codeChallengeMethod usesPkce } } } }`,
    );
    expect(updated.body.data.updateOAuthProvider.data).toEqual({ name: 'GitHub EMU', codeChallengeMethod: null, usesPkce: true });

    const invalid = await gql(
      `mutation { updateOAuthProvider(providerId: "gh", input: { authUrl: "not a url" }) { __typename ... on AppError { code message } } }`,
    );
    expect(invalid.body.data.updateOAuthProvider).toMatchObject({ __typename: 'AppError', code: 'VALIDATION_FAILED' });

    const read = await gql('{ oauthProviders { providerId name } oauthProvider(providerId: "gh") { authUrl } }');
    expect(read.body.data.oauthProviders).toEqual([{ providerId: 'gh', name: 'GitHub EMU' }]);
    expect(read.body.data.oauthProvider.authUrl).toBe('https://github.com/login/oauth/authorize');

    // Another organization sees none of it, and cannot change or delete it.
    const foreign = await gql('{ oauthProviders { id } }', {}, other);
    expect(foreign.body.data.oauthProviders).toEqual([]);
    const foreignDelete = await gql('mutation { deleteOAuthProvider(providerId: "gh") { __typename ... on AppError { code } } }', {}, other);
    expect(foreignDelete.body.data.deleteOAuthProvider).toEqual({ __typename: 'AppError', code: 'NOT_FOUND' });
    const foreignGet = await gql('{ oauthProvider(providerId: "gh") { id } }', {}, other);
    expect(foreignGet.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const deleted = await gql('mutation { deleteOAuthProvider(providerId: "gh") { ... on MutationDeleteOAuthProviderSuccess { data { providerId } } } }');
    expect(deleted.body.data.deleteOAuthProvider.data).toEqual({ providerId: 'gh' });
    expect((await gql('{ oauthProviders { id } }')).body.data.oauthProviders).toEqual([]);
    expect(JSON.stringify([created, updated, read, deleted])).not.toContain(CLIENT_SECRET);
  });

  it('has no field that could carry the client secret', async () => {
    const introspection = await gql('{ __type(name: "OAuthProvider") { fields { name } } }');
    const names = introspection.body.data.__type.fields.map((field: { name: string }) => field.name);
    expect(names).toContain('hasClientSecret');
    expect(names).not.toContain('clientSecret');
  });
});

describe('Integration', () => {
  it('register, list, delete; the token is never a field; another workspace sees nothing', async () => {
    const created = await gql(
      `mutation($token: String!) { createIntegration(name: "GitHub", host: "github.com", accessToken: $token) {
        ... on MutationCreateIntegrationSuccess { data { id name host workspaceId } } ... on AppError { code message } } }`,
      { token: ACCESS_TOKEN },
    );
    const integration = created.body.data.createIntegration.data;
    expect(integration).toMatchObject({ name: 'GitHub', host: 'github.com', workspaceId: tenant.workspace.id });
    expect((await gql('{ integrations { id } }')).body.data.integrations).toEqual([{ id: integration.id }]);
    expect((await gql('{ integrations { id } }', {}, other)).body.data.integrations).toEqual([]);
    const typeFields = (await gql('{ __type(name: "Integration") { fields { name } } }')).body.data.__type.fields.map((f: { name: string }) => f.name);
    expect(typeFields.some((name: string) => /token/i.test(name))).toBe(false);

    const bad = await gql('mutation { createIntegration(name: "x", host: "https://nope/", accessToken: "t") { __typename ... on AppError { code } } }');
    expect(bad.body.data.createIntegration).toEqual({ __typename: 'AppError', code: 'VALIDATION_FAILED' });

    const nul = await gql('mutation($n: String!) { createIntegration(name: $n, host: "github.com", accessToken: "t") { __typename ... on AppError { code } } }', {
      n: 'a\u0000b',
    });
    expect(nul.status).toBe(400);
    expect(nul.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');

    const foreignDelete = await gql('mutation($id: ID!) { deleteIntegration(id: $id) { __typename ... on AppError { code } } }', { id: integration.id }, other);
    expect(foreignDelete.body.data.deleteIntegration).toEqual({ __typename: 'AppError', code: 'NOT_FOUND' });
    const deleted = await gql('mutation($id: ID!) { deleteIntegration(id: $id) { __typename } }', { id: integration.id });
    expect(deleted.body.data.deleteIntegration.__typename).toBe('MutationDeleteIntegrationSuccess');
    expect(JSON.stringify([created])).not.toContain(ACCESS_TOKEN);
  });
});

describe('Listener', () => {
  it('create, duplicate (CONFLICT), update, page, delete; the plan gate answers FORBIDDEN', async () => {
    const CREATE = `mutation($id: String!, $config: JSON) { createListener(computeId: $id, computeConfig: $config) {
      __typename ... on MutationCreateListenerSuccess { data { id computeType computeId computeConfig } } ... on AppError { code message } } }`;
    const created = await gql(CREATE, { id: 'cluster-1', config: { k8s_namespaces: ['a'] } });
    const listener = created.body.data.createListener.data;
    expect(listener).toMatchObject({ computeType: 'k8s', computeId: 'cluster-1', computeConfig: { k8s_namespaces: ['a'] } });
    expect((await gql(CREATE, { id: 'cluster-1' })).body.data.createListener).toMatchObject({ __typename: 'AppError', code: 'CONFLICT' });
    await gql(CREATE, { id: 'cluster-2' });

    const updated = await gql('mutation($id: ID!) { updateListener(id: $id, computeConfig: { k8s_namespaces: ["b"] }) { ... on MutationUpdateListenerSuccess { data { computeConfig } } } }', {
      id: listener.id,
    });
    expect(updated.body.data.updateListener.data.computeConfig).toEqual({ k8s_namespaces: ['b'] });

    const page = await gql('{ first: listeners(limit: 1) { computeId } rest: listeners(limit: 1, offset: 1) { computeId } }');
    expect(page.body.data).toEqual({ first: [{ computeId: 'cluster-2' }], rest: [{ computeId: 'cluster-1' }] });
    expect((await gql('{ listeners { id } }', {}, other)).body.data.listeners).toEqual([]);
    const badPage = await gql('{ listeners(limit: 0) { id } }');
    expect(badPage.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');

    const deleted = await gql('mutation($id: ID!) { deleteListener(id: $id) { __typename } }', { id: listener.id });
    expect(deleted.body.data.deleteListener.__typename).toBe('MutationDeleteListenerSuccess');

    const freeTenant = await buildTenant(platform.system, { planTier: 'free' });
    const gated = await gql(CREATE, { id: 'c' }, freeTenant);
    expect(gated.body.data.createListener).toMatchObject({ __typename: 'AppError', code: 'FORBIDDEN' });
  });
});
