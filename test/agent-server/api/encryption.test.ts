// Encryption at rest (LANGGRAPH_AES_KEY, LANGGRAPH_AES_JSON_KEYS): an agent server given a key keeps
// no plaintext of a marked value anywhere in its database (every table of every schema is scanned:
// checkpoints, their blobs and writes, run stream events, threads, runs, assistants, crons, the
// store), and the official SDK reads everything back as it was given. Then the key is rotated: the
// server restarted with a new key and the old one as LANGGRAPH_AES_KEY_PREVIOUS still reads the old
// data and writes new data with the new key.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEncryptionHandlers } from '../../../src/agent-server/runtime/encryption-handlers.js';
import { AtRestEncryption, CustomEncryption } from '../../../src/agent-server/services/encryption/at-rest.js';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { Client } from '@langchain/langgraph-sdk';
import { atDeployed, collect, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

// Values no encrypted form can contain by chance.
const SECRET = `secret-${randomBytes(8).toString('hex')}`;
const PLAIN = `plain-${randomBytes(8).toString('hex')}`;
const FIRST_KEY = randomBytes(16).toString('hex'); // 32 bytes: AES-256
const SECOND_KEY = randomBytes(8).toString('hex'); // 16 bytes: AES-128
const JSON_KEYS = 'api_key,password';

let server: ServeProcess;
let pool: pg.Pool;
let threadId: string;
let runId: string;
let assistantId: string;
let cronId: string;

/**
 * Every table of the agent server's database whose rows hold `text`: in any column's text form, or
 * in a bytea column (whose text form is hex). A table its login may not read fails the scan rather than be skipped.
 */
async function tablesHolding(text: string, db: pg.Pool = pool): Promise<{ found: string[]; scanned: string[] }> {
  const { rows: tables } = await db.query<{ schema: string; name: string }>(
    `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
      WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
  );
  const hex = Buffer.from(text, 'utf8').toString('hex');
  const found: string[] = [];
  const scanned: string[] = [];
  for (const table of tables) {
    const name = `"${table.schema}"."${table.name}"`;
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${name} t WHERE t::text LIKE '%' || $1 || '%' OR t::text LIKE '%' || $2 || '%'`, [text, hex]);
    scanned.push(`${table.schema}.${table.name}`);
    if (Number(rows[0]!.n) > 0) found.push(`${table.schema}.${table.name}`);
  }
  return { found, scanned };
}

describe('encryption at rest with LANGGRAPH_AES_KEY and LANGGRAPH_AES_JSON_KEYS', () => {
  beforeAll(async () => {
    server = await startServe({ project: 'encryption', env: { LANGGRAPH_AES_KEY: FIRST_KEY, LANGGRAPH_AES_JSON_KEYS: JSON_KEYS } });
    pool = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
  }, 120_000);

  afterAll(async () => {
    await pool?.end();
    await server?.stop();
    removeDir(server?.dir ?? '');
  });

  it('stores no plaintext of a marked value in any table', async () => {
    const { client } = server;
    const assistant = await client.assistants.create({
      graphId: 'secrets',
      config: { configurable: { api_key: SECRET } },
      context: { password: SECRET },
      metadata: { api_key: SECRET, team: 'blue' },
    });
    assistantId = assistant.assistant_id;
    const thread = await client.threads.create({ metadata: { api_key: SECRET, team: 'blue', note: PLAIN } });
    threadId = thread.thread_id;
    const parts = await collect(
      client.runs.stream(threadId, assistantId, {
        input: { api_key: SECRET },
        metadata: { api_key: SECRET },
        config: { configurable: { api_key: SECRET } },
        streamMode: ['values', 'updates', 'debug'],
      }),
    );
    const metadataPart = parts.find((part) => part.event === 'metadata')!;
    runId = (metadataPart.data as { run_id: string }).run_id;
    expect(parts.some((part) => part.event === 'values' && (part.data as { api_key?: string }).api_key === SECRET)).toBe(true);
    const cron = await client.crons.createForThread(threadId, assistantId, { schedule: '0 0 1 1 *', input: { api_key: SECRET }, metadata: { api_key: SECRET } });
    cronId = cron.cron_id;
    await client.store.putItem(['secrets', 'client'], 'item', { api_key: SECRET, nested: { password: SECRET }, team: 'blue' });

    const secret = await tablesHolding(SECRET);
    expect(secret.found).toEqual([]);
    // The scan reaches every table that holds the deployment's data (and finds what is not encrypted).
    for (const table of ['langgraph.checkpoints', 'langgraph.checkpoint_blobs', 'langgraph.checkpoint_writes', 'public.run_events', 'public.agent_threads', 'public.agent_runs', 'public.agent_assistants', 'public.agent_assistant_versions', 'public.agent_crons']) {
      expect(secret.scanned).toContain(table);
    }
    expect(secret.scanned.some((table) => table.endsWith('.store'))).toBe(true);
    expect((await tablesHolding(PLAIN)).found).toEqual(['public.agent_threads']);
  }, 60_000);

  it('reads everything back through the SDK as it was given', async () => {
    await expectReadable(server);
  }, 60_000);

  it('no longer matches encrypted keys in searches; other keys still match', async () => {
    const { client } = server;
    expect(await client.threads.search({ metadata: { api_key: SECRET } })).toEqual([]);
    expect((await client.threads.search({ metadata: { team: 'blue' } })).map((thread) => thread.thread_id)).toEqual([threadId]);
    expect(await client.assistants.search({ metadata: { api_key: SECRET } })).toEqual([]);
    expect((await client.assistants.search({ metadata: { team: 'blue' } })).map((found) => found.assistant_id)).toEqual([assistantId]);
    expect(await client.store.searchItems(['secrets', 'client'], { filter: { api_key: SECRET } })).toMatchObject({ items: [] });
    expect((await client.store.searchItems(['secrets', 'client'], { filter: { team: 'blue' } })).items).toHaveLength(1);
  });

  it.skipIf(atDeployed)('after a key rotation, reads data sealed with the previous key and writes with the new one', async () => {
    await server.stop();
    server = await startServe({
      configPath: server.configPath,
      dir: server.dir,
      env: { LANGGRAPH_AES_KEY: SECOND_KEY, LANGGRAPH_AES_KEY_PREVIOUS: FIRST_KEY, LANGGRAPH_AES_JSON_KEYS: JSON_KEYS },
    });
    await expectReadable(server);
    // A second run continues the thread from its checkpoint (sealed with the first key) under the second.
    const output = (await server.client.runs.wait(threadId, assistantId, { input: { api_key: SECRET } })) as { runs: number; api_key: string };
    expect(output).toEqual({ api_key: SECRET, runs: 2 });
    expect((await tablesHolding(SECRET)).found).toEqual([]);
    const state = await server.client.threads.getState(threadId);
    expect(state.values).toEqual({ api_key: SECRET, runs: 2 });
    // Values sealed since carry the new key's id: the old key alone cannot open them.
    const [second] = await server.client.runs.list(threadId, { limit: 1 });
    const { rows } = await pool.query<{ data: string }>("SELECT data FROM run_events WHERE run_id = $1 AND event = 'values'", [second!.run_id]);
    const sealed = rows.at(-1)!.data;
    expect(sealed).toMatch(/^enc:v1:/);
    expect(() => new AtRestEncryption({ key: FIRST_KEY }).decryptText(sealed)).toThrow(/key not configured/);
    expect(JSON.parse(new AtRestEncryption({ key: SECOND_KEY }).decryptText(sealed))).toEqual({ api_key: SECRET, runs: 2 });
  }, 120_000);
});

// langgraph.json `encryption.path`: the project's handlers (test/fixtures/custom-encryption), a key per
// tenant, the tenant from the authenticated user by the context handler.
describe('custom encryption handlers', () => {
  let custom: ServeProcess;
  let customPool: pg.Pool;
  let acme: Client;

  beforeAll(async () => {
    custom = await startServe({ project: 'custom-encryption' });
    customPool = new pg.Pool({ connectionString: custom.databaseUrl, max: 2 });
    acme = new Client({ apiUrl: custom.url, defaultHeaders: { authorization: 'Bearer tenant-acme' }, callerOptions: { maxRetries: 0 } });
  }, 120_000);

  afterAll(async () => {
    await customPool?.end();
    await custom?.stop();
    removeDir(custom?.dir ?? '');
  });

  it('seal everything with the tenant’s key and read it back in its context', async () => {
    const assistant = await acme.assistants.create({ graphId: 'secrets', metadata: { api_key: SECRET, team: 'blue' }, config: { configurable: { api_key: SECRET } } });
    const thread = await acme.threads.create({ metadata: { api_key: SECRET, team: 'blue' } });
    const parts = await collect(
      acme.runs.stream(thread.thread_id, assistant.assistant_id, { input: { api_key: SECRET }, metadata: { password: SECRET }, streamMode: ['values', 'updates'] }),
    );
    const run = parts.find((part) => part.event === 'metadata')!.data as { run_id: string };
    await acme.crons.createForThread(thread.thread_id, assistant.assistant_id, { schedule: '0 0 1 1 *', input: { api_key: SECRET } });
    await acme.store.putItem(['secrets', 'client'], 'item', { password: SECRET, team: 'blue' });

    expect((await tablesHolding(SECRET, customPool)).found).toEqual([]);
    // The handlers' own output is what is stored: JSON values they sealed, blobs marked as theirs.
    expect((await tablesHolding('kms:acme:', customPool)).found).toEqual(
      expect.arrayContaining(['public.agent_threads', 'public.agent_runs', 'public.agent_assistants', 'public.agent_crons', 'langgraph.checkpoints']),
    );
    const { rows: types } = await customPool.query<{ type: string }>('SELECT DISTINCT type FROM langgraph.checkpoint_blobs');
    expect(types.map((row) => row.type).filter((type) => type !== 'empty').every((type) => type.endsWith('+custom'))).toBe(true);

    expect((await acme.assistants.get(assistant.assistant_id)).metadata).toEqual({ api_key: SECRET, team: 'blue' });
    const read = await acme.threads.get(thread.thread_id);
    expect(read.metadata).toMatchObject({ api_key: SECRET, team: 'blue' });
    expect(read.values).toEqual({ api_key: SECRET, runs: 1 });
    expect((await acme.threads.getState(thread.thread_id)).values).toEqual({ api_key: SECRET, runs: 1 });
    expect((await acme.threads.getHistory(thread.thread_id))[0]!.metadata).toMatchObject({ password: SECRET });
    expect(await acme.runs.join(thread.thread_id, run.run_id)).toEqual({ api_key: SECRET, runs: 1 });
    const replayed = await collect(acme.runs.joinStream(thread.thread_id, run.run_id));
    expect(replayed.filter((part) => part.event === 'values').at(-1)!.data).toEqual({ api_key: SECRET, runs: 1 });
    expect((await acme.runs.get(thread.thread_id, run.run_id)).metadata).toMatchObject({ password: SECRET });
    expect((await acme.crons.search({ threadId: thread.thread_id }))[0]!.payload).toMatchObject({ input: { api_key: SECRET } });
    expect((await acme.store.getItem(['secrets', 'client'], 'item'))!.value).toEqual({ password: SECRET, team: 'blue' });
    expect((await acme.store.getItem(['secrets', 'graph'], 'run-1'))!.value).toEqual({ api_key: SECRET, run: 1 });
  }, 60_000);

  it('refuses a JSON handler that adds or removes keys', async () => {
    // A fault of the project's code: the caller gets a 500, the agent server's log says what it did.
    await expect(acme.threads.create({ metadata: { note: 'add_a_key' } })).rejects.toMatchObject({ status: 500 });
    expect(await acme.threads.search({ metadata: { note: 'add_a_key' } })).toEqual([]);
    // A deployed revision's log goes to its deploy log, not here.
    if (!custom.deployed) await vi.waitFor(() => expect(custom.output()).toMatch(/encrypt\.json handler of .*encryption\.ts:encryption changed the keys of thread\.metadata \(added added\)/));
  });
});

describe('start-up checks', () => {
  it('refuse an encryption module that is not an object of handlers, or seals what it cannot open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'encryption-module-'));
    const load = (source: string) => {
      const file = join(dir, `m${randomBytes(4).toString('hex')}.mjs`);
      writeFileSync(file, source);
      return loadEncryptionHandlers({ encryption: { file, exportName: 'encryption' } }, { encryption: undefined });
    };
    try {
      await expect(load('export const encryption = 42;')).rejects.toThrow(/cannot be used: it is not an object of handlers/);
      await expect(load('export const encryption = { encrypt: { blob: async (c, b) => b } };')).rejects.toThrow(/encrypt\.blob and decrypt\.blob go together/);
      await expect(load('export const encryption = { context: async () => ({}) };')).rejects.toThrow(/it has no encrypt handler/);
      await expect(load('throw new Error("broken module");')).rejects.toThrow(/Could not load the encryption "encryption" from .*: broken module/);
      const custom = await load('export const encryption = { encrypt: { json: async (c, d) => d }, decrypt: { json: async (c, d) => d } };');
      expect(custom).toBeInstanceOf(CustomEncryption);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the key', () => {
  it('must be 16, 24 or 32 bytes: the agent server refuses to start otherwise', () => {
    expect(() => loadConfig({ LANGGRAPH_AES_KEY: 'too-short' })).toThrow(ConfigError);
    expect(() => loadConfig({ LANGGRAPH_AES_KEY: 'too-short' })).toThrow(/LANGGRAPH_AES_KEY: must be 16, 24 or 32 bytes/);
    expect(() => loadConfig({ LANGGRAPH_AES_JSON_KEYS: 'api_key' })).toThrow(/LANGGRAPH_AES_KEY: required/);
    expect(loadConfig({ LANGGRAPH_AES_KEY: SECOND_KEY, LANGGRAPH_AES_JSON_KEYS: 'a, b' }).encryption).toEqual({ key: SECOND_KEY, previousKey: undefined, jsonKeys: ['a', 'b'] });
  });
});

async function expectReadable(at: ServeProcess): Promise<void> {
  const { client } = at;
  const assistant = await client.assistants.get(assistantId);
  expect(assistant.config.configurable).toMatchObject({ api_key: SECRET });
  expect(assistant.context).toEqual({ password: SECRET });
  expect(assistant.metadata).toEqual({ api_key: SECRET, team: 'blue' });
  expect((await client.assistants.getVersions(assistantId))[0]!.metadata).toEqual({ api_key: SECRET, team: 'blue' });
  const thread = await client.threads.get(threadId);
  expect(thread.metadata).toMatchObject({ api_key: SECRET, team: 'blue', note: PLAIN });
  expect(thread.values).toMatchObject({ api_key: SECRET });
  const state = await client.threads.getState(threadId);
  expect(state.values).toMatchObject({ api_key: SECRET });
  const history = await client.threads.getHistory(threadId);
  expect(history.length).toBeGreaterThan(1);
  expect(history[0]!.metadata).toMatchObject({ api_key: SECRET });
  const run = await client.runs.get(threadId, runId);
  expect(run.metadata).toMatchObject({ api_key: SECRET });
  expect((run as unknown as { kwargs: { input: unknown } }).kwargs.input).toEqual({ api_key: SECRET });
  expect(await client.runs.join(threadId, runId)).toEqual({ api_key: SECRET, runs: 1 });
  const replayed = await collect(client.runs.joinStream(threadId, runId));
  expect(replayed.find((part) => part.event === 'values' && (part.data as { runs?: number }).runs === 1)?.data).toEqual({ api_key: SECRET, runs: 1 });
  const [cron] = await client.crons.search({ threadId });
  expect(cron!.cron_id).toBe(cronId);
  expect(cron!.payload).toMatchObject({ input: { api_key: SECRET } });
  expect((cron as unknown as { metadata: unknown }).metadata).toEqual({ api_key: SECRET });
  expect((await client.store.getItem(['secrets', 'client'], 'item'))!.value).toEqual({ api_key: SECRET, nested: { password: SECRET }, team: 'blue' });
  expect((await client.store.getItem(['secrets', 'graph'], 'run-1'))!.value).toEqual({ api_key: SECRET, run: 1 });
}
