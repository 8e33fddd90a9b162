// What happens when runs meet on one thread (the four multitask strategies) and when runs are
// cancelled, through the official SDK against a real `serve` process.
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

type SlowState = { label: string; log: string[] };

/** Resolves once the run has started executing `step` (its custom event for that step arrived; the first step by default). */
async function started(threadId: string, runId: string, step?: string) {
  for await (const part of server.client.runs.joinStream(threadId, runId, { streamMode: 'custom' })) {
    if (part.event === 'custom' && (step === undefined || (part.data as { step?: string }).step === step)) return;
  }
}

describe('multitask strategies', () => {
  it('enqueue (the default) runs later runs after earlier ones, in arrival order', async () => {
    const thread = await server.client.threads.create();
    const runs = [];
    for (const label of ['a', 'b', 'c']) runs.push(await server.client.runs.create(thread.thread_id, 'slow', { input: { label, delay_ms: 20 } }));
    expect(runs.every((run) => run.multitask_strategy === 'enqueue')).toBe(true);
    expect((await server.client.threads.get(thread.thread_id)).status).toBe('busy');
    const last = (await server.client.runs.join(thread.thread_id, runs[2]!.run_id)) as SlowState;
    expect(last.log).toEqual(['a:first', 'a:second', 'a:third', 'b:first', 'b:second', 'b:third', 'c:first', 'c:second', 'c:third']);
    const statuses = await Promise.all(runs.map((run) => server.client.runs.get(thread.thread_id, run.run_id).then((r) => r.status)));
    expect(statuses).toEqual(['success', 'success', 'success']);
    expect((await server.client.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it('reject accepts one of the runs sent at once to an idle thread, and refuses the others (409)', async () => {
    const thread = await server.client.threads.create();
    const sent = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => server.client.runs.create(thread.thread_id, 'slow', { input: { label: `r${i}`, delay_ms: 1000 }, multitaskStrategy: 'reject' })),
    );
    expect(sent.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    for (const result of sent) if (result.status === 'rejected') expect(String(result.reason)).toMatch(/HTTP 409: Thread is already running a task/);
    expect(await server.client.runs.list(thread.thread_id)).toHaveLength(1);
  });

  it('reject refuses a run while another is active (409)', async () => {
    const thread = await server.client.threads.create();
    const first = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'a', delay_ms: 200 } });
    await expect(
      server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'b' }, multitaskStrategy: 'reject' }),
    ).rejects.toThrow(/HTTP 409: Thread is already running a task/);
    await server.client.runs.join(thread.thread_id, first.run_id);
    const accepted = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'c', delay_ms: 1 }, multitaskStrategy: 'reject' });
    await server.client.runs.join(thread.thread_id, accepted.run_id);
  });

  it('interrupt stops the active run (interrupted, its progress kept) and runs the new one', async () => {
    const thread = await server.client.threads.create();
    const first = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'a', delay_ms: 300 }, streamMode: ['custom'] });
    await started(thread.thread_id, first.run_id);
    const second = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'b', delay_ms: 1 }, multitaskStrategy: 'interrupt' });
    const result = (await server.client.runs.join(thread.thread_id, second.run_id)) as SlowState;
    expect(await server.client.runs.get(thread.thread_id, first.run_id)).toMatchObject({ status: 'interrupted', cancel_reason: `multitask:interrupt:${second.run_id}` });
    expect(await server.client.runs.get(thread.thread_id, second.run_id)).toMatchObject({ status: 'success', cancel_reason: null });
    expect(result.log.filter((entry) => entry.startsWith('b:'))).toEqual(['b:first', 'b:second', 'b:third']);
  });

  it('rollback deletes the active run and what it wrote, then runs the new one', async () => {
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'slow', { input: { label: 'base', delay_ms: 1 } });
    const first = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'a', delay_ms: 150 }, streamMode: ['custom'] });
    // Once the second node starts, the first one has finished and checkpointed: there is something to roll back.
    await started(thread.thread_id, first.run_id, 'second');
    const second = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'b', delay_ms: 1 }, multitaskStrategy: 'rollback' });
    const result = (await server.client.runs.join(thread.thread_id, second.run_id)) as SlowState;
    await expect(server.client.runs.get(thread.thread_id, first.run_id)).rejects.toThrow('HTTP 404: Run not found');
    expect(result.log).toEqual(['base:first', 'base:second', 'base:third', 'b:first', 'b:second', 'b:third']);
  });
});

describe('cancellation', () => {
  it('cancels a running run (interrupt) and, with wait, returns once it stopped', async () => {
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'x', delay_ms: 2000 }, streamMode: ['custom'] });
    await started(thread.thread_id, run.run_id);
    const began = Date.now();
    await server.client.runs.cancel(thread.thread_id, run.run_id, true);
    expect(Date.now() - began).toBeLessThan(1500);
    expect(await server.client.runs.get(thread.thread_id, run.run_id)).toMatchObject({ status: 'interrupted', cancel_reason: 'user' });
    expect((await server.client.threads.get(thread.thread_id)).status).not.toBe('busy');
  });

  it('cancels with rollback: the run disappears', async () => {
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'x', delay_ms: 2000 }, streamMode: ['custom'] });
    await started(thread.thread_id, run.run_id);
    await server.client.runs.cancel(thread.thread_id, run.run_id, true, 'rollback');
    await expect(server.client.runs.get(thread.thread_id, run.run_id)).rejects.toThrow(/HTTP 404/);
  });

  it('cancels pending runs in bulk (POST /runs/cancel), ends their streams, and the thread goes on', async () => {
    const thread = await server.client.threads.create();
    const blocker = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'a', delay_ms: 300 } });
    const queued = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'b', delay_ms: 1 } });
    const response = await fetch(`${server.url}/runs/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_ids: [queued.run_id] }),
    });
    expect(response.status).toBe(204);
    expect(await server.client.runs.get(thread.thread_id, queued.run_id)).toMatchObject({ status: 'interrupted', cancel_reason: 'user' });
    const stream = (await collect(server.client.runs.joinStream(thread.thread_id, queued.run_id))) as { event: string }[];
    expect(stream).toEqual([]);
    const final = (await server.client.runs.join(thread.thread_id, blocker.run_id)) as SlowState;
    expect(final.log.some((entry) => entry.startsWith('b:'))).toBe(false);
    const after = await server.client.runs.wait(thread.thread_id, 'slow', { input: { label: 'c', delay_ms: 1 } });
    expect((after as SlowState).log.at(-1)).toBe('c:third');
  });

  it('cancels a streamed run when the client disconnects with on_disconnect=cancel', async () => {
    const thread = await server.client.threads.create();
    const controller = new AbortController();
    let runId = '';
    for await (const part of server.client.runs.stream(thread.thread_id, 'slow', {
      input: { label: 'd', delay_ms: 2000 },
      streamMode: 'custom',
      onDisconnect: 'cancel',
      signal: controller.signal,
      onRunCreated: (meta) => (runId = meta.run_id),
    })) {
      if (part.event === 'custom') controller.abort();
    }
    await expect.poll(async () => (await server.client.runs.get(thread.thread_id, runId)).status, { timeout: 5000 }).toBe('interrupted');
    expect(await server.client.runs.get(thread.thread_id, runId)).toMatchObject({ cancel_reason: 'disconnect' });
  });

  it("records reason=taken (input absorbed by the running run, as the SDK's steering sends it) as taken:<that run>", async () => {
    const thread = await server.client.threads.create();
    const running = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'a', delay_ms: 300 }, streamMode: ['custom'] });
    await started(thread.thread_id, running.run_id);
    const queued = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'b', delay_ms: 1 } });
    const cancel = (query: string) => fetch(`${server.url}/threads/${thread.thread_id}/runs/${queued.run_id}/cancel?${query}`, { method: 'POST' });
    // Only an interrupt can say the input was taken: a rollback deletes the run.
    const refused = await cancel('reason=taken&action=rollback');
    expect(refused.status).toBe(422);
    expect((await cancel('reason=lost')).status).toBe(422);
    expect((await cancel('reason=taken')).status).toBe(202);
    expect(await server.client.runs.get(thread.thread_id, queued.run_id)).toMatchObject({ status: 'interrupted', cancel_reason: `taken:${running.run_id}` });
    // The run that took it goes on to its end, not cancelled.
    await server.client.runs.join(thread.thread_id, running.run_id);
    expect(await server.client.runs.get(thread.thread_id, running.run_id)).toMatchObject({ status: 'success', cancel_reason: null });
  });
});
