// npm run bench:runs-paired — CPU per run of two checkouts' `serve` (tracing off), both running at once
// and loaded in turn: BENCH_PAIRS pairs of BENCH_PAIR_SECONDS throughput windows (32 clients calling
// runs.wait, each run on a new thread of its own: a durable run, its checkpoints written), alternating which goes first, so the machine's other load hits both alike (one window
// each, minutes apart, as bench:runs measures its columns, moves with that load). Prints each part's
// median CPU µs per run, the runs/s and the time its threads waited for a core, beside the floor: the
// same graph invoked in this process (CPU µs per invoke, measured between the pairs while the serves
// idle), without a checkpointer and with a MemorySaver and a thread per run. Asserts nothing.
//
//   BENCH_BEFORE_ROOT=<checkout>  required: the other checkout (e.g. main; this one, to compare settings)
//   BENCH_AFTER_ENV='{"NAME":"value"}'  settings of this checkout's serve only (e.g. LANGGRAPH_AES_KEY:
//                                 the cost of encryption at rest, with this checkout as BENCH_BEFORE_ROOT)
//   BENCH_PAIRS (6), BENCH_PAIR_SECONDS (4)
//   BENCH_CONCURRENCY (32)         clients per window: 1 measures a quiet deployment, whose runtime claims
//                                 one run per fetch (at 32 a fetch claims several and shares its cost)
//   BENCH_STATELESS=1             runs.wait without a thread instead (no checkpoints), as this bench measured until issue 42's
//                                 fourth round
//   BENCH_ANALYZE=1               ANALYZE both agent servers' databases after the warm-up, as autovacuum does
//                                 within a minute or so of runs: until then a fresh database's planner takes
//                                 its tables for empty, which is not the steady state of a deployment
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { floorCpuMicroseconds } from './graph-floor.js';
import { CPU_PARTS, perRun, sampleProcesses } from './process-cpu.js';
import { callersFor, connectEmbedded, freePort, startProcess, stopProcess } from './processes.js';

const here = new URL('.', import.meta.url).pathname;
const BEFORE_ROOT = process.env.BENCH_BEFORE_ROOT;
const PAIRS = Number(process.env.BENCH_PAIRS ?? 6);
const PAIR_SECONDS = Number(process.env.BENCH_PAIR_SECONDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const AFTER_ENV = JSON.parse(process.env.BENCH_AFTER_ENV ?? '{}') as Record<string, string>;
if (!BEFORE_ROOT) throw new Error('BENCH_BEFORE_ROOT names the checkout to compare with');

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function startServe(checkout: string, env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-paired-'));
  chmodSync(dataDir, 0o711);
  const port = await freePort();
  const started = await startProcess(
    process.execPath,
    [join(checkout, 'bin/agent-platform.mjs'), 'serve', '--config', join(here, 'graphs/langgraph.json'), '--port', String(port), '--data-dir', join(dataDir, 'data')],
    { cwd: checkout, env: { LOG_LEVEL: 'warn', DATABASE_URL: '', AGENT_SERVER_TRACING: 'false', ...env }, ready: /running at http/ },
  );
  const client = new Client({ apiUrl: `http://127.0.0.1:${port}`, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
  return { ...started, client, postgresDir: join(dataDir, 'data', 'postgres'), dataDir };
}

async function window(served: Awaited<ReturnType<typeof startServe>>) {
  const input = { steps: [] };
  const run = () => (process.env.BENCH_STATELESS ? served.client.runs.wait(null, 'two_node', { input }) : served.client.runs.wait(randomUUID(), 'two_node', { input, ifNotExists: 'create' }));
  const before = sampleProcesses(served.child.pid!, served.postgresDir);
  const { completed, elapsedSeconds } = await callersFor(PAIR_SECONDS, CONCURRENCY, run);
  return { ...perRun(before, sampleProcesses(served.child.pid!, served.postgresDir), completed), runsPerSecond: completed / elapsedSeconds };
}

const load = loadavg();
const serves = { before: await startServe(BEFORE_ROOT), after: await startServe(join(here, '..'), AFTER_ENV) };
try {
  // Warm-up: a window of the measured runs each (JIT, pools, and tables with rows for ANALYZE to see).
  for (const served of Object.values(serves)) await window(served);
  if (process.env.BENCH_ANALYZE) {
    for (const served of Object.values(serves)) {
      const db = await connectEmbedded(join(served.dataDir, 'data'));
      await db.query('ANALYZE').finally(() => db.end());
    }
  }
  const windows = { before: [] as Awaited<ReturnType<typeof window>>[], after: [] as Awaited<ReturnType<typeof window>>[] };
  const floors = { plain: [] as number[], durable: [] as number[] };
  for (let i = 0; i < PAIRS; i++) {
    for (const which of i % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const)) windows[which].push(await window(serves[which]));
    floors.plain.push(await floorCpuMicroseconds(false));
    floors.durable.push(await floorCpuMicroseconds(true));
  }
  const loadAfter = loadavg();
  console.log(`load average (1/5/15 min): before ${load.map((v) => v.toFixed(2)).join(' / ')}, after ${loadAfter.map((v) => v.toFixed(2)).join(' / ')}`);
  console.log(`| median of ${PAIRS} windows of ${PAIR_SECONDS} s each, interleaved | before (${BEFORE_ROOT}) | after |`);
  console.log('|---|---|---|');
  const row = (label: string, pick: (w: Awaited<ReturnType<typeof window>>) => number, digits = 0) =>
    console.log(`| ${label} | ${median(windows.before.map(pick)).toFixed(digits)} | ${median(windows.after.map(pick)).toFixed(digits)} |`);
  row(`runs/s (${CONCURRENCY} clients, runs.wait)`, (w) => w.runsPerSecond, 1);
  for (const part of CPU_PARTS) row(`CPU µs per run: ${part}`, (w) => w.cpuMicroseconds[part]);
  const all = (w: Awaited<ReturnType<typeof window>>) => CPU_PARTS.reduce((sum, part) => sum + w.cpuMicroseconds[part], 0);
  row('CPU µs per run: all', all);
  const floor = { plain: median(floors.plain), durable: median(floors.durable) };
  console.log(`| the floor: in-process graph.invoke, CPU µs per run, no checkpointer / MemorySaver | ${floor.plain.toFixed(0)} / ${floor.durable.toFixed(0)} | |`);
  row('all × the floor with a MemorySaver', (w) => all(w) / floor.durable, 2);
  row('waiting for a core µs per run: api thread', (w) => w.waitMicroseconds['api thread']);
  row('waiting for a core µs per run: runtime thread', (w) => w.waitMicroseconds['runtime thread']);
} finally {
  for (const served of Object.values(serves)) {
    await stopProcess(served.child);
    rmSync(served.dataDir, { recursive: true, force: true });
  }
}
process.exit(0);
