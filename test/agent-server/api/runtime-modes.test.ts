// Where serve executes graphs: in its runtime worker thread (the default, which every other agent-server
// test uses) or, with AGENT_PLATFORM_RUNTIME_THREAD=false, on the HTTP server's own thread. A graph
// that reports its process and thread tells where runs really executed; both must behave the same to a client.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atDeployed, removeDir, type ServeProcess, startServe } from '../../support/serve.js';

const FIXTURES = new URL('../../fixtures/graphs/', import.meta.url).pathname;

/** A config serving the whereabouts graph and the nested one, in a folder of its own. */
function whereaboutsConfig() {
  const dir = mkdtempSync(join(tmpdir(), 'runtime-modes-'));
  const configPath = join(dir, 'langgraph.json');
  writeFileSync(configPath, JSON.stringify({ graphs: { where: join(FIXTURES, 'whereabouts.ts:graph'), nested: join(FIXTURES, 'nested.ts:graph') } }));
  return { dir, configPath };
}

let inThread: ServeProcess;
let byDefault: ServeProcess;
beforeAll(async () => {
  [inThread, byDefault] = await Promise.all([
    startServe({ ...whereaboutsConfig(), env: { AGENT_PLATFORM_RUNTIME_THREAD: 'false' } }),
    // Only the tests of serve's default use it.
    atDeployed ? (undefined as unknown as ServeProcess) : startServe(whereaboutsConfig()),
  ]);
}, 120_000);
afterAll(async () => {
  for (const server of [inThread, byDefault]) {
    await server?.stop();
    removeDir(server?.dir);
  }
});

type Whereabouts = { pid: number; main_thread: boolean };

describe('where serve runs graphs', () => {
  // Serve's settings; a deployed revision's graphs always run on its agent server's thread, in its sandbox's own PID namespace.
  it.skipIf(atDeployed)('runs them in a worker thread of the server process by default', async () => {
    const where = (await byDefault.client.runs.wait(null, 'where', { input: {} })) as Whereabouts;
    expect(where).toEqual({ pid: byDefault.child.pid, main_thread: false });
    expect(byDefault.output()).toContain('Graphs run in a worker thread');
  });

  it.skipIf(atDeployed)('runs them on the server’s own thread when asked', async () => {
    const thread = await inThread.client.threads.create();
    const where = (await inThread.client.runs.wait(thread.thread_id, 'where', { input: {} })) as Whereabouts;
    expect(where).toEqual({ pid: inThread.child.pid, main_thread: true });
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
