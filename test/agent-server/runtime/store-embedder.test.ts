// The graph config's `store` section and the embedding function it names: a function of texts, or a
// LangChain Embeddings object, from the project's files; dimensions checked; a provider whose package
// the project lacks, or a bad section, refused with a message that says what to do.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGraphConfig } from '../../../src/contracts/graph-config.js';
import { loadStoreEmbedder } from '../../../src/agent-server/runtime/store-embedder.js';

const FIXTURES = new URL('../../fixtures/graphs/', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'store-embedder-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(store: unknown) {
  const path = join(dir, `langgraph-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ graphs: { g: `${FIXTURES}recall.ts:graph` }, store }));
  return readGraphConfig(path);
}

describe('store embedder', () => {
  it('loads an embedding function from a project file, relative to the config', async () => {
    writeFileSync(join(dir, 'embed.ts'), `export { embed } from ${JSON.stringify(`${FIXTURES}embed.ts`)};`);
    const embedder = (await loadStoreEmbedder(config({ index: { embed: './embed.ts:embed', dims: 5 } })))!;
    expect(await embedder.documents(['a cat', 'two dogs dog'])).toEqual([
      [1, 0, 0, 0, 0.1],
      [0, 2, 0, 0, 0.1],
    ]);
    expect(await embedder.query('fish')).toEqual([0, 0, 1, 0, 0.1]);
  });

  it('loads a LangChain Embeddings object (FakeEmbeddings) and checks its dimensions', async () => {
    writeFileSync(join(dir, 'fake.ts'), `import { FakeEmbeddings } from '@langchain/core/utils/testing';\nexport const embeddings = new FakeEmbeddings();`);
    const embedder = (await loadStoreEmbedder(config({ index: { embed: './fake.ts:embeddings', dims: 4 } })))!;
    expect(await embedder.query('anything')).toHaveLength(4);
    const wrong = (await loadStoreEmbedder(config({ index: { embed: './fake.ts:embeddings', dims: 8 } })))!;
    await expect(wrong.documents(['x'])).rejects.toThrow(/vector of 4 dimensions; store.index.dims is 8/);
  });

  it('has none without store.index, and refuses providers the project lacks or does not name', async () => {
    expect(await loadStoreEmbedder(config({ ttl: { default_ttl: 5 } }))).toBeUndefined();
    await expect(loadStoreEmbedder(config({ index: { embed: 'openai:text-embedding-3-small', dims: 1536 } }))).rejects.toThrow(/needs @langchain\/openai/);
    await expect(loadStoreEmbedder(config({ index: { embed: 'nobody:model', dims: 3 } }))).rejects.toThrow(/expected "\.\/file\.ts:export" or "<provider>:<model>"/);
    await expect(loadStoreEmbedder(config({ index: { embed: './embed.ts:missing', dims: 5 } }))).rejects.toThrow(/no embedding function or Embeddings object "missing"/);
  });

  it('refuses a bad store section naming the field', () => {
    expect(() => config({ index: { embed: './embed.ts:embed', dims: 0 } })).toThrow(/store\.index\.dims/);
    expect(() => config({ ttl: { default_ttl: -1 } })).toThrow(/store\.ttl\.default_ttl/);
    expect(() => config({ ttl: { refresh_on_read: 'yes' } })).toThrow(/store\.ttl\.refresh_on_read/);
  });
});
