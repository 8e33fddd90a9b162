// Control plane OAuth providers (/v2/auth/providers), git host integrations (/v1/integrations) and
// listeners (/v2/listeners) over real HTTP, at the root and under /api-host: exact response shapes,
// the spec's PATCH semantics, secrets sealed at rest and absent from every response and log line,
// tenancy (another organization's key: 404), permissions, the listener gates, and bad input (4xx in
// the FastAPI dialect, never 5xx).
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/platform/app.js';
import { REDACTED_PATHS } from '../../../src/logger.js';
import { integrationAccessToken } from '../../../src/platform/services/integrations/integrations.service.js';
import { SYSTEM_VIEWER } from '../../../src/viewer.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

type Tenant = Awaited<ReturnType<typeof buildTenant>>;

const logLines: string[] = [];
const responseBodies: string[] = [];
let platform: TestPlatform;
let url: string;
let stopApp: () => Promise<void>;
let tenant: Tenant;
let other: Tenant;

const CLIENT_SECRET = 'client-secret-6f1c2a9e-never-shown';
const ROTATED_SECRET = 'client-secret-rotated-4d7b-never-shown';
const ACCESS_TOKEN = 'ghp_accessToken9d2e71b0NeverShown';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system, { planTier: 'enterprise', selfHosted: true });
  other = await buildTenant(platform.system, { planTier: 'enterprise', selfHosted: true });
  // The same app, logging every request at debug into memory, to show no secret reaches a log line.
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  const app = buildApp({ ...platform.deps, logger: pino({ level: 'debug', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, sink) });
  url = await app.start(0, '127.0.0.1');
  stopApp = () => app.stop();
}, 120_000);
afterAll(async () => {
  await stopApp?.();
  await platform?.stop();
});

type CallOptions = { body?: unknown; rawBody?: string; key?: string; tenant?: string | null; prefix?: string };

async function api(method: string, path: string, options: CallOptions = {}) {
  const tenantId = options.tenant === undefined ? tenant.workspace.id : options.tenant;
  const response = await fetch(`${url}${options.prefix ?? ''}${path}`, {
    method,
    headers: {
      'x-api-key': options.key ?? tenant.adminKey,
      ...(tenantId ? { 'x-tenant-id': tenantId } : {}),
      'content-type': 'application/json',
    },
    body: options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  const text = await response.text();
  responseBodies.push(text);
  return { status: response.status, body: text ? (JSON.parse(text) as any) : undefined };
}

const asOther = { key: () => ({ key: other.adminKey, tenant: other.workspace.id }) };

let providerSeq = 0;
const providerBody = (overrides: Record<string, unknown> = {}) => ({
  provider_id: `github-${++providerSeq}`,
  name: 'GitHub',
  client_id: 'Iv1.client',
  client_secret: CLIENT_SECRET,
  auth_url: 'https://github.com/login/oauth/authorize',
  token_url: 'https://github.com/login/oauth/access_token',
  ...overrides,
});

async function createProvider(overrides: Record<string, unknown> = {}) {
  const created = await api('POST', '/v2/auth/providers', { body: providerBody(overrides) });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

/** Every response and log line so far is free of the secrets this file sends. */
function expectNoSecretsLeaked() {
  for (const secret of [CLIENT_SECRET, ROTATED_SECRET, ACCESS_TOKEN]) {
    expect(responseBodies.join('\n')).not.toContain(secret);
    expect(logLines.join('\n')).not.toContain(secret);
  }
}

describe('OAuth providers', () => {
  it('create answers 201 with exactly the spec fields and defaults, and no client secret', async () => {
    const created = await createProvider({ provider_id: 'okta' });
    expect(Object.keys(created).sort()).toEqual(
      [
        'id',
        'organization_id',
        'provider_id',
        'name',
        'client_id',
        'auth_url',
        'token_url',
        'uses_pkce',
        'code_challenge_method',
        'provider_type',
        'mcp_server_url',
        'token_endpoint_auth_method',
        'is_dynamic_client',
        'created_at',
        'updated_at',
      ].sort(),
    );
    expect(created).toMatchObject({
      organization_id: tenant.organization.id,
      provider_id: 'okta',
      name: 'GitHub',
      client_id: 'Iv1.client',
      uses_pkce: false,
      code_challenge_method: null,
      provider_type: null,
      mcp_server_url: null,
      token_endpoint_auth_method: 'client_secret_post',
      is_dynamic_client: false,
    });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.created_at).toMatch(ISO);
    expect(created.updated_at).toMatch(ISO);
  });

  it('stores the client secret sealed, not in plain text', async () => {
    const created = await createProvider();
    const { rows } = await platform.deps.db.pool.query('SELECT client_secret FROM oauth_providers WHERE id = $1', [created.id]);
    expect(rows[0].client_secret).toMatch(/^v1\./);
    expect(rows[0].client_secret).not.toContain(CLIENT_SECRET);
    expect(platform.deps.secrets.decrypt(rows[0].client_secret)).toBe(CLIENT_SECRET);
  });

  it('list is a bare array of the organization’s providers; get answers one; delete answers 200 and it is gone', async () => {
    const created = await createProvider();
    const list = await api('GET', '/v2/auth/providers');
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.map((p: any) => p.provider_id)).toContain(created.provider_id);
    expect(list.body.every((p: any) => p.organization_id === tenant.organization.id)).toBe(true);

    const got = await api('GET', `/v2/auth/providers/${created.provider_id}`);
    expect(got).toEqual({ status: 200, body: created });

    const deleted = await api('DELETE', `/v2/auth/providers/${created.provider_id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.provider_id).toBe(created.provider_id);
    expect((await api('GET', `/v2/auth/providers/${created.provider_id}`)).status).toBe(404);
    expect((await api('DELETE', `/v2/auth/providers/${created.provider_id}`)).status).toBe(404);
  });

  it('a duplicate provider_id in the organization is 409; another organization may use it', async () => {
    const created = await createProvider();
    const duplicate = await api('POST', '/v2/auth/providers', { body: providerBody({ provider_id: created.provider_id }) });
    expect(duplicate).toEqual({ status: 409, body: { detail: `OAuth provider ${created.provider_id} already exists.` } });
    const elsewhere = await api('POST', '/v2/auth/providers', { body: providerBody({ provider_id: created.provider_id }), ...asOther.key() });
    expect(elsewhere.status).toBe(201);
  });

  it('PATCH changes only the fields sent; null leaves required fields as they are and clears code_challenge_method', async () => {
    const created = await createProvider({ uses_pkce: true, code_challenge_method: 'S256' });
    const path = `/v2/auth/providers/${created.provider_id}`;

    const renamed = await api('PATCH', path, { body: { name: 'GitHub Enterprise', token_url: 'https://ghe.example.com/token' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({
      ...created,
      name: 'GitHub Enterprise',
      token_url: 'https://ghe.example.com/token',
      updated_at: renamed.body.updated_at,
    });
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));

    const nulls = await api('PATCH', path, {
      body: { name: null, client_id: null, client_secret: null, auth_url: null, token_url: null, uses_pkce: null, code_challenge_method: null },
    });
    expect(nulls.status).toBe(200);
    expect(nulls.body).toMatchObject({ name: 'GitHub Enterprise', client_id: 'Iv1.client', uses_pkce: true, code_challenge_method: null });

    // An empty object and unknown fields change nothing.
    const empty = await api('PATCH', path, { body: { provider_id: 'renamed', organization_id: other.organization.id, whatever: 1 } });
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ provider_id: created.provider_id, organization_id: tenant.organization.id });

    const rotated = await api('PATCH', path, { body: { client_secret: ROTATED_SECRET, uses_pkce: false } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.uses_pkce).toBe(false);
    const { rows } = await platform.deps.db.pool.query('SELECT client_secret FROM oauth_providers WHERE id = $1', [created.id]);
    expect(platform.deps.secrets.decrypt(rows[0].client_secret)).toBe(ROTATED_SECRET);
  });

  it('PATCH with an invalid body is 422 with FastAPI detail items; the provider is unchanged', async () => {
    const created = await createProvider();
    const path = `/v2/auth/providers/${created.provider_id}`;
    const invalid: [unknown, (string | number)[]][] = [
      [{ name: 42 }, ['body', 'name']],
      [{ uses_pkce: 'yes' }, ['body', 'uses_pkce']],
      [{ name: '' }, ['body', 'name']],
      [{ name: 'x'.repeat(10_000) }, ['body', 'name']],
      [{ auth_url: 'javascript:alert(1)' }, ['body', 'auth_url']],
      [{ token_url: 'not a url' }, ['body', 'token_url']],
      [{ code_challenge_method: 'MD5' }, ['body', 'code_challenge_method']],
      [{ client_secret: { nested: true } }, ['body', 'client_secret']],
      [[{ name: 'array body' }], ['body']],
      [null, ['body']],
    ];
    for (const [body, loc] of invalid) {
      const response = await api('PATCH', path, { rawBody: JSON.stringify(body) });
      expect(response.status, JSON.stringify(body).slice(0, 100)).toBe(422);
      expect(response.body.detail.length).toBeGreaterThan(0);
      for (const item of response.body.detail) {
        expect(Object.keys(item).sort()).toEqual(['loc', 'msg', 'type']);
        expect(typeof item.msg).toBe('string');
        expect(typeof item.type).toBe('string');
      }
      expect(response.body.detail[0].loc).toEqual(loc);
    }
    // The body is required.
    const missing = await fetch(`${url}${path}`, { method: 'PATCH', headers: { 'x-api-key': tenant.adminKey, 'x-tenant-id': tenant.workspace.id } });
    expect(missing.status).toBe(422);
    expect((await missing.json()).detail[0].loc).toEqual(['body']);
    // Malformed JSON.
    const malformed = await api('PATCH', path, { rawBody: '{"name": ' });
    expect(malformed.status).toBe(422);
    expect((await api('GET', path)).body).toEqual(created);
  });

  it('create rejects missing fields, wrong types and huge values with 422', async () => {
    const invalid: Record<string, unknown>[] = [
      { ...providerBody(), provider_id: undefined },
      { ...providerBody(), name: undefined },
      { ...providerBody(), client_id: null },
      { ...providerBody(), auth_url: 5 },
      { ...providerBody(), provider_id: '../etc' },
      { ...providerBody(), provider_id: 'p'.repeat(500) },
      { ...providerBody(), uses_pkce: 'true' },
      { ...providerBody(), token_endpoint_auth_method: 'private_key_jwt_unknown' },
      { ...providerBody(), is_dynamic_client: 1 },
      { ...providerBody(), mcp_server_url: 'ftp://example.com' },
      { ...providerBody(), client_secret: 's'.repeat(100_000) },
    ];
    for (const body of invalid) {
      const response = await api('POST', '/v2/auth/providers', { body });
      expect(response.status, JSON.stringify(body).slice(0, 200)).toBe(422);
      expect(Array.isArray(response.body.detail)).toBe(true);
    }
  });

  it('another organization’s key gets 404 on every provider route; a viewer may read but not write (403)', async () => {
    const created = await createProvider();
    const path = `/v2/auth/providers/${created.provider_id}`;
    const foreign = asOther.key();
    expect(await api('GET', path, foreign)).toEqual({ status: 404, body: { detail: `OAuth provider ${created.provider_id} not found.` } });
    expect((await api('PATCH', path, { ...foreign, body: { name: 'stolen' } })).status).toBe(404);
    expect((await api('DELETE', path, foreign)).status).toBe(404);
    expect((await api('GET', '/v2/auth/providers', foreign)).body.map((p: any) => p.id)).not.toContain(created.id);

    const viewer = { key: tenant.viewerKey };
    expect((await api('GET', path, viewer)).status).toBe(200);
    expect((await api('PATCH', path, { ...viewer, body: { name: 'viewer' } })).status).toBe(403);
    expect((await api('DELETE', path, viewer)).status).toBe(403);
    expect((await api('POST', '/v2/auth/providers', { ...viewer, body: providerBody() })).status).toBe(403);
    expect((await api('GET', path)).body.name).toBe('GitHub');
  });

  it('no key or an unknown key is 401 in the FastAPI dialect', async () => {
    const response = await fetch(`${url}/v2/auth/providers`);
    expect(response.status).toBe(401);
    expect(typeof (await response.json()).detail).toBe('string');
    expect((await api('GET', '/v2/auth/providers', { key: 'lsv2_unknown' })).status).toBe(401);
  });

  it('answers the same under /api-host (self-hosted)', async () => {
    const created = await api('POST', '/v2/auth/providers', { body: providerBody(), prefix: '/api-host' });
    expect(created.status).toBe(201);
    const patched = await api('PATCH', `/v2/auth/providers/${created.body.provider_id}`, { body: { name: 'Self-hosted' }, prefix: '/api-host' });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe('Self-hosted');
    expect((await api('GET', `/v2/auth/providers/${created.body.provider_id}`)).body.name).toBe('Self-hosted');
    expect((await api('GET', '/v2/auth/providers/unknown-provider', { prefix: '/api-host' })).status).toBe(404);
  });

  it('a provider_id no provider can have is 404, never 5xx', async () => {
    for (const providerId of ['%00', 'a%00b', 'x'.repeat(5000), '%E2%9C%93', '..']) {
      expect((await api('GET', `/v2/auth/providers/${providerId}`)).status, providerId.slice(0, 20)).toBe(404);
      expect((await api('PATCH', `/v2/auth/providers/${providerId}`, { body: { name: 'n' } })).status, providerId.slice(0, 20)).toBe(404);
    }
  });
});

describe('integrations (v1)', () => {
  it('registers an integration (201, token not returned, sealed at rest), lists it as a bare array, gets and deletes it', async () => {
    const created = await api('POST', '/v1/integrations', { body: { name: 'Company GitHub', host: 'GitHub.com', access_token: ACCESS_TOKEN } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual(['created_at', 'host', 'id', 'name', 'tenant_id', 'updated_at']);
    expect(created.body).toMatchObject({ name: 'Company GitHub', host: 'github.com', tenant_id: tenant.workspace.id });

    const { rows } = await platform.deps.db.pool.query('SELECT access_token FROM integrations WHERE id = $1', [created.body.id]);
    expect(rows[0].access_token).not.toContain(ACCESS_TOKEN);

    const list = await api('GET', '/v1/integrations');
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual(created.body);
    expect((await api('GET', `/v1/integrations/${created.body.id}`)).body).toEqual(created.body);
    expect((await api('GET', '/v1/integrations', { prefix: '/api-host' })).body).toContainEqual(created.body);

    expect((await api('DELETE', `/v1/integrations/${created.body.id}`)).status).toBe(204);
    expect((await api('GET', `/v1/integrations/${created.body.id}`)).status).toBe(404);
  });

  it('integrationAccessToken gives the clone step the host and token, within the tenant only', async () => {
    const created = await api('POST', '/v1/integrations', { body: { name: 'GHE', host: 'git.example.com:8443', access_token: ACCESS_TOKEN } });
    const id = created.body.id as string;
    const system = { ...platform.deps, viewer: SYSTEM_VIEWER };
    expect(await integrationAccessToken(system, id)).toEqual({ host: 'git.example.com:8443', token: ACCESS_TOKEN });
    expect(await integrationAccessToken(system, id, { workspaceId: tenant.workspace.id })).toEqual({ host: 'git.example.com:8443', token: ACCESS_TOKEN });
    await expect(integrationAccessToken(system, id, { workspaceId: other.workspace.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(integrationAccessToken(system, 'not-a-uuid')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('another organization’s key gets 404; a viewer may list but not register or delete (403)', async () => {
    const created = await api('POST', '/v1/integrations', { body: { name: 'Mine', host: 'gitlab.com', access_token: ACCESS_TOKEN } });
    const foreign = asOther.key();
    expect(await api('GET', `/v1/integrations/${created.body.id}`, foreign)).toEqual({ status: 404, body: { detail: `Integration ${created.body.id} not found.` } });
    expect((await api('DELETE', `/v1/integrations/${created.body.id}`, foreign)).status).toBe(404);
    expect((await api('GET', '/v1/integrations', foreign)).body.map((i: any) => i.id)).not.toContain(created.body.id);
    // A foreign workspace named in X-Tenant-Id is refused outright.
    expect((await api('GET', '/v1/integrations', { key: other.adminKey, tenant: tenant.workspace.id })).status).toBe(403);

    expect((await api('GET', '/v1/integrations', { key: tenant.viewerKey })).status).toBe(200);
    expect((await api('POST', '/v1/integrations', { key: tenant.viewerKey, body: { name: 'V', host: 'github.com', access_token: 'x' } })).status).toBe(403);
    expect((await api('DELETE', `/v1/integrations/${created.body.id}`, { key: tenant.viewerKey })).status).toBe(403);
  });

  it('rejects bad input with 422, never 5xx', async () => {
    const good = { name: 'G', host: 'github.com', access_token: ACCESS_TOKEN };
    const invalid: unknown[] = [
      {},
      { ...good, name: null },
      { ...good, name: 'n'.repeat(1000) },
      { ...good, host: 'https://github.com/org' },
      { ...good, host: 'github.com; rm -rf /' },
      { ...good, host: 7 },
      { ...good, access_token: '' },
      { ...good, access_token: 'two words' },
      { ...good, access_token: 'line\nbreak' },
      [good],
    ];
    for (const body of invalid) {
      const response = await api('POST', '/v1/integrations', { body });
      expect(response.status, JSON.stringify(body).slice(0, 200)).toBe(422);
      expect(Array.isArray(response.body.detail)).toBe(true);
    }
    expect((await api('GET', '/v1/integrations/not-a-uuid')).status).toBe(404);
    // Unknown fields are ignored (DECISIONS), never stored or echoed.
    const extra = await api('POST', '/v1/integrations', { body: { ...good, repo_url: 'x', tenant_id: other.workspace.id } });
    expect(extra.status).toBe(201);
    expect(extra.body.tenant_id).toBe(tenant.workspace.id);
    expect(extra.body).not.toHaveProperty('repo_url');
    // Integrations live in a workspace: an organization-wide key must name one.
    const noTenant = await api('GET', '/v1/integrations', { tenant: null });
    expect(noTenant).toEqual({ status: 400, body: { detail: 'Select a workspace with the X-Tenant-Id header.' } });
    expect((await api('GET', '/v1/integrations', { tenant: 'not-a-uuid' })).status).toBe(400);
    expect((await api('POST', '/v1/integrations', { rawBody: '{"name":"nul\\u0000","host":"github.com","access_token":"t"}' })).status).toBeLessThan(500);
  });
});

describe('listeners (v2)', () => {
  it('CRUD: create 201, list {resources, offset} newest first with paging, get, PATCH compute_config, delete 204', async () => {
    const first = await api('POST', '/v2/listeners', { body: { compute_type: 'k8s', compute_id: 'cluster-a', compute_config: { k8s_namespaces: ['agents'] } } });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(Object.keys(first.body).sort()).toEqual(['compute_config', 'compute_id', 'compute_type', 'created_at', 'id', 'tenant_id', 'updated_at']);
    expect(first.body).toMatchObject({ compute_type: 'k8s', compute_id: 'cluster-a', compute_config: { k8s_namespaces: ['agents'] }, tenant_id: tenant.workspace.id });
    const second = await api('POST', '/v2/listeners', { body: { compute_id: 'cluster-b' } });
    expect(second.body).toMatchObject({ compute_type: 'k8s', compute_config: {} });

    const page1 = await api('GET', '/v2/listeners?limit=1');
    expect(page1).toEqual({ status: 200, body: { resources: [second.body], offset: 1 } });
    const page2 = await api('GET', '/v2/listeners?limit=1&offset=1');
    expect(page2.body).toEqual({ resources: [first.body], offset: 2 });
    expect((await api('GET', '/v2/listeners?offset=2')).body).toEqual({ resources: [], offset: 2 });

    expect((await api('GET', `/v2/listeners/${first.body.id}`)).body).toEqual(first.body);
    const patched = await api('PATCH', `/v2/listeners/${first.body.id}`, { body: { compute_config: { k8s_namespaces: ['agents', 'batch'] } } });
    expect(patched.status).toBe(200);
    expect(patched.body.compute_config).toEqual({ k8s_namespaces: ['agents', 'batch'] });
    expect((await api('PATCH', `/v2/listeners/${first.body.id}`, { body: { compute_id: 'cluster-z' } })).status).toBe(400);

    expect((await api('DELETE', `/v2/listeners/${first.body.id}`, { prefix: '/api-host' })).status).toBe(204);
    expect((await api('GET', `/v2/listeners/${first.body.id}`)).status).toBe(404);
  });

  it('a duplicate compute_id in the workspace is 409; another workspace may use it', async () => {
    expect((await api('POST', '/v2/listeners', { body: { compute_id: 'dup-cluster' } })).status).toBe(201);
    expect(await api('POST', '/v2/listeners', { body: { compute_id: 'dup-cluster' } })).toEqual({
      status: 409,
      body: { detail: 'A listener for compute_id dup-cluster already exists.' },
    });
    expect((await api('POST', '/v2/listeners', { body: { compute_id: 'dup-cluster' }, ...asOther.key() })).status).toBe(201);
  });

  it('creating one needs a self-hosted organization on the Enterprise plan (403 otherwise)', async () => {
    for (const overrides of [
      { planTier: 'enterprise' as const, selfHosted: false },
      { planTier: 'plus' as const, selfHosted: true },
      { planTier: 'free' as const, selfHosted: true },
    ]) {
      const gated = await buildTenant(platform.system, overrides);
      const response = await api('POST', '/v2/listeners', { key: gated.adminKey, tenant: gated.workspace.id, body: { compute_id: 'c' } });
      expect(response).toEqual({ status: 403, body: { detail: 'Listeners are available to self-hosted organizations on the Enterprise plan only.' } });
    }
  });

  it('another organization’s key gets 404 on every listener route; a viewer cannot write (403)', async () => {
    const created = await api('POST', '/v2/listeners', { body: { compute_id: 'private-cluster' } });
    const path = `/v2/listeners/${created.body.id}`;
    const foreign = asOther.key();
    expect(await api('GET', path, foreign)).toEqual({ status: 404, body: { detail: `Listener ${created.body.id} not found.` } });
    expect((await api('PATCH', path, { ...foreign, body: { compute_config: {} } })).status).toBe(404);
    expect((await api('DELETE', path, foreign)).status).toBe(404);
    expect((await api('GET', '/v2/listeners?limit=100', foreign)).body.resources.map((l: any) => l.id)).not.toContain(created.body.id);

    expect((await api('GET', path, { key: tenant.viewerKey })).status).toBe(200);
    expect((await api('POST', '/v2/listeners', { key: tenant.viewerKey, body: { compute_id: 'v' } })).status).toBe(403);
    expect((await api('DELETE', path, { key: tenant.viewerKey })).status).toBe(403);
  });

  it('rejects bad input with 4xx, never 5xx', async () => {
    const invalid: unknown[] = [
      {},
      { compute_id: null },
      { compute_id: 12 },
      { compute_id: 'c'.repeat(1000) },
      { compute_id: 'x', compute_type: 'docker' },
      { compute_id: 'x', compute_config: 'namespaces' },
      { compute_id: 'x', compute_config: [1, 2] },
    ];
    for (const body of invalid) {
      const response = await api('POST', '/v2/listeners', { body });
      expect(response.status, JSON.stringify(body)).toBe(422);
    }
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'offset=-1', 'limit=1&limit=2']) {
      const response = await api('GET', `/v2/listeners?${query}`);
      expect(response.status, query).toBe(422);
      expect(response.body.detail[0].loc[0]).toBe('query');
    }
    const deep = await api('POST', '/v2/listeners', { rawBody: `{"compute_id":"d","compute_config":${'{"a":'.repeat(500)}1${'}'.repeat(500)}}` });
    expect(deep.status).toBeGreaterThanOrEqual(400);
    expect(deep.status).toBeLessThan(500);
    const huge = await api('POST', '/v2/listeners', { rawBody: JSON.stringify({ compute_id: 'h', compute_config: { blob: 'x'.repeat(20 * 1024 * 1024) } }) });
    expect(huge.status).toBe(413);
    expect((await api('GET', '/v2/listeners/not-a-uuid')).status).toBe(404);
    expect((await api('GET', '/v2/listeners/extra/segments')).status).toBe(404);
  });
});

describe('requests that meet a delete', () => {
  it('deletes sent at once: the first answers as a delete does, the others 404; a PATCH after the delete 404, never 5xx', async () => {
    const statuses = async (calls: Promise<{ status: number }>[]) => (await Promise.all(calls)).map((answer) => answer.status).sort();
    const integration = await api('POST', '/v1/integrations', { body: { name: 'at once', host: 'git.example.com', access_token: ACCESS_TOKEN } });
    expect(await statuses(Array.from({ length: 4 }, () => api('DELETE', `/v1/integrations/${integration.body.id}`)))).toEqual([204, 404, 404, 404]);
    const provider = await createProvider();
    expect(await statuses(Array.from({ length: 4 }, () => api('DELETE', `/v2/auth/providers/${provider.provider_id}`)))).toEqual([200, 404, 404, 404]);
    const listener = await api('POST', '/v2/listeners', { body: { compute_id: 'at-once' } });
    const path = `/v2/listeners/${listener.body.id}`;
    const patch = () => api('PATCH', path, { body: { compute_config: { k8s_namespaces: ['x'] } } });
    const answers = await statuses([api('DELETE', path), patch(), api('DELETE', path), patch(), patch()]);
    expect(answers.filter((status) => status === 204)).toHaveLength(1);
    expect(answers.every((status) => status === 200 || status === 204 || status === 404)).toBe(true);
  });
});

describe('secrets', () => {
  it('no client secret or access token in any response or log line of this file', () => {
    expect(responseBodies.length).toBeGreaterThan(50);
    expect(logLines.length).toBeGreaterThan(50);
    expectNoSecretsLeaked();
  });
});
