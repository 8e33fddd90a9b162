// Where serve executes graphs: in its runtime worker thread (the default, which every other agent-server
// test uses) or, with AGENT_PLATFORM_RUNTIME_THREAD=false, on the HTTP server's own thread. Both must
// behave the same to a client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, type ServeProcess, startServe } from './serve.js';

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe({ env: { AGENT_PLATFORM_RUNTIME_THREAD: 'false' } });
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

describe('serve with the runtime on the server thread', () => {
  it('answers stateless waits and streams thread runs', async () => {
    expect(await server.client.runs.wait(null, 'nested', { input: {} })).toEqual({ trail: ['parent', 'child', 'grandchild'] });
    const thread = await server.client.threads.create();
    const events: string[] = [];
    for await (const part of server.client.runs.stream(thread.thread_id, 'nested', { input: {}, streamMode: 'updates' })) events.push(part.event);
    expect(events[0]).toBe('metadata');
    expect(events).toContain('updates');
    expect((await server.client.threads.get(thread.thread_id)).status).toBe('idle');
  });
});
