// Threads through the official SDK against a real `serve` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe();
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

describe('threads', () => {
  it('creates (with a chosen id and if_exists), gets, patches metadata and deletes', async () => {
    const id = crypto.randomUUID();
    const thread = await server.client.threads.create({ threadId: id, metadata: { owner: 'ann' } });
    expect(thread).toMatchObject({ thread_id: id, status: 'idle', metadata: { owner: 'ann' } });
    await expect(server.client.threads.create({ threadId: id })).rejects.toThrow(/HTTP 409/);
    expect((await server.client.threads.create({ threadId: id, ifExists: 'do_nothing' })).thread_id).toBe(id);
    const patched = await server.client.threads.update(id, { metadata: { topic: 'x' } });
    expect(patched.metadata).toEqual({ owner: 'ann', topic: 'x' });
    await server.client.threads.delete(id);
    await expect(server.client.threads.get(id)).rejects.toThrow(`HTTP 404: Thread with ID ${id} not found`);
  });

  it('searches by metadata, status, values and ids; counts', async () => {
    const tag = crypto.randomUUID();
    const a = await server.client.threads.create({ metadata: { tag } });
    const b = await server.client.threads.create({ metadata: { tag } });
    await server.client.runs.wait(b.thread_id, 'interrupt', { input: { topic: 'dogs' } });
    expect((await server.client.threads.search({ metadata: { tag } })).map((t) => t.thread_id).sort()).toEqual([a.thread_id, b.thread_id].sort());
    expect((await server.client.threads.search({ metadata: { tag }, status: 'interrupted' })).map((t) => t.thread_id)).toEqual([b.thread_id]);
    expect((await server.client.threads.search({ values: { topic: 'dogs' } })).map((t) => t.thread_id)).toEqual([b.thread_id]);
    expect((await server.client.threads.search({ ids: [a.thread_id] })).map((t) => t.thread_id)).toEqual([a.thread_id]);
    expect(await server.client.threads.count({ metadata: { tag } })).toBe(2);
    expect(await server.client.threads.count({ metadata: { tag }, status: 'idle' })).toBe(1);
  });

  it('says what a thread occupies in storage: checkpoints, channel values by channel, pending writes', async () => {
    type Size = { rows: number; bytes: number };
    type Storage = { thread_id: string; total_bytes: number; checkpoints: Size; channel_values: Size & { channels: Record<string, Size> }; pending_writes: Size };
    const storage = async (threadId: string) => {
      const response = await fetch(`${server.url}/threads/${threadId}/storage`);
      return { status: response.status, body: (response.ok ? await response.json() : await response.text()) as Storage };
    };
    const thread = await server.client.threads.create();
    expect((await storage(thread.thread_id)).body).toEqual({
      thread_id: thread.thread_id,
      total_bytes: 0,
      checkpoints: { rows: 0, bytes: 0 },
      channel_values: { rows: 0, bytes: 0, channels: {} },
      pending_writes: { rows: 0, bytes: 0 },
    });
    // Stopped at its interrupt: the interrupt is a pending write of the task that raised it.
    const topic = 'x'.repeat(20_000);
    await server.client.runs.wait(thread.thread_id, 'interrupt', { input: { topic } });
    const { status, body } = await storage(thread.thread_id);
    expect(status).toBe(200);
    expect(body.checkpoints.rows).toBe((await server.client.threads.getHistory(thread.thread_id, { limit: 100 })).length);
    expect(body.channel_values.channels.topic!.rows).toBeGreaterThanOrEqual(1);
    // Stored as PostgreSQL keeps it: a repetitive value compresses.
    expect(body.channel_values.channels.topic!.bytes).toBeGreaterThan(0);
    expect(body.channel_values.channels.topic!.bytes).toBeLessThan(topic.length);
    expect(body.pending_writes.rows).toBeGreaterThanOrEqual(1);
    const channels = Object.values(body.channel_values.channels);
    expect(body.channel_values.bytes).toBe(channels.reduce((sum, size) => sum + size.bytes, 0));
    expect(body.total_bytes).toBe(body.checkpoints.bytes + body.channel_values.bytes + body.pending_writes.bytes);
    expect((await storage(crypto.randomUUID())).status).toBe(404);
  });

  it('reads state, updates it as a node, and walks history and checkpoints', async () => {
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'interrupt', { input: { topic: 'tea' } });
    const state = await server.client.threads.getState(thread.thread_id);
    expect(state.values).toEqual({ topic: 'tea' });
    expect(state.next).toEqual(['ask']);
    expect(state.tasks[0]!.interrupts[0]!.value).toEqual({ question: 'What about tea?' });

    const update = await server.client.threads.updateState(thread.thread_id, { values: { topic: 'coffee' } });
    expect(update.configurable).toMatchObject({ thread_id: thread.thread_id, checkpoint_id: expect.any(String) });
    expect((await server.client.threads.getState(thread.thread_id)).values).toMatchObject({ topic: 'coffee' });

    const history = await server.client.threads.getHistory(thread.thread_id, { limit: 10 });
    expect(history.length).toBeGreaterThanOrEqual(3);
    expect(history[0]!.values).toMatchObject({ topic: 'coffee' });
    const earlier = history[1]!;
    const atCheckpoint = await server.client.threads.getState(thread.thread_id, earlier.checkpoint);
    expect(atCheckpoint.checkpoint.checkpoint_id).toBe(earlier.checkpoint.checkpoint_id);
    expect(atCheckpoint.values).toEqual(earlier.values);
    const byId = await server.client.threads.getState(thread.thread_id, earlier.checkpoint.checkpoint_id!);
    expect(byId.values).toEqual(earlier.values);
    const before = await server.client.threads.getHistory(thread.thread_id, { before: { configurable: history[0]!.checkpoint } });
    expect(before[0]!.checkpoint.checkpoint_id).toBe(earlier.checkpoint.checkpoint_id);
  });

  it('refuses a state update while a run is pending or running (409)', async () => {
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'slow', { input: { label: 'a', delay_ms: 1 } });
    const run = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'b', delay_ms: 400 } });
    await expect(server.client.threads.updateState(thread.thread_id, { values: { label: 'z' } })).rejects.toThrow(/HTTP 409/);
    await server.client.runs.join(thread.thread_id, run.run_id);
    await server.client.threads.updateState(thread.thread_id, { values: { label: 'z' }, asNode: 'third' });
    expect((await server.client.threads.getState(thread.thread_id)).values).toMatchObject({ label: 'z' });
  });

  it('copies a thread with its history', async () => {
    const thread = await server.client.threads.create({ metadata: { kind: 'original' } });
    await server.client.runs.wait(thread.thread_id, 'nested', { input: {} });
    const copy = await server.client.threads.copy(thread.thread_id);
    expect(copy.thread_id).not.toBe(thread.thread_id);
    expect(copy.metadata).toMatchObject({ kind: 'original' });
    const state = await server.client.threads.getState(copy.thread_id);
    expect(state.values).toEqual({ trail: ['parent', 'child', 'grandchild'] });
    expect((await server.client.threads.getHistory(copy.thread_id)).length).toBe((await server.client.threads.getHistory(thread.thread_id)).length);
  });

  it('seeds a new thread from supersteps', async () => {
    const thread = await server.client.threads.create({
      graphId: 'interrupt',
      supersteps: [{ updates: [{ values: { topic: 'seeded' }, asNode: 'ask' }] }, { updates: [{ values: { answer: 'pre' }, asNode: 'ask' }] }],
    });
    const state = await server.client.threads.getState(thread.thread_id);
    expect(state.values).toMatchObject({ topic: 'seeded', answer: 'pre' });
  });

  it('joins the thread stream: events of the current and the next runs', async () => {
    const thread = await server.client.threads.create();
    const first = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'one', delay_ms: 100 }, streamMode: ['updates'] });
    const second = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'two', delay_ms: 1 }, streamMode: ['updates'] });
    const controller = new AbortController();
    const seen: { event: string; data: unknown }[] = [];
    const reading = (async () => {
      for await (const part of server.client.threads.joinStream(thread.thread_id, { signal: controller.signal })) {
        seen.push(part as never);
        if (seen.filter((p) => p.event === 'updates').length === 6) controller.abort();
      }
    })().catch(() => undefined);
    await server.client.runs.join(thread.thread_id, second.run_id);
    await reading;
    const runIds = seen.filter((p) => p.event === 'metadata').map((p) => (p.data as { run_id: string }).run_id);
    expect(runIds).toEqual([first.run_id, second.run_id]);
    expect(seen.filter((p) => p.event === 'updates')).toHaveLength(6);
    void collect;
  });
});
