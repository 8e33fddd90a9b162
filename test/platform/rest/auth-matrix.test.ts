// One authentication for REST and GraphQL: the same key, tenant and permission rules, each surface in
// its own error shape.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeps } from '../../../src/wiring.js';
import { revokeApiKey } from '../../../src/platform/services/tenancy/api-keys.service.js';
import { SYSTEM_VIEWER } from '../../../src/viewer.js';
import { buildApiKey, buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform, testConfig } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let revokedKey: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  const revoked = await buildApiKey(platform.system, tenant.organization.id, tenant.admin.id);
  await revokeApiKey(platform.system, revoked.apiKey.id);
  revokedKey = revoked.key;
});
afterAll(() => platform?.stop());

const rest = (path: string, init: { key?: string; tenant?: string; method?: string; body?: unknown; headerCase?: 'upper' } = {}) =>
  fetch(`${platform.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      'content-type': 'application/json',
      ...(init.key ? { [init.headerCase === 'upper' ? 'X-API-KEY' : 'X-Api-Key']: init.key } : {}),
      ...(init.tenant ? { 'X-Tenant-Id': init.tenant } : {}),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

describe('REST authentication (FastAPI dialect)', () => {
  it('answers 401 {detail} without a key, with an unknown key and with a revoked key', async () => {
    for (const key of [undefined, 'apk_not-a-real-key', revokedKey]) {
      const response = await rest('/api/v1/workspaces', { key });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ detail: expect.any(String) });
    }
  });

  it('accepts the key header in any case', async () => {
    const response = await rest('/api/v1/workspaces', { key: tenant.adminKey, headerCase: 'upper' });
    expect(response.status).toBe(200);
    expect((await response.json()).map((w: { id: string }) => w.id)).toEqual([tenant.workspace.id]);
  });

  it('refuses X-Tenant-Id of another organization’s workspace with 403, without revealing it', async () => {
    const response = await rest('/api/v1/workspaces', { key: tenant.adminKey, tenant: other.workspace.id });
    expect(response.status).toBe(403);
    const unknown = await rest('/api/v1/workspaces', { key: tenant.adminKey, tenant: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).toBe(403);
    expect((await unknown.json()).detail.replace(/[0-9a-f-]{36}/, 'ID')).toBe((await response.json()).detail.replace(/[0-9a-f-]{36}/, 'ID'));
  });

  it('answers 400 for a malformed X-Tenant-Id', async () => {
    const response = await rest('/api/v1/workspaces', { key: tenant.adminKey, tenant: 'not-a-uuid' });
    expect(response.status).toBe(400);
  });

  it('answers 403 when the key lacks the permission', async () => {
    const response = await rest('/api/v1/workspaces', { key: tenant.viewerKey, method: 'POST', body: { display_name: 'nope' } });
    expect(response.status).toBe(403);
    expect((await response.json()).detail).toMatch(/organization:manage/);
  });

  it('another organization’s key sees 404 for this organization’s rows', async () => {
    const created = await (await rest('/api/v1/api-key', { key: tenant.adminKey, method: 'POST', body: { description: 'ci' } })).json();
    expect(created.key).toMatch(/^apk_/);
    const response = await rest(`/api/v1/api-key/${created.id}`, { key: other.adminKey, method: 'DELETE' });
    expect(response.status).toBe(404);
    // …and the key still works: the other organization could not revoke it.
    expect((await rest('/api/v1/workspaces', { key: created.key })).status).toBe(200);
  });
});

describe('GraphQL authentication', () => {
  const query = '{ viewer { user { email } organization { id } workspaces { id } } }';

  it('answers 401 with code UNAUTHENTICATED without a key, with an unknown key and with a revoked key', async () => {
    for (const key of [undefined, 'apk_not-a-real-key', revokedKey]) {
      const { status, body } = await graphql(platform.url, query, { key });
      expect(status).toBe(401);
      expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      expect(body.data).toBeUndefined();
    }
  });

  it('records when a key was last used', async () => {
    await graphql(platform.url, query, { key: tenant.viewerKey });
    const { body } = await graphql(platform.url, '{ apiKeys { shortKey lastUsedAt } }', { key: tenant.viewerKey });
    expect(body.data.apiKeys).toHaveLength(1);
    expect(Date.now() - Date.parse(body.data.apiKeys[0].lastUsedAt)).toBeLessThan(60_000);
    expect(tenant.viewerKey.startsWith(body.data.apiKeys[0].shortKey.split('...')[0])).toBe(true);
  });

  it('shows the viewer its own organization and workspaces only', async () => {
    const { status, body } = await graphql(platform.url, query, { key: tenant.adminKey });
    expect(status).toBe(200);
    expect(body.data.viewer.user.email).toBe(tenant.admin.email);
    expect(body.data.viewer.organization.id).toBe(tenant.organization.id);
    expect(body.data.viewer.workspaces).toEqual([{ id: tenant.workspace.id }]);
  });

  it('refuses another organization’s workspace as X-Tenant-Id with 403 FORBIDDEN', async () => {
    const { status, body } = await graphql(platform.url, query, { key: tenant.adminKey, tenant: other.workspace.id });
    expect(status).toBe(403);
    expect(body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('returns NOT_FOUND for another organization’s workspace by id', async () => {
    const { body } = await graphql(platform.url, `query($id: ID!) { workspace(id: $id) { id name } }`, {
      key: tenant.adminKey,
      variables: { id: other.workspace.id },
    });
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('returns a typed FORBIDDEN error when the key lacks the permission', async () => {
    const { body } = await graphql(
      platform.url,
      `mutation { createWorkspace(input: { name: "x" }) { __typename ... on AppError { code message } } }`,
      { key: tenant.viewerKey },
    );
    expect(body.data.createWorkspace).toMatchObject({ __typename: 'AppError', code: 'FORBIDDEN' });
  });

  it('a revoked key stops working at once', async () => {
    const { body: created } = await graphql(platform.url, 'mutation { createApiKey(input: {description: "temp"}) { ... on MutationCreateApiKeySuccess { data { key apiKey { id } } } } }', {
      key: tenant.adminKey,
    });
    const { key, apiKey } = created.data.createApiKey.data;
    expect((await graphql(platform.url, query, { key })).status).toBe(200);
    const { body: revoked } = await graphql(platform.url, `mutation($id: ID!) { revokeApiKey(id: $id) { __typename } }`, {
      key: tenant.adminKey,
      variables: { id: apiKey.id },
    });
    expect(revoked.data.revokeApiKey.__typename).toBe('MutationRevokeApiKeySuccess');
    expect((await graphql(platform.url, query, { key })).status).toBe(401);
  });
});

// Each process keeps resolved keys a few seconds (viewer-cache.ts); revocation must still bite at once.
describe('revoking a key that this process has cached', () => {
  const newKey = async () => (await (await rest('/api/v1/api-key', { key: tenant.adminKey, method: 'POST', body: { description: 'cached' } })).json()) as { id: string; key: string };

  it('refuses the key on its next request after a revoke through this process', async () => {
    const created = await newKey();
    expect((await rest('/api/v1/workspaces', { key: created.key })).status).toBe(200);
    expect((await rest(`/api/v1/api-key/${created.id}`, { key: tenant.adminKey, method: 'DELETE' })).status).toBeLessThan(300);
    const response = await rest('/api/v1/workspaces', { key: created.key });
    expect(response.status).toBe(401);
    expect((await rest('/api/v1/workspaces', { key: created.key, tenant: tenant.workspace.id })).status).toBe(401);
  });

  it('refuses the key well within the cache TTL after another process revokes it', async () => {
    const created = await newKey();
    expect((await rest('/api/v1/workspaces', { key: created.key })).status).toBe(200);
    // Another process: its own pool and no LISTEN connection, like the admin CLI.
    const config = testConfig();
    const other = await createDeps(config, pino({ level: 'silent' }), { databaseUrl: config.databaseUrl, listen: false });
    try {
      await revokeApiKey({ ...other.deps, viewer: SYSTEM_VIEWER }, created.id);
    } finally {
      await other.stop();
    }
    // The notification clears this process's cache; the TTL (5 s here) is only the fallback.
    const deadline = Date.now() + 2_000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      status = (await rest('/api/v1/workspaces', { key: created.key })).status;
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).toBe(401);
  });
});
