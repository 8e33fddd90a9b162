// npm run bench:thread-stream — many WebSocket subscribers of one thread's protocol stream while runs
// follow each other on it: `serve` on its embedded PostgreSQL, bench/graphs/chatty.ts (each run a few
// hundred events). Every subscriber's events are checked against the thread's whole stream as an SSE
// reader replays it from the store afterwards (since 0): events lost, duplicated or out of order. The
// server's memory is sampled throughout (RSS, and the V8 heap, external and array-buffer memory from
// inside it, bench/memory-probe.mjs); a subscriber that stops reading is expected to be dropped.
// Prints figures; asserts nothing.
//
//   BENCH_SUBSCRIBERS=200   WebSocket subscribers
//   BENCH_SECONDS=60        how long runs are started
//   BENCH_STEPS=20 BENCH_BURST=10   each run's supersteps and custom events per step
//   BENCH_PAD_BYTES=0       padding in each custom event: more bytes than the sockets' kernel buffers
//                           hold make the readers that pause (below) fall behind for real
//   BENCH_PAUSE_SECONDS=10  one more subscriber stops reading this long a third of the way in, then
//                           reads on: it should get every event once, late
//   BENCH_SERVER_HEAP_MB=…  caps the server's V8 heap (--max-old-space-size): memory the server holds
//                           fails the run; garbage it has not collected yet is collected sooner
//   BENCH_MEMORY_GC_SECONDS=10  how often the server samples its memory after a full GC (bench/memory-probe.mjs)
//   BENCH_HEAP_SNAPSHOTS=<dir>  the server writes a heap snapshot there after the warm-up run, halfway
//                           and once the subscribers caught up (before they close), to compare
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { protocolSseEvents } from '../test/support/protocol-socket.js';
import { freePort, startServe } from './processes.js';

const subscribers = Number(process.env.BENCH_SUBSCRIBERS ?? 200);
const seconds = Number(process.env.BENCH_SECONDS ?? 60);
const steps = Number(process.env.BENCH_STEPS ?? 20);
const burst = Number(process.env.BENCH_BURST ?? 10);
const pad = Number(process.env.BENCH_PAD_BYTES ?? 0);
const pauseSeconds = Number(process.env.BENCH_PAUSE_SECONDS ?? 10);
const gcSeconds = Number(process.env.BENCH_MEMORY_GC_SECONDS ?? 10);
const CHANNELS = ['values', 'updates', 'custom', 'lifecycle', 'tasks', 'checkpoints'];

type Event = { type: string; event_id: string; seq: number; method: string; params: { namespace: string[]; data: { event?: string } } };

const here = new URL('.', import.meta.url).pathname;
const MiB = 1 << 20;
const mib = (value: number) => `${value.toFixed(0)} MiB`;

type MemorySample = { t: number; pid: number; gc: boolean; rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };

/** The server's memory samples so far (one a second, written by bench/memory-probe.mjs inside it). */
function memorySamples(file: string, pid: number): MemorySample[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as MemorySample)
    .filter((sample) => sample.pid === pid);
}

const describe = (sample: MemorySample | undefined) =>
  sample ? `RSS ${mib(sample.rss / MiB)}, heap used ${mib(sample.heapUsed / MiB)} (of ${mib(sample.heapTotal / MiB)}), external ${mib(sample.external / MiB)}, array buffers ${mib(sample.arrayBuffers / MiB)}` : 'no sample';

async function command(url: string, threadId: string, id: number, method: string, params: unknown) {
  const response = await fetch(`${url}/threads/${threadId}/commands`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, method, params }) });
  const body = (await response.json()) as { type: string; result?: { run_id?: string }; message?: string };
  if (body.type !== 'success') throw new Error(`${method}: ${body.message}`);
  return body.result!;
}

/** A subscriber: one socket, one subscription to every channel; counts what arrives. */
async function subscriber(url: string, threadId: string) {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/threads/${threadId}/stream/events`);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const ids: string[] = [];
  let lastSeq = 0;
  let outOfOrder = 0;
  let closedWith: number | undefined;
  ws.on('close', (code) => (closedWith = code));
  const subscribed = new Promise<void>((resolve) => {
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as Event & { id?: number };
      if (message.type === 'success' && message.id === 1) return resolve();
      if (message.type !== 'event') return;
      if (message.seq <= lastSeq) outOfOrder++;
      lastSeq = message.seq;
      ids.push(message.event_id);
    });
  });
  ws.send(JSON.stringify({ id: 1, method: 'subscription.subscribe', params: { channels: CHANNELS } }));
  await subscribed;
  return { ws, ids, outOfOrder: () => outOfOrder, closedWith: () => closedWith };
}

/** The thread's whole stream as the store holds it, through SSE from since 0, up to `lastRunId`'s end. */
async function truth(url: string, threadId: string, lastRunId: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const { event } of protocolSseEvents<Event>(url, threadId, { channels: CHANNELS, since: 0 })) {
    ids.push(event.event_id);
    const terminal = event.method === 'lifecycle' && !event.params.namespace.length && event.params.data.event !== 'running';
    if (terminal && event.event_id.startsWith(lastRunId)) break;
  }
  return ids;
}

async function main() {
  const port = await freePort();
  const heap = process.env.BENCH_SERVER_HEAP_MB;
  const probeDir = mkdtempSync(join(tmpdir(), 'bench-memory-'));
  const memoryFile = join(probeDir, 'memory.jsonl');
  const snapshots = process.env.BENCH_HEAP_SNAPSHOTS;
  const nodeOptions = [
    process.env.NODE_OPTIONS,
    `--import=${join(here, 'memory-probe.mjs')}`,
    heap ? `--max-old-space-size=${heap}` : undefined,
    snapshots ? `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshots}` : undefined,
  ].filter(Boolean).join(' ');
  const server = await startServe(join(here, 'graphs/thread-stream.langgraph.json'), port, { env: { NODE_OPTIONS: nodeOptions, BENCH_MEMORY_FILE: memoryFile, BENCH_MEMORY_GC_SECONDS: String(gcSeconds) } });
  const url = `http://127.0.0.1:${port}`;
  const pid = server.child.pid!;
  const memory = () => memorySamples(memoryFile, pid);
  // A snapshot is written synchronously by the server; the next sample after it says it is done.
  const snapshot = async () => {
    if (!snapshots) return;
    const asked = Date.now();
    process.kill(pid, 'SIGUSR2');
    while (!memory().some((sample) => sample.t > asked + 1000)) await new Promise((resolve) => setTimeout(resolve, 500));
  };
  try {
    const thread = (await (await fetch(`${url}/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as { thread_id: string };
    const threadId = thread.thread_id;
    // Warm up: one run before measuring memory.
    const warm = await command(url, threadId, 1, 'run.start', { assistant_id: 'chatty', input: { steps: 2, burst: 1 } });
    await fetch(`${url}/threads/${threadId}/runs/${warm.run_id}/join`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // What the server holds before subscribers: the next sample after a full collection.
    while (gcSeconds > 0 && !memory().some((sample) => sample.gc)) await new Promise((resolve) => setTimeout(resolve, 500));
    const before = memory().findLast((sample) => sample.gc || gcSeconds <= 0);
    await snapshot();

    const started = Date.now();
    const subs = await Promise.all(Array.from({ length: subscribers }, () => subscriber(url, threadId)));
    // One more subscriber that stops reading: the server should drop it rather than buffer for it.
    const stalled = await subscriber(url, threadId);
    (stalled.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const paused = await subscriber(url, threadId);
    const pausedSocket = (paused.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    const pauseAt = setTimeout(() => {
      pausedSocket.pause();
      setTimeout(() => pausedSocket.resume(), pauseSeconds * 1000);
    }, (seconds * 1000) / 3);
    console.log(`${subscribers} subscribers (one more that stops reading, one that pauses ${pauseSeconds} s) connected in ${Date.now() - started} ms`);

    const streamingFrom = Date.now();
    let runs = 0;
    let lastRunId = warm.run_id!;
    const deadline = Date.now() + seconds * 1000;
    const runTimes: number[] = [];
    let halfway = false;
    while (Date.now() < deadline) {
      if (!halfway && Date.now() > deadline - (seconds * 1000) / 2) {
        halfway = true;
        await snapshot();
      }
      const t0 = Date.now();
      const run = await command(url, threadId, runs + 2, 'run.start', { assistant_id: 'chatty', input: { steps, burst, pad, done: 0 } });
      lastRunId = run.run_id!;
      await fetch(`${url}/threads/${threadId}/runs/${lastRunId}/join`);
      runTimes.push(Date.now() - t0);
      runs++;
    }
    const expected = await truth(url, threadId, lastRunId);
    // Events after the subscribers joined: the warm-up run's came before (they replay its last state at most).
    const expectedSet = new Set(expected);
    const lastId = expected[expected.length - 1]!;
    // Subscribers behind the runs (one client process reads them all) catch up: how long they take is printed.
    const drainStarted = Date.now();
    const drainDeadline = drainStarted + 180_000;
    // The subscriber that paused is waited for too (its events come late); one the server closed is not.
    while (Date.now() < drainDeadline && ![...subs, paused].every((sub) => sub.ids.at(-1) === lastId || sub.closedWith() !== undefined)) await new Promise((resolve) => setTimeout(resolve, 250));
    const drainMs = Date.now() - drainStarted;
    const streamingTo = Date.now();
    await snapshot();

    let lost = 0;
    let duplicated = 0;
    let foreign = 0;
    let outOfOrder = 0;
    let complete = 0;
    const measured = expected.filter((id) => !id.startsWith(warm.run_id!));
    for (const sub of subs) {
      const seen = new Set(sub.ids);
      duplicated += sub.ids.length - seen.size;
      foreign += sub.ids.filter((id) => !expectedSet.has(id)).length;
      const missing = measured.filter((id) => !seen.has(id)).length;
      lost += missing;
      if (!missing) complete++;
      outOfOrder += sub.outOfOrder();
    }
    const delivered = subs.reduce((sum, sub) => sum + sub.ids.length, 0);
    const sorted = [...runTimes].sort((a, b) => a - b);
    console.log(`runs: ${runs} in ${seconds} s (${measured.length} protocol events; run start -> end p50 ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted.at(-1)} ms)`);
    console.log(`delivered: ${delivered} events to ${subscribers} subscribers (${(delivered / seconds).toFixed(0)}/s); complete subscribers ${complete}/${subscribers}, the last ${(drainMs / 1000).toFixed(1)} s after the last run ended`);
    const closed = subs.filter((sub) => sub.closedWith() !== undefined).map((sub) => sub.closedWith());
    console.log(`subscribers the server closed: ${closed.length}${closed.length ? ` (codes ${[...new Set(closed)].join(', ')})` : ''}`);
    console.log(`lost: ${lost}  duplicated: ${duplicated}  out of order: ${outOfOrder}  not in the stored stream: ${foreign}`);
    const samples = memory().filter((sample) => sample.t >= streamingFrom && sample.t <= streamingTo);
    const windows = Array.from({ length: Math.ceil(samples.length / 10) }, (_, i) => samples.slice(i * 10, i * 10 + 10));
    const maxOf = (key: keyof MemorySample) => windows.map((window) => (Math.max(...window.map((sample) => Number(sample[key]))) / MiB).toFixed(0)).join(', ');
    // Held: samples taken just after a full collection (every 10th), so garbage not collected yet is not
    // counted; without forced collections, every 10th sample as it was.
    const held = gcSeconds > 0 ? samples.filter((sample) => sample.gc) : samples.filter((_, i) => i % 10 === 0);
    console.log(`server memory ${gcSeconds > 0 ? 'held (after a full GC)' : '(no forced GC: garbage included)'} before subscribers: ${describe(before)}`);
    console.log(`  while streaming, first: ${describe(held[0])}`);
    console.log(`  mid: ${describe(held[Math.floor(held.length / 2)])}`);
    console.log(`  last: ${describe(held.at(-1))}`);
    console.log(`  every 10th sample, RSS: ${held.map((sample) => (sample.rss / MiB).toFixed(0)).join(', ')} MiB`);
    console.log(`  every 10th sample, heap used: ${held.map((sample) => (sample.heapUsed / MiB).toFixed(0)).join(', ')} MiB`);
    console.log(`  every 10th sample, external: ${held.map((sample) => (sample.external / MiB).toFixed(0)).join(', ')} MiB`);
    console.log(`server memory, max per 10 s (garbage included), RSS: ${maxOf('rss')} MiB`);
    console.log(`  max per 10 s, heap used: ${maxOf('heapUsed')} MiB`);
    console.log(`  max per 10 s, external: ${maxOf('external')} MiB`);
    // Reading again, it learns how the server treated it.
    (stalled.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    console.log(`the subscriber that stopped reading: ${stalled.closedWith() !== undefined ? `dropped (close ${stalled.closedWith()})` : 'still connected'}, ${stalled.ids.length} events received`);
    clearTimeout(pauseAt);
    const pausedSeen = new Set(paused.ids);
    console.log(
      `the subscriber that paused ${pauseSeconds} s: ${paused.closedWith() !== undefined ? `closed (${paused.closedWith()})` : 'connected'}, ${paused.ids.length} events, ` +
        `lost ${measured.filter((id) => !pausedSeen.has(id)).length}, duplicated ${paused.ids.length - pausedSeen.size}, out of order ${paused.outOfOrder()}`,
    );
    for (const sub of [...subs, stalled, paused]) sub.ws.terminate();
  } finally {
    await server.stop();
    rmSync(probeDir, { recursive: true, force: true });
  }
}

await main();
