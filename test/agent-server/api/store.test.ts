// The long-term store through the official SDK's `client.store` against real `serve` processes: the
// same items graphs see as `store`, time to live, namespaces, one deployment's items hidden from another.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepStoreJob } from '../../../src/agent-server/jobs/store-sweep.job.js';
import { storeSchema } from '../../../src/database/store-schema.js';
import { connectDatabase } from '../../../src/db.js';
import type { AgentServerContext } from '../../../src/agent-server/services/served-deployment/deployment-scope.js';
import * as store from '../../../src/agent-server/services/store/store.service.js';
import { testConfig } from '../../support/helpers.js';
import { removeDir, startServe, storedExpiry, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
let pool: pg.Pool;
beforeAll(async () => {
  // Room for a loaded machine: serve loads the runtime and the fixture graphs before it answers.
  server = await startServe({ readyTimeoutMs: 170_000 });
  pool = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
}, 240_000);
// The pool ends first: a deployed revision's database goes with it.
afterAll(async () => {
  await pool?.end();
  await server?.stop();
  removeDir(server?.dir);
});

const expiresAt = (namespace: string[], key: string) => storedExpiry(pool, server.deploymentId, namespace, key);

const raw = (method: string, path: string, body?: unknown) =>
  fetch(`${server.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

describe('store items', () => {
  it('puts, gets, replaces and deletes an item', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['prefs', user], 'theme', { color: 'dark' });
    const item = await server.client.store.getItem(['prefs', user], 'theme');
    expect(item).toMatchObject({ namespace: ['prefs', user], key: 'theme', value: { color: 'dark' } });
    expect(Date.parse(item!.createdAt)).not.toBeNaN();
    // Reading an item without a ttl changes nothing about it.
    expect((await server.client.store.getItem(['prefs', user], 'theme'))?.updatedAt).toBe(item!.updatedAt);
    await server.client.store.putItem(['prefs', user], 'theme', { color: 'light' });
    expect((await server.client.store.getItem(['prefs', user], 'theme'))?.value).toEqual({ color: 'light' });
    await server.client.store.deleteItem(['prefs', user], 'theme');
    expect(await server.client.store.getItem(['prefs', user], 'theme')).toBeNull();
  });

  it('is the store graphs see: a graph reads what the API wrote and the API reads what the graph wrote', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['memories', user], 'from-api', { fact: 'likes tea' });
    const result = (await server.client.runs.wait(null, 'memory', { input: { user, fact: 'owns a cat' } })) as { known: string[] };
    expect(result.known).toEqual(['likes tea', 'owns a cat']);
    const { items } = await server.client.store.searchItems(['memories', user]);
    expect(items.map((item) => item.value.fact).sort()).toEqual(['likes tea', 'owns a cat']);
  });

  it('searches by namespace prefix (whole labels), filter, text query, limit and offset', async () => {
    const tag = crypto.randomUUID();
    await server.client.store.putItem(['docs', tag, 'a'], 'one', { kind: 'note', size: 1, text: 'the quick brown fox' });
    await server.client.store.putItem(['docs', tag, 'b'], 'two', { kind: 'note', size: 5, text: 'a lazy dog sleeps' });
    await server.client.store.putItem(['docs', tag, 'b'], 'three', { kind: 'todo', size: 9, text: 'walk the dog' });
    await server.client.store.putItem(['docs', `${tag}x`], 'other', { kind: 'note' });
    const keys = async (prefix: string[], options: Parameters<ServeProcess['client']['store']['searchItems']>[1] = {}) =>
      (await server.client.store.searchItems(prefix, options)).items.map((item) => item.key).sort();
    expect(await keys(['docs', tag])).toEqual(['one', 'three', 'two']);
    expect(await keys(['docs', tag, 'b'])).toEqual(['three', 'two']);
    expect(await keys(['docs', tag], { filter: { kind: 'note' } })).toEqual(['one', 'two']);
    expect(await keys(['docs', tag], { filter: { size: { $gte: 5 } } })).toEqual(['three', 'two']);
    expect(await keys(['docs', tag], { query: 'dog' })).toEqual(['three', 'two']);
    const found = await server.client.store.searchItems(['docs', tag], { query: 'fox' });
    expect(found.items).toHaveLength(1);
    expect(found.items[0]).toMatchObject({ key: 'one', namespace: ['docs', tag, 'a'] });
    expect((await server.client.store.searchItems(['docs', tag], { limit: 2 })).items).toHaveLength(2);
    expect((await server.client.store.searchItems(['docs', tag], { limit: 2, offset: 2 })).items).toHaveLength(1);
  });

  it('holds labels with : % _ \\ ~ (as the reference does), matching prefixes and listing namespaces exactly', async () => {
    const tag = crypto.randomUUID();
    const labels = ['user_123', 'a:b', '50%', 'back\\slash', 'x~3A'];
    for (const label of labels) await server.client.store.putItem(['odd', tag, label], 'k', { label });
    // Look-alikes that LIKE patterns or a ':' join would confuse with them.
    await server.client.store.putItem(['odd', tag, 'userX123'], 'k', { label: 'userX123' });
    await server.client.store.putItem(['odd', tag, 'a', 'b'], 'k', { label: 'a/b' });
    await server.client.store.putItem(['odd', tag, '50x'], 'k', { label: '50x' });
    for (const label of labels) {
      expect((await server.client.store.getItem(['odd', tag, label], 'k'))?.value, label).toEqual({ label });
      const { items } = await server.client.store.searchItems(['odd', tag, label]);
      expect(items.map((item) => item.namespace), label).toEqual([['odd', tag, label]]);
    }
    expect((await server.client.store.listNamespaces({ prefix: ['odd', tag, 'a:b'] })).namespaces).toEqual([['odd', tag, 'a:b']]);
    expect((await server.client.store.listNamespaces({ prefix: ['odd', tag, 'a'] })).namespaces).toEqual([['odd', tag, 'a', 'b']]);
    expect((await server.client.store.listNamespaces({ suffix: ['50%'] })).namespaces).toEqual([['odd', tag, '50%']]);
    const all = (await server.client.store.listNamespaces({ prefix: ['odd', tag], maxDepth: 3 })).namespaces;
    expect(all.map((namespace) => namespace[2]).sort()).toEqual([...labels, 'userX123', 'a', '50x'].sort());
    // A graph reads and writes them too (PostgresStore alone refuses '_' and '%'; LangGraph's own store
    // wrapper refuses ':' in graph code, as in the reference server).
    const result = (await server.client.runs.wait(null, 'memory', { input: { user: `u_1\\${tag}%`, fact: 'odd labels' } })) as { known: string[] };
    expect(result.known).toEqual(['odd labels']);
    expect((await server.client.store.searchItems(['memories', `u_1\\${tag}%`])).items.map((item) => item.value.fact)).toEqual(['odd labels']);
    await server.client.store.deleteItem(['odd', tag, 'a:b'], 'k');
    expect(await server.client.store.getItem(['odd', tag, 'a:b'], 'k')).toBeNull();
  });

  it('lists namespaces by prefix, suffix (with * wildcards) and max depth', async () => {
    const tag = crypto.randomUUID();
    await server.client.store.putItem(['ns', tag, 'users', 'ann'], 'k', { v: 1 });
    await server.client.store.putItem(['ns', tag, 'users', 'bob'], 'k', { v: 1 });
    await server.client.store.putItem(['ns', tag, 'teams', 'red'], 'k', { v: 1 });
    const list = (options: Parameters<ServeProcess['client']['store']['listNamespaces']>[0]) => server.client.store.listNamespaces(options);
    expect((await list({ prefix: ['ns', tag] })).namespaces).toEqual([
      ['ns', tag, 'teams', 'red'],
      ['ns', tag, 'users', 'ann'],
      ['ns', tag, 'users', 'bob'],
    ]);
    expect((await list({ prefix: ['ns', tag], maxDepth: 3 })).namespaces).toEqual([
      ['ns', tag, 'teams'],
      ['ns', tag, 'users'],
    ]);
    expect((await list({ prefix: ['ns', '*', 'users'], suffix: ['bob'] })).namespaces).toContainEqual(['ns', tag, 'users', 'bob']);
    expect((await list({ prefix: ['ns', tag], suffix: ['ann'] })).namespaces).toEqual([['ns', tag, 'users', 'ann']]);
    expect((await list({ prefix: ['ns', tag], limit: 1, offset: 1 })).namespaces).toEqual([['ns', tag, 'users', 'ann']]);
  });

  it('expires items after their ttl; the sweep deletes them', async () => {
    const user = crypto.randomUUID();
    // The agent server's own store.sweep runs every minute and may come between the reads and the check
    // that the expired row is still there (CI saw it): mark the store swept just now, due in an hour.
    const settings = `"${storeSchema(server.deploymentId)}".platform_store_settings`;
    const { rows } = await pool.query<{ settings: object }>(`SELECT settings FROM ${settings}`);
    await pool.query(`UPDATE ${settings} SET settings = jsonb_set(settings, '{ttl}', '{"sweepIntervalMinutes": 60}'), swept_at = now()`);
    await server.client.store.putItem(['ttl', user], 'short', { v: 1 }, { ttl: 0.01 }); // 0.6 seconds
    await server.client.store.putItem(['ttl', user], 'forever', { v: 2 });
    expect(await server.client.store.getItem(['ttl', user], 'short', { refreshTtl: false })).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await server.client.store.getItem(['ttl', user], 'short')).toBeNull();
    expect((await server.client.store.searchItems(['ttl', user])).items.map((item) => item.key)).toEqual(['forever']);
    expect(await expiresAt(['ttl', user], 'short')).toBeInstanceOf(Date);
    await pool.query(`UPDATE ${settings} SET settings = $1, swept_at = NULL`, [JSON.stringify(rows[0]!.settings)]);
    await sweepStoreJob({ db: { pool } } as never);
    expect(await expiresAt(['ttl', user], 'short')).toBeUndefined();
    expect(await expiresAt(['ttl', user], 'forever')).toBeNull();
  });

  it('restarts an item’s ttl when it is read, unless refresh_ttl is false', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['ttl', user], 'k', { v: 1 }, { ttl: 10 });
    const first = (await expiresAt(['ttl', user], 'k'))!;
    await new Promise((resolve) => setTimeout(resolve, 50));
    await server.client.store.getItem(['ttl', user], 'k', { refreshTtl: false });
    expect(await expiresAt(['ttl', user], 'k')).toEqual(first);
    await server.client.store.getItem(['ttl', user], 'k');
    const refreshed = (await expiresAt(['ttl', user], 'k'))!;
    expect(refreshed.getTime()).toBeGreaterThan(first.getTime());
    // Still ten minutes from now, not more.
    expect(refreshed.getTime() - Date.now()).toBeLessThanOrEqual(10 * 60_000 + 1000);
    // Searching refreshes only when asked to.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await server.client.store.searchItems(['ttl', user]);
    expect(await expiresAt(['ttl', user], 'k')).toEqual(refreshed);
    await server.client.store.searchItems(['ttl', user], { refreshTtl: true });
    expect((await expiresAt(['ttl', user], 'k'))!.getTime()).toBeGreaterThan(refreshed.getTime());
  });

  it('keeps each deployment’s items to itself', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['private', user], 'secret', { v: 1 });
    // Another deployment, through the same service the REST routes call (a second `serve` is slow to start on a loaded machine).
    const db = connectDatabase(server.databaseUrl, { poolSize: 2 });
    try {
      const other = { db, config: testConfig(), deployment: { deploymentId: crypto.randomUUID() } } as unknown as AgentServerContext;
      expect(await store.getItem(other, { namespace: `private.${user}`, key: 'secret' })).toBeNull();
      expect(await store.searchItems(other, { namespace_prefix: ['private', user] })).toEqual([]);
      expect(await store.listNamespaces(other, { prefix: ['private', user] })).toEqual([]);
      const own = { db, config: testConfig(), deployment: { deploymentId: server.deploymentId } } as unknown as AgentServerContext;
      expect(await store.getItem(own, { namespace: `private.${user}`, key: 'secret' })).toMatchObject({ value: { v: 1 } });
    } finally {
      await db.close();
    }
  });
});

async function gql(query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await response.json()) as { data?: any; errors?: unknown[] };
  expect(body.errors).toBeUndefined();
  return body.data;
}

describe('store in GraphQL', () => {
  it('puts, reads, searches, lists namespaces and deletes: the items the SDK sees', async () => {
    const user = crypto.randomUUID();
    const put = await gql(
      `mutation($input: PutStoreItemInput!) { putStoreItem(input: $input) { ... on MutationPutStoreItemSuccess { data { namespace key value } } ... on AppError { code message } } }`,
      { input: { deploymentId: server.deploymentId, namespace: ['gql', user], key: 'k', value: { color: 'teal' } } },
    );
    expect(put.putStoreItem.data).toEqual({ namespace: ['gql', user], key: 'k', value: { color: 'teal' } });
    expect((await server.client.store.getItem(['gql', user], 'k'))?.value).toEqual({ color: 'teal' });
    const read = await gql(
      `query($d: ID!, $ns: [String!]!) { storeItem(deploymentId: $d, namespace: $ns, key: "k") { key value } storeItems(deploymentId: $d, namespacePrefix: $ns, query: "teal") { key } storeNamespaces(deploymentId: $d, prefix: $ns) { labels } }`,
      { d: server.deploymentId, ns: ['gql', user] },
    );
    expect(read).toEqual({ storeItem: { key: 'k', value: { color: 'teal' } }, storeItems: [{ key: 'k' }], storeNamespaces: [{ labels: ['gql', user] }] });
    const bad = await gql(
      `mutation($input: PutStoreItemInput!) { putStoreItem(input: $input) { ... on AppError { code message } } }`,
      { input: { deploymentId: server.deploymentId, namespace: ['a.b'], key: 'k', value: {} } },
    );
    expect(bad.putStoreItem).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringMatching(/cannot contain/) });
    await gql(`mutation($d: ID!, $ns: [String!]!) { deleteStoreItem(deploymentId: $d, namespace: $ns, key: "k") { ... on MutationDeleteStoreItemSuccess { data } } }`, {
      d: server.deploymentId,
      ns: ['gql', user],
    });
    expect(await server.client.store.getItem(['gql', user], 'k')).toBeNull();
  });
});

describe('store bad input', () => {
  it('answers 422 with a clear message for bad namespaces and keys', async () => {
    const cases: [string, string, unknown, RegExp][] = [
      ['PUT', '/store/items', { namespace: ['a.b'], key: 'k', value: {} }, /cannot contain '\.'/],
      ['PUT', '/store/items', { namespace: ['a', ''], key: 'k', value: {} }, /cannot be empty/],
      ['PUT', '/store/items', { namespace: ['a\u0000b'], key: 'k', value: {} }, /U\+0000/],
      ['PUT', '/store/items', { namespace: ['a'], key: 'k\u0000', value: {} }, /U\+0000/],
      ['PUT', '/store/items', { namespace: ['a'], key: 'k', value: { text: 'nul \u0000 inside' } }, /U\+0000/],
      ['PUT', '/store/items', { namespace: [], key: 'k', value: {} }, /Namespace cannot be empty/],
      ['PUT', '/store/items', { namespace: ['a'], key: '', value: {} }, /Key cannot be empty/],
      ['PUT', '/store/items', { namespace: ['a'], key: 'k', value: 'not an object' }, /value/],
      ['PUT', '/store/items', { namespace: ['a'], key: 'k', value: {}, ttl: -1 }, /ttl/],
      ['DELETE', '/store/items', { namespace: ['a.b'], key: 'k' }, /cannot contain/],
      ['POST', '/store/items/search', { namespace_prefix: ['a.b'] }, /cannot contain/],
      ['POST', '/store/items/search', { namespace_prefix: ['a'], limit: 0 }, /limit/],
      ['POST', '/store/namespaces', { max_depth: 0 }, /max_depth/],
      ['POST', '/store/namespaces', { prefix: [''] }, /cannot be empty/],
    ];
    for (const [method, path, body, message] of cases) {
      const response = await raw(method, path, body);
      expect(response.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(422);
      expect(await response.text()).toMatch(message);
    }
    for (const query of ['namespace=a..b&key=k', 'namespace=a', 'key=k']) {
      const response = await raw('GET', `/store/items?${query}`);
      expect(response.status, query).toBe(422);
    }
  });

  it('refuses a 10 MB value with 413, and stores nothing', async () => {
    const user = crypto.randomUUID();
    const response = await raw('PUT', '/store/items', { namespace: ['big', user], key: 'k', value: { blob: 'x'.repeat(10 * 1024 * 1024) } });
    expect(response.status).toBe(413);
    expect(await server.client.store.getItem(['big', user], 'k')).toBeNull();
  });
});
