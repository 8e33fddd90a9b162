// npm run bench:stream-idle — many official-SDK stream consumers of runs that each emit an event every
// ~100 ms (bench/graphs/ticker.ts), on `serve` with its embedded PostgreSQL: how long a consumer waits
// for its first event and, after it, between two events, and where that wait went. Prints figures;
// asserts nothing.
//
// Each run is started by one consumer (`runs.stream`) and joined by the others (`runs.joinStream`) as
// soon as its id is known; BENCH_OPEN_RUNS runs are open at once, each new one started as one ends. Per
// consumer the bench keeps when it asked and when each event arrived; afterwards it reads the run rows
// (created → started: the run's wait in the run queue, until a runtime claimed it) and the run_events
// rows (when each event was stored; a ticker event also says when the graph made it). A consumer's
// longest wait is then split into its parts:
//   queue      created → claimed (the first event only: the run's `metadata` is stored by the claim)
//   graph      the graph made the event late (the gap between two ticks beyond their interval: its
//              thread did not run, or the run was not running yet)
//   store      made → stored in run_events (the runtime's event writer, the database)
//   deliver    stored → received by the consumer (the event bus, the api thread, SSE, the client)
// Each server thread's event-loop delay (bench/loop-delay-probe.mjs) and the bench's own are sampled,
// and the load average is printed with every figure: this machine is shared.
//
//   BENCH_RUNS=350               runs in all
//   BENCH_OPEN_RUNS=45           runs open at once (each with BENCH_CONSUMERS consumers: 45 × 9 ≈ 405 streams)
//   BENCH_CONSUMERS=9            consumers per run (one starts it, the others join it)
//   BENCH_TICKS=30 BENCH_TICK_MS=100   each run's events and their interval
//   BENCH_ROUNDS=1               rounds; with BENCH_BEFORE_ROOT, each round measures both, back to back
//   BENCH_BEFORE_ROOT=<checkout> also measure another checkout's serve (e.g. /work/main) in each round
//   BENCH_SERVE_ENV='K=V …'      extra settings for the serve processes (e.g. AGENT_PLATFORM_RUNTIME_CONCURRENCY=64)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Client } from '@langchain/langgraph-sdk';
import { connectEmbedded, freePort, startServe } from './processes.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 350);
const OPEN_RUNS = Number(process.env.BENCH_OPEN_RUNS ?? 45);
const CONSUMERS = Number(process.env.BENCH_CONSUMERS ?? 9);
const TICKS = Number(process.env.BENCH_TICKS ?? 30);
const TICK_MS = Number(process.env.BENCH_TICK_MS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const BEFORE_ROOT = process.env.BENCH_BEFORE_ROOT;
const SERVE_ENV = Object.fromEntries((process.env.BENCH_SERVE_ENV ?? '').split(/\s+/).filter(Boolean).map((pair) => pair.split('=', 2) as [string, string]));

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');

type Consumer = {
  runId: string;
  starter: boolean;
  askedAt: number;
  /** When its response's headers arrived: the server opened the stream. */
  headersAt?: number;
  received: { seq: number; at: number }[];
  /** Events with no name and no data: a keep-alive the SDK's decoder turned into an event. */
  surfaced: number;
  error?: string;
};
type Wait = { ms: number; first: boolean; starter: boolean; toHeaders: number; queue: number; graph: number; store: number; deliver: number };

const load = () => loadavg().map((value) => value.toFixed(1)).join(' ');
const percentile = (values: number[], p: number) => {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (value: number) => (Number.isFinite(value) ? `${Math.round(value)} ms` : '–');

/** An SDK client for one consumer, noting when its stream's response headers arrived. */
function clientFor(url: string, consumer: Consumer): Client {
  const timed = async (input: RequestInfo | URL, init?: RequestInit) => {
    const response = await fetch(input, init);
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) consumer.headersAt = Date.now();
    return response;
  };
  return new Client({ apiUrl: url, callerOptions: { maxRetries: 0, fetch: timed as typeof fetch } });
}

/** One run: started by a `runs.stream` consumer, joined by the others once its id is known. */
async function driveRun(url: string, consumers: Consumer[]): Promise<void> {
  const consumer = (starter: boolean, runId = ''): Consumer => {
    const made: Consumer = { runId, starter, askedAt: Date.now(), received: [], surfaced: 0 };
    consumers.push(made);
    return made;
  };
  const thread = await new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } }).threads.create();
  let started!: (runId: string) => void;
  const runIdKnown = new Promise<string>((resolve) => (started = resolve));
  const read = async (reader: Consumer, stream: AsyncIterable<{ event: string; id?: string }>) => {
    try {
      for await (const part of stream) {
        if (part.event === '') reader.surfaced += 1;
        else reader.received.push({ seq: Number(part.id) + 1, at: Date.now() });
      }
    } catch (error) {
      reader.error = String((error as Error)?.message ?? error);
    }
  };
  const starter = consumer(true);
  const first = read(
    starter,
    clientFor(url, starter).runs.stream(thread.thread_id, 'ticker', {
      input: { ticks: TICKS, interval_ms: TICK_MS },
      streamMode: 'custom',
      onRunCreated: ({ run_id }) => started(run_id),
    }) as AsyncIterable<{ event: string; id?: string }>,
  );
  const runId = await Promise.race([runIdKnown, first.then(() => '')]);
  starter.runId = runId;
  if (!runId) return;
  const joiners = Array.from({ length: CONSUMERS - 1 }, () => {
    const joiner = consumer(false, runId);
    return read(joiner, clientFor(url, joiner).runs.joinStream(thread.thread_id, runId) as AsyncIterable<{ event: string; id?: string }>);
  });
  await Promise.all([first, ...joiners]);
}

type RunRow = { id: string; created: number; started: number; ended: number };
type EventRow = { run_id: string; seq: number; stored: number; made: number | null };

/** Each consumer's longest wait (its first event, or between two), split into its parts. */
function waitsOf(consumers: Consumer[], runs: Map<string, RunRow>, events: Map<string, Map<number, EventRow>>): Wait[] {
  const waits: Wait[] = [];
  for (const consumer of consumers) {
    const run = runs.get(consumer.runId);
    const stored = events.get(consumer.runId);
    if (!run || !stored || !consumer.received.length) continue;
    // The graph's time for an event: when it made it (a tick), else when the run was claimed (metadata).
    const madeAt = (seq: number) => stored.get(seq)?.made ?? run.started;
    let worst: Wait | undefined;
    consumer.received.forEach((event, index) => {
      const previous = index === 0 ? undefined : consumer.received[index - 1]!;
      const since = previous ? previous.at : consumer.askedAt;
      const waited = event.at - since;
      if (worst && waited <= worst.ms) return;
      const row = stored.get(event.seq);
      if (!row) return;
      // Each part clipped to the wait (an event stored before the consumer asked is a replay: only its
      // delivery counts). Queue: before the run was claimed (first event only); graph: what the graph
      // took beyond the interval since its previous event (or since the claim); store: made → stored;
      // deliver: stored → received.
      const made = Math.max(since, madeAt(event.seq));
      const storedAt = Math.max(since, row.stored);
      const queue = previous ? 0 : Math.max(0, run.started - Math.max(since, run.created));
      const graphFrom = Math.max(since, previous ? madeAt(previous.seq) + TICK_MS : run.started);
      const graph = Math.max(0, made - graphFrom);
      worst = { ms: waited, first: !previous, starter: consumer.starter, toHeaders: (consumer.headersAt ?? consumer.askedAt) - consumer.askedAt, queue, graph, store: Math.max(0, storedAt - made), deliver: event.at - storedAt };
    });
    if (worst) waits.push(worst);
  }
  return waits;
}

/** Each server thread's largest event-loop delay over the window, from the probe's file. */
function loopDelays(file: string, from: number, to: number): string {
  let lines: { t: number; thread: string; max: number; p99: number }[] = [];
  try {
    lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
  } catch {
    return 'no samples';
  }
  const byThread = new Map<string, { max: number; p99s: number[] }>();
  for (const line of lines) {
    if (line.t < from || line.t > to + 1000) continue;
    const entry = byThread.get(line.thread) ?? { max: 0, p99s: [] };
    entry.max = Math.max(entry.max, line.max);
    entry.p99s.push(line.p99);
    byThread.set(line.thread, entry);
  }
  return [...byThread].map(([thread, { max, p99s }]) => `${thread} max ${max} ms (p99 of its seconds' p99: ${percentile(p99s, 99)} ms)`).join('; ');
}

async function measure(name: string, checkout: string): Promise<void> {
  const port = await freePort();
  const probeDir = mkdtempSync(join(tmpdir(), 'bench-stream-idle-'));
  const loopFile = join(probeDir, 'loop.jsonl');
  const nodeOptions = [process.env.NODE_OPTIONS, `--import=${join(here, 'loop-delay-probe.mjs')}`].filter(Boolean).join(' ');
  const server = await startServe(join(here, 'graphs/stream-idle.langgraph.json'), port, { root: checkout, env: { NODE_OPTIONS: nodeOptions, BENCH_LOOP_FILE: loopFile, ...SERVE_ENV } });
  const db = await connectEmbedded(join(server.dataDir, 'data'));
  const url = `http://127.0.0.1:${port}`;
  const benchLoop = monitorEventLoopDelay({ resolution: 10 });
  try {
    // Warm up: the graph loaded, the first run's statements prepared.
    await driveRun(url, []);
    const loadBefore = load();
    const consumers: Consumer[] = [];
    const from = Date.now();
    benchLoop.enable();
    let next = 0;
    let peakOpen = 0;
    let open = 0;
    await Promise.all(
      Array.from({ length: OPEN_RUNS }, async () => {
        while (next < RUNS) {
          next += 1;
          open += CONSUMERS;
          peakOpen = Math.max(peakOpen, open);
          await driveRun(url, consumers);
          open -= CONSUMERS;
        }
      }),
    );
    benchLoop.disable();
    const to = Date.now();
    const loadAfter = load();

    const runIds = [...new Set(consumers.map((consumer) => consumer.runId).filter(Boolean))];
    const { rows: runRows } = await db.query<{ id: string; created: number; started: number; ended: number }>(
      `SELECT id, (extract(epoch FROM created_at) * 1000)::float8 AS created, (extract(epoch FROM started_at) * 1000)::float8 AS started,
              (extract(epoch FROM ended_at) * 1000)::float8 AS ended
         FROM agent_runs WHERE id = ANY($1::uuid[])`,
      [runIds],
    );
    const { rows: eventRows } = await db.query<EventRow>(
      `SELECT run_id, seq, (extract(epoch FROM created_at) * 1000)::float8 AS stored,
              CASE WHEN event = 'custom' THEN (data::json->>'at')::float8 END AS made
         FROM run_events WHERE run_id = ANY($1::uuid[])`,
      [runIds],
    );
    const runs = new Map(runRows.map((row) => [row.id, row]));
    const events = new Map<string, Map<number, EventRow>>();
    for (const row of eventRows) {
      if (!events.has(row.run_id)) events.set(row.run_id, new Map());
      events.get(row.run_id)!.set(row.seq, row);
    }
    const expected = TICKS + 1;
    const incomplete = consumers.filter((consumer) => consumer.error || consumer.received.length !== expected);
    const waits = waitsOf(consumers, runs, events);
    const longest = waits.map((wait) => wait.ms);
    const firstWaits = waits.filter((wait) => wait.first);
    const queueWaits = runRows.map((row) => row.started - row.created);
    // Runs executing at once, from the rows: the most claimed and not yet ended at any claim.
    const executing = Math.max(...runRows.map((row) => runRows.filter((other) => other.started <= row.started && other.ended > row.started).length));

    console.log(`\n## ${name} (${checkout})`);
    console.log(`load average before ${loadBefore}, after ${loadAfter}; ${runIds.length} runs, ${consumers.length} consumers, up to ${peakOpen} streams open; ${((to - from) / 1000).toFixed(1)} s`);
    console.log(`consumers that did not get all ${expected} events: ${incomplete.length}${incomplete[0] ? ` (e.g. ${incomplete[0].received.length} events${incomplete[0].error ? `, ${incomplete[0].error}` : ''})` : ''}`);
    console.log(`run queue (created → claimed): p50 ${ms(percentile(queueWaits, 50))}, p99 ${ms(percentile(queueWaits, 99))}, max ${ms(Math.max(...queueWaits))}; at most ${executing} runs executing at once`);
    console.log(`each consumer's longest wait: p50 ${ms(percentile(longest, 50))}, p99 ${ms(percentile(longest, 99))}, max ${ms(Math.max(...longest))}; over 1 s: ${longest.filter((value) => value > 1000).length}, over 5 s: ${longest.filter((value) => value > 5000).length}, over 15 s: ${longest.filter((value) => value > 15_000).length}`);
    console.log(`  of which for the first event: ${firstWaits.length} (p99 ${ms(percentile(firstWaits.map((wait) => wait.ms), 99))}); between two events: ${waits.length - firstWaits.length} (p99 ${ms(percentile(waits.filter((wait) => !wait.first).map((wait) => wait.ms), 99))})`);
    for (const [who, group] of [['starters (runs.stream)', waits.filter((wait) => wait.starter)], ['joiners (runs.joinStream)', waits.filter((wait) => !wait.starter)]] as const) {
      const firsts = group.filter((wait) => wait.first);
      console.log(`  ${who}: first event p50 ${ms(percentile(firsts.map((wait) => wait.ms), 50))}, p99 ${ms(percentile(firsts.map((wait) => wait.ms), 99))} (of which until the response's headers: p99 ${ms(percentile(firsts.map((wait) => wait.toHeaders), 99))}, max ${ms(Math.max(...firsts.map((wait) => wait.toHeaders)))})`);
    }
    // The longest gap between two events of each consumer (after its first), and the runtime's claim:
    // how long a queued run waited after a slot freed (the last run to end before its claim).
    const gaps = consumers.map((consumer) => Math.max(0, ...consumer.received.slice(1).map((event, index) => event.at - consumer.received[index]!.at)));
    console.log(`between two events (each consumer's longest gap after its first event): p50 ${ms(percentile(gaps, 50))}, p99 ${ms(percentile(gaps, 99))}, max ${ms(Math.max(...gaps))}`);
    const ends = runRows.map((row) => row.ended).sort((a, b) => a - b);
    const claimLags = runRows
      .filter((row) => row.started - row.created > 200)
      .map((row) => row.started - Math.max(row.created, ends.filter((ended) => ended <= row.started).at(-1) ?? row.created));
    console.log(`claim after a slot freed (runs queued > 200 ms: ${claimLags.length}): p50 ${ms(percentile(claimLags, 50))}, p99 ${ms(percentile(claimLags, 99))}, max ${ms(Math.max(...claimLags))}`);
    // What the SDK surfaced before keep-alives were a lone comment line: an empty event at each
    // keep-alive after a stream's first event, whether or not the stream was idle.
    const openFor = consumers.map((consumer) => (consumer.received.at(-1)?.at ?? consumer.askedAt) - (consumer.received[0]?.at ?? consumer.askedAt));
    console.log(`keep-alives surfaced as empty events: ${consumers.reduce((total, consumer) => total + consumer.surfaced, 0)} to ${consumers.filter((consumer) => consumer.surfaced).length} consumers; streams open more than 15 s after their first event: ${openFor.filter((value) => value > 15_000).length} (longest ${ms(Math.max(...openFor))})`);
    // Where the longest waits went: the 1% longest (at least 10), their parts summed.
    const top = [...waits].sort((a, b) => b.ms - a.ms).slice(0, Math.max(10, Math.ceil(waits.length / 100)));
    const sum = (key: keyof Omit<Wait, 'first' | 'starter'>) => top.reduce((total, wait) => total + wait[key], 0);
    const total = sum('ms');
    const part = (key: 'queue' | 'graph' | 'store' | 'deliver') => `${key} ${((100 * sum(key)) / total).toFixed(0)}% (max ${ms(Math.max(...top.map((wait) => wait[key])))})`;
    console.log(`the ${top.length} longest waits (${ms(top.at(-1)!.ms)} to ${ms(top[0]!.ms)}; ${top.filter((wait) => wait.first).length} of them for a first event): ${part('queue')}, ${part('graph')}, ${part('store')}, ${part('deliver')}`);
    console.log(`event-loop delay: server ${loopDelays(loopFile, from, to)}; bench (the consumers' process) max ${Math.round(benchLoop.max / 1e6)} ms, p99 ${Math.round(benchLoop.percentile(99) / 1e6)} ms`);
  } finally {
    await db.end();
    await server.stop();
    rmSync(probeDir, { recursive: true, force: true });
  }
}

async function main() {
  console.log(`bench:stream-idle: ${RUNS} runs of ${TICKS} events every ${TICK_MS} ms, ${OPEN_RUNS} open at once, ${CONSUMERS} consumers each${Object.keys(SERVE_ENV).length ? `; serve with ${JSON.stringify(SERVE_ENV)}` : ''}`);
  for (let round = 1; round <= ROUNDS; round++) {
    if (BEFORE_ROOT) await measure(`round ${round}: before`, BEFORE_ROOT);
    await measure(`round ${round}: ${BEFORE_ROOT ? 'after' : 'this checkout'}`, root);
  }
}

await main();
