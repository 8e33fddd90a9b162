// A runtime killed mid-run (kill -9) leaves no run `running`: the next runtime for the deployment sees
// that the dead process's liveness lock is gone, ends the run as `error`, and the thread moves on.
import { afterAll, describe, expect, it } from 'vitest';
import { removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let second: ServeProcess | undefined;
afterAll(async () => {
  await second?.stop();
  removeDir(second?.dir ?? '');
});

describe('a runtime killed mid-run', () => {
  it('ends its run as error after recovery, and later runs on the thread still execute', async () => {
    let first: ServeProcess | undefined = await startServe();
    const thread = await first.client.threads.create();
    const run = await first.client.runs.create(thread.thread_id, 'slow', { input: { label: 'doomed', delay_ms: 10_000 }, streamMode: ['custom'] });
    const queued = await first.client.runs.create(thread.thread_id, 'slow', { input: { label: 'next', delay_ms: 1 } });
    for await (const part of first.client.runs.joinStream(thread.thread_id, run.run_id)) if (part.event === 'custom') break;
    expect((await first.client.runs.get(thread.thread_id, run.run_id)).status).toBe('running');

    first.child.kill('SIGKILL');
    await new Promise((resolve) => first!.child.once('exit', resolve));
    const restarted = Date.now();

    const dir = first.dir;
    second = await first.restart();
    first = undefined;
    second.dir = dir;
    console.log(`recovered within ${Date.now() - restarted} ms of the kill`);
    const killed = await second.client.runs.get(thread.thread_id, run.run_id);
    expect(killed.status).toBe('error');
    const result = (await second.client.runs.join(thread.thread_id, queued.run_id)) as { log: string[] };
    expect(result.log).toEqual(['next:first', 'next:second', 'next:third']);
    expect((await second.client.runs.get(thread.thread_id, queued.run_id)).status).toBe('success');
    const running = await second.client.runs.list(thread.thread_id, { status: 'running' });
    expect(running).toEqual([]);
    // Two server start-ups happen inside this test.
  }, 120_000);
});
