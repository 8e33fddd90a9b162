// Assistants through the official SDK against a real `serve` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v5 } from 'uuid';
import { removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe();
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

const GRAPHS = ['agent', 'interrupt', 'approval', 'nested', 'failing', 'slow', 'factory', 'memory'];

describe('assistants', () => {
  it('creates one system assistant per graph with the uuid5 id, addressable by graph name', async () => {
    const system = await server.client.assistants.search({ metadata: { created_by: 'system' }, limit: 50 });
    expect(system.map((a) => a.graph_id).sort()).toEqual([...GRAPHS].sort());
    for (const assistant of system) {
      expect(assistant.assistant_id).toBe(v5(assistant.graph_id, '6ba7b821-9dad-11d1-80b4-00c04fd430c8'));
      expect(assistant.name).toBe(assistant.graph_id);
      expect(assistant.version).toBe(1);
    }
    const byName = await server.client.assistants.get('agent');
    expect(byName.assistant_id).toBe(v5('agent', '6ba7b821-9dad-11d1-80b4-00c04fd430c8'));
  });

  it('creates, reads, versions, switches the active version and deletes', async () => {
    const created = await server.client.assistants.create({
      graphId: 'factory',
      name: 'Shouter',
      description: 'shouts',
      config: { configurable: { style: 'shout' } },
      metadata: { team: 'a' },
    });
    expect(created).toMatchObject({ graph_id: 'factory', name: 'Shouter', description: 'shouts', version: 1, metadata: { team: 'a' } });
    expect(await server.client.assistants.get(created.assistant_id)).toEqual(created);

    const updated = await server.client.assistants.update(created.assistant_id, { config: { configurable: { style: 'plain' } }, name: 'Plain' });
    expect(updated.version).toBe(2);
    expect(updated.config).toEqual({ configurable: { style: 'plain' } });
    expect(updated.metadata).toEqual({ team: 'a' });

    const versions = await server.client.assistants.getVersions(created.assistant_id);
    expect(versions.map((v) => v.version)).toEqual([2, 1]);

    const back = await server.client.assistants.setLatest(created.assistant_id, 1);
    expect(back).toMatchObject({ version: 1, name: 'Shouter', config: { configurable: { style: 'shout' } } });
    await expect(server.client.assistants.setLatest(created.assistant_id, 9)).rejects.toThrow(/HTTP 404/);

    await server.client.assistants.delete(created.assistant_id);
    await expect(server.client.assistants.get(created.assistant_id)).rejects.toThrow('HTTP 404: Assistant not found');
  });

  it('updates an assistant from concurrent requests: each makes a version of its own, merged into the one before', async () => {
    const created = await server.client.assistants.create({ graphId: 'agent', name: 'busy' });
    const updates = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => server.client.assistants.update(created.assistant_id, { name: `busy-${i}`, metadata: { [`k${i}`]: i } })),
    );
    expect(updates.map((update) => (update.status === 'fulfilled' ? 'fulfilled' : String(update.reason)))).toEqual(updates.map(() => 'fulfilled'));
    const versions = await server.client.assistants.getVersions(created.assistant_id, { limit: 50 });
    expect(versions.map((version) => version.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const latest = await server.client.assistants.get(created.assistant_id);
    expect(latest.version).toBe(9);
    expect(latest.metadata).toMatchObject({ k0: 0, k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, k6: 6, k7: 7 });
  });

  it('handles if_exists and refuses unknown graphs', async () => {
    const id = crypto.randomUUID();
    const first = await server.client.assistants.create({ graphId: 'agent', assistantId: id, name: 'one' });
    await expect(server.client.assistants.create({ graphId: 'agent', assistantId: id })).rejects.toThrow(/HTTP 409/);
    const again = await server.client.assistants.create({ graphId: 'agent', assistantId: id, ifExists: 'do_nothing', name: 'two' });
    expect(again).toEqual(first);
    await expect(server.client.assistants.create({ graphId: 'no-such-graph' })).rejects.toThrow(/HTTP 404/);
  });

  it('searches by metadata, graph and name, counts, paginates with X-Pagination-Total, sorts and selects', async () => {
    const tag = crypto.randomUUID();
    for (const name of ['alpha one', 'beta two', 'alpha three']) {
      await server.client.assistants.create({ graphId: 'nested', name, metadata: { tag } });
    }
    const alphas = await server.client.assistants.search({ metadata: { tag }, name: 'alpha', sortBy: 'name', sortOrder: 'asc' });
    expect(alphas.map((a) => a.name)).toEqual(['alpha one', 'alpha three']);
    expect(await server.client.assistants.count({ metadata: { tag } })).toBe(3);
    expect(await server.client.assistants.count({ metadata: { tag }, graphId: 'agent' })).toBe(0);

    const response = await fetch(`${server.url}/assistants/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { tag }, limit: 2, offset: 0, select: ['assistant_id', 'name'] }),
    });
    expect(response.headers.get('x-pagination-total')).toBe('3');
    const page = (await response.json()) as Record<string, unknown>[];
    expect(page).toHaveLength(2);
    expect(Object.keys(page[0]!).sort()).toEqual(['assistant_id', 'name']);
  });

  it('draws the graph (xray includes subgraphs), reports schemas and subgraphs', async () => {
    const graph = (await server.client.assistants.getGraph('agent')) as { nodes: { id: string }[]; edges: unknown[] };
    expect(graph.nodes.map((n) => n.id)).toEqual(expect.arrayContaining(['__start__', 'agent', 'tools', '__end__']));
    const flat = (await server.client.assistants.getGraph('nested')) as { nodes: { id: string }[] };
    const xray = (await server.client.assistants.getGraph('nested', { xray: true })) as { nodes: { id: string }[] };
    expect(xray.nodes.length).toBeGreaterThan(flat.nodes.length);

    const schemas = await server.client.assistants.getSchemas('interrupt');
    expect(schemas.graph_id).toBe('interrupt');
    expect(Object.keys((schemas.state_schema as { properties: object }).properties).sort()).toEqual(['answer', 'done', 'topic']);

    const subgraphs = await server.client.assistants.getSubgraphs('nested', { recurse: true });
    expect(Object.keys(subgraphs).sort()).toEqual(['child', 'child|grandchild']);
    const only = await server.client.assistants.getSubgraphs('nested', { namespace: 'child' });
    expect(Object.keys(only)).toEqual(['child']);
  });

  it('answers 404 in plain text for unknown ids and 422 for bad input', async () => {
    await expect(server.client.assistants.get(crypto.randomUUID())).rejects.toThrow('HTTP 404: Assistant not found');
    await expect(server.client.assistants.get('not-a-graph')).rejects.toThrow('HTTP 404: Assistant not found');
    const bad = await fetch(`${server.url}/assistants`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ graph_id: 5 }) });
    expect(bad.status).toBe(422);
    expect(bad.headers.get('content-type')).toMatch(/text\/plain/);
  });

  it('deletes an assistant with its threads when asked', async () => {
    const assistant = await server.client.assistants.create({ graphId: 'nested' });
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, assistant.assistant_id, { input: {} });
    await server.client.assistants.delete(assistant.assistant_id, { deleteThreads: true });
    await expect(server.client.threads.get(thread.thread_id)).rejects.toThrow(`HTTP 404: Thread with ID ${thread.thread_id} not found`);
  });
});
