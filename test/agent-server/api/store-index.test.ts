// The store with the graph config's `store` section, through the official SDK against a real `serve`:
// `store.index` embeds items (put through the API or by a graph) with the project's own embedding
// function and ranks `query` by cosine similarity (exact, in SQL: the embedded PostgreSQL has no
// pgvector); `store.ttl` gives puts a default ttl, decides whether reads refresh it, and paces the sweep.
import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeSchema } from '../../../src/database/store-schema.js';
import { sweepStoreJob } from '../../../src/agent-server/jobs/store-sweep.job.js';
import { fixtureConfig, removeDir, startServe, storedExpiry, type ServeProcess } from '../../support/serve.js';

const FIXTURES = new URL('../../fixtures/graphs/', import.meta.url).pathname;
const DEFAULT_TTL_MINUTES = 60;
const SWEEP_INTERVAL_MINUTES = 30;

let server: ServeProcess;
let pool: pg.Pool;
beforeAll(async () => {
  const { dir, configPath } = fixtureConfig();
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  config.graphs = { recall: `${FIXTURES}recall.ts:graph` };
  config.store = {
    index: { embed: `${FIXTURES}embed.ts:embed`, dims: 5, fields: ['text'] },
    ttl: { default_ttl: DEFAULT_TTL_MINUTES, refresh_on_read: false, sweep_interval_minutes: SWEEP_INTERVAL_MINUTES },
  };
  writeFileSync(configPath, JSON.stringify(config));
  server = await startServe({ configPath, dir, readyTimeoutMs: 170_000 });
  pool = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
}, 240_000);
// The pool ends first: a deployed revision's database goes with it.
afterAll(async () => {
  await pool?.end();
  await server?.stop();
  removeDir(server?.dir);
});

const expiresAt = (namespace: string[], key: string) => storedExpiry(pool, server.deploymentId, namespace, key);

describe('store.index: vector search', () => {
  it('ranks items put through the API by cosine similarity to the query, with the score', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['notes', user], 'cats', { text: 'my cat and another cat' });
    await server.client.store.putItem(['notes', user], 'dogs', { text: 'the dog barks' });
    await server.client.store.putItem(['notes', user], 'mixed', { text: 'a cat chased a dog' });
    const { items } = await server.client.store.searchItems(['notes', user], { query: 'cat' });
    expect(items.map((item) => item.key)).toEqual(['cats', 'mixed', 'dogs']);
    // embed('cat') = [1,0,0,0,0.1]; embed('my cat and another cat') = [2,0,0,0,0.1]: cosine ≈ 0.9987.
    expect(items[0]!.score).toBeCloseTo((2 + 0.01) / (Math.sqrt(1.01) * Math.sqrt(4.01)), 5);
    expect(items[2]!.score).toBeCloseTo(0.01 / (Math.sqrt(1.01) * Math.sqrt(1.01)), 5);
    // Without a query: newest first, no score.
    const plain = await server.client.store.searchItems(['notes', user]);
    expect(plain.items.map((item) => item.key)).toEqual(['mixed', 'dogs', 'cats']);
    expect(plain.items[0]!.score == null).toBe(true);
    // limit and offset apply to the ranking.
    const second = await server.client.store.searchItems(['notes', user], { query: 'dog', limit: 1, offset: 1 });
    expect(second.items.map((item) => item.key)).toEqual(['mixed']);
  });

  it('embeds the fields `index` names, or none with index: false (ranked after the embedded ones)', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['notes', user], 'title-fish', { text: 'nothing here', title: 'fish fish' }, { index: ['title'] });
    await server.client.store.putItem(['notes', user], 'unindexed', { text: 'fish fish fish' }, { index: false });
    await server.client.store.putItem(['notes', user], 'birds', { text: 'a bird' });
    const { items } = await server.client.store.searchItems(['notes', user], { query: 'fish' });
    expect(items.map((item) => item.key)).toEqual(['title-fish', 'birds', 'unindexed']);
    expect(items[0]!.score).toBeGreaterThan(0.99);
    expect(items[2]!.score == null).toBe(true);
    // A replaced value is embedded anew.
    await server.client.store.putItem(['notes', user], 'birds', { text: 'fish and more fish' });
    expect((await server.client.store.searchItems(['notes', user], { query: 'fish', limit: 1 })).items[0]!.score).toBeGreaterThan(0.99);
  });

  it('takes `index` through GraphQL as the REST body does: the fields to embed, or false', async () => {
    const user = crypto.randomUUID();
    const put = async (key: string, value: object, index?: unknown) => {
      const response = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: `mutation($input: PutStoreItemInput!) { putStoreItem(input: $input) { ... on MutationPutStoreItemSuccess { data { key } } ... on AppError { code message } } }`,
          variables: { input: { deploymentId: server.deploymentId, namespace: ['gql', user], key, value, index } },
        }),
      });
      return ((await response.json()) as { data: { putStoreItem: Record<string, unknown> } }).data.putStoreItem;
    };
    expect(await put('title-fish', { text: 'nothing here', title: 'fish fish' }, ['title'])).toEqual({ data: { key: 'title-fish' } });
    expect(await put('unindexed', { text: 'fish fish fish' }, false)).toEqual({ data: { key: 'unindexed' } });
    expect(await put('birds', { text: 'a bird' })).toEqual({ data: { key: 'birds' } });
    expect(await put('bad', { text: 'x' }, 'title')).toMatchObject({ code: 'VALIDATION_FAILED' });
    const { items } = await server.client.store.searchItems(['gql', user], { query: 'fish' });
    expect(items.map((item) => item.key)).toEqual(['title-fish', 'birds', 'unindexed']);
    expect(items[0]!.score).toBeGreaterThan(0.99);
  });

  it('embeds what a graph puts, and the graph’s own store.search ranks by similarity too', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['notes', user], 'from-api', { text: 'dog dog' });
    const result = (await server.client.runs.wait(null, 'recall', { input: { user, note: 'cat food', query: 'cat' } })) as {
      recalled: { key: string; score: number }[];
    };
    expect(result.recalled.map((item) => item.key)).toEqual(['from-graph', 'from-api']);
    expect(result.recalled[0]!.score).toBeGreaterThan(0.99);
    const { items } = await server.client.store.searchItems(['notes', user], { query: 'food for the cat' });
    expect(items.map((item) => item.key)).toEqual(['from-graph', 'from-api']);
  });

  it('answers 503 naming the failure when the embedding function fails, and stores nothing', async () => {
    const user = crypto.randomUUID();
    const response = await fetch(`${server.url}/store/items`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ namespace: ['notes', user], key: 'k', value: { text: 'outage' } }),
    });
    expect(response.status).toBe(503);
    expect(await response.text()).toMatch(/embedding function failed: the embedding service is down/);
    expect(await server.client.store.getItem(['notes', user], 'k')).toBeNull();
    // Not embedded, the same value is stored.
    await server.client.store.putItem(['notes', user], 'k', { text: 'outage' }, { index: false });
    expect((await server.client.store.getItem(['notes', user], 'k'))?.value).toEqual({ text: 'outage' });
  });

  it('filters and namespace prefixes still apply to a ranked search', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['notes', user, 'a'], 'one', { text: 'cat and dog', kind: 'x' });
    await server.client.store.putItem(['notes', user, 'b'], 'two', { text: 'cat', kind: 'y' });
    await server.client.store.putItem(['notes', `${user}x`], 'other', { text: 'cat', kind: 'x' });
    const keys = async (prefix: string[], filter?: Record<string, unknown>) =>
      (await server.client.store.searchItems(prefix, { query: 'cat', filter })).items.map((item) => item.key);
    expect(await keys(['notes', user])).toEqual(['two', 'one']);
    expect(await keys(['notes', user], { kind: 'x' })).toEqual(['one']);
    expect(await keys(['notes', user, 'b'])).toEqual(['two']);
  });
});

describe('store.ttl from the graph config', () => {
  it('gives a put without ttl the default ttl, and a put with one its own', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['ttl', user], 'default', { text: 'x' });
    await server.client.store.putItem(['ttl', user], 'own', { text: 'x' }, { ttl: 5 });
    const minutesLeft = async (key: string) => ((await expiresAt(['ttl', user], key))!.getTime() - Date.now()) / 60_000;
    expect(await minutesLeft('default')).toBeGreaterThan(DEFAULT_TTL_MINUTES - 1);
    expect(await minutesLeft('default')).toBeLessThanOrEqual(DEFAULT_TTL_MINUTES);
    expect(await minutesLeft('own')).toBeGreaterThan(4);
    expect(await minutesLeft('own')).toBeLessThanOrEqual(5);
  });

  it('does not refresh on read (refresh_on_read: false) unless the read asks to', async () => {
    const user = crypto.randomUUID();
    await server.client.store.putItem(['ttl', user], 'k', { text: 'x' });
    const first = (await expiresAt(['ttl', user], 'k'))!;
    await new Promise((resolve) => setTimeout(resolve, 50));
    await server.client.store.getItem(['ttl', user], 'k');
    await server.client.store.searchItems(['ttl', user]);
    expect(await expiresAt(['ttl', user], 'k')).toEqual(first);
    await server.client.store.getItem(['ttl', user], 'k', { refreshTtl: true });
    expect((await expiresAt(['ttl', user], 'k'))!.getTime()).toBeGreaterThan(first.getTime());
  });

  it('sweeps the deployment’s expired items at most once per sweep_interval_minutes', async () => {
    const user = crypto.randomUUID();
    const sweep = () => sweepStoreJob({ db: { pool } } as never);
    // Make this deployment due: its last sweep (if any) is older than its interval.
    await pool.query(`UPDATE "${storeSchema(server.deploymentId)}".platform_store_settings SET swept_at = now() - interval '1 day'`);
    await server.client.store.putItem(['ttl', user], 'first', { text: 'x' }, { ttl: 0.001 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await sweep();
    expect(await expiresAt(['ttl', user], 'first')).toBeUndefined();
    await server.client.store.putItem(['ttl', user], 'second', { text: 'x' }, { ttl: 0.001 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await sweep();
    // Swept moments ago: this deployment waits for its interval (reads skip the item meanwhile).
    expect(await expiresAt(['ttl', user], 'second')).toBeInstanceOf(Date);
    expect(await server.client.store.getItem(['ttl', user], 'second')).toBeNull();
  });
});
