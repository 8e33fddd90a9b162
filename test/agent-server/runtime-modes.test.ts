// Where serve executes graphs: in its runtime worker thread (the default, which every other agent-server
// test uses) or, with AGENT_PLATFORM_RUNTIME_THREAD=false, on the HTTP server's own thread. Both must
// behave the same to a client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type ServeProcess, startServe } from './serve.js';

let inThread: ServeProcess;
let byDefault: ServeProcess;
beforeAll(async () => {
  [inThread, byDefault] = await Promise.all([startServe({ env: { AGENT_PLATFORM_RUNTIME_THREAD: 'false' } }), startServe()]);
}, 60_000);
afterAll(async () => {
  for (const server of [inThread, byDefault]) {
    await server?.stop();
    removeDir(server?.dir);
  }
});

describe('where serve runs graphs', () => {
  it('says so at start: a worker thread by default, the server thread when asked', () => {
    expect(byDefault.output()).toContain('Graphs run in a worker thread');
    expect(inThread.output()).toContain("Graphs run in the HTTP server's thread");
  });

  it('answers stateless waits and streams thread runs on the server thread too', async () => {
    expect(await inThread.client.runs.wait(null, 'nested', { input: {} })).toEqual({ trail: ['parent', 'child', 'grandchild'] });
    const thread = await inThread.client.threads.create();
    const events: string[] = [];
    for await (const part of inThread.client.runs.stream(thread.thread_id, 'nested', { input: {}, streamMode: 'updates' })) events.push(part.event);
    expect(events[0]).toBe('metadata');
    expect(events).toContain('updates');
    expect((await inThread.client.threads.get(thread.thread_id)).status).toBe('idle');
  });
});
