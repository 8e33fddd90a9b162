// npm run bench:cpu — issue 42's ratios in one run: CPU per durable run (runs.wait on a thread of its own,
// created by the run: if_not_exists create) of `serve` with tracing off, of `serve` with tracing on and
// of the same graph deployed and called through the gateway, against the floor: the graph invoked with
// a MemorySaver, a thread per run, in a process of its own. Beside it, what a user's own script would
// make durable with instead, no server: the graph with LangGraph's PostgresSaver on a PostgreSQL of its
// own; and a stateless run (runs.wait without a thread: no checkpoints), as earlier benches measured.
//
// Every path and floor runs at once, idle but for the one loaded: BENCH_ROUNDS rounds of
// BENCH_WINDOW_SECONDS windows (BENCH_CONCURRENCY callers), each round starting one later in the order,
// so the machine's other load hits them alike. A ratio is taken within a round (a path's CPU per run
// over the floor's in the same round) and the median of the rounds is printed with its range: on this
// shared machine the floor moves by a third between windows minutes apart, which no ratio measured
// across windows survives. Asserts nothing.
//
// CPU per run is every thread of the path's processes read from /proc: the server process, its
// PostgreSQL's backends and, through the gateway, the deployment's agent server (its child) and that
// database's backends. A window's end reading waits BENCH_SETTLE_SECONDS after its last answer, so work
// a run leaves behind (the trace batcher's writes with tracing on) is counted with it.
//
//   BENCH_ROUNDS (8), BENCH_WINDOW_SECONDS (4), BENCH_CONCURRENCY (32), BENCH_SETTLE_SECONDS (1)
//   BENCH_SKIP_GATEWAY=1   without the deployed path (no control plane, no sandbox)
//   BENCH_SHOW_ROUNDS=1    also print every round's CPU µs per run by path, in the order measured
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { CHILD_PARTS, CPU_PARTS, perRun, sampleProcesses } from './process-cpu.js';
import { callersFor, connectEmbedded, freePort, startDeployedGraph, startServe } from './processes.js';

const here = new URL('.', import.meta.url).pathname;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const WINDOW_SECONDS = Number(process.env.BENCH_WINDOW_SECONDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 1);
const POSTGRES = 'PostgreSQL (all backends)';

type Window = { cpuMicroseconds: number; postgresMicroseconds: number; runsPerSecond: number };
/** dataDir: the embedded PostgreSQL's data folder (`--data-dir`), ANALYZEd after the warm-up. */
type Path = { name: string; window: () => Promise<Window>; dataDir?: string };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU µs per run between two readings: every part of the process tree, and of it PostgreSQL's. */
function cpuPerRun(before: ReturnType<typeof sampleProcesses>, after: ReturnType<typeof sampleProcesses>, runs: number, withPostgres = true) {
  const used = perRun(before, after, runs);
  const postgres = withPostgres ? used.cpuMicroseconds[POSTGRES] : 0;
  const own = CPU_PARTS.filter((part) => part !== POSTGRES).reduce((sum, part) => sum + used.cpuMicroseconds[part], 0);
  const children = CHILD_PARTS.reduce((sum, part) => sum + used.childCpuMicroseconds[part], 0);
  return { cpuMicroseconds: own + children + postgres, postgresMicroseconds: postgres };
}

/** A served path: CONCURRENCY SDK clients calling runs.wait for a window, durable (a new thread per run) or stateless. */
function servedPath(name: string, client: Client, pid: number, dataDir: string, durable: boolean): Path {
  const input = { steps: [] };
  const postgresDir = join(dataDir, 'postgres');
  const run = () => (durable ? client.runs.wait(randomUUID(), 'two_node', { input, ifNotExists: 'create' }) : client.runs.wait(null, 'two_node', { input }));
  return {
    name,
    dataDir,
    window: async () => {
      const before = sampleProcesses(pid, postgresDir);
      const { completed, elapsedSeconds } = await callersFor(WINDOW_SECONDS, CONCURRENCY, run);
      await sleep(SETTLE_SECONDS * 1000);
      return { ...cpuPerRun(before, sampleProcesses(pid, postgresDir), completed), runsPerSecond: completed / elapsedSeconds };
    },
  };
}

/** The floors' process (bench/floor-process.ts) and its embedded PostgreSQL, in a temp folder. */
async function startFloorProcess() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
  chmodSync(dataDir, 0o711);
  const child = fork(join(here, 'floor-process.ts'), [join(dataDir, 'data')], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the floor's process exited with ${code}`)));
  });
  const postgresDir = join(dataDir, 'data', 'postgres');
  /** A floor at CONCURRENCY callers: with a MemorySaver (the process's CPU), or with PostgresSaver (its PostgreSQL's too). */
  const floor = (name: string, saver: 'memory' | 'postgres'): Path => ({
    name,
    dataDir: saver === 'postgres' ? join(dataDir, 'data') : undefined,
    window: async () => {
      const before = sampleProcesses(child.pid!, postgresDir);
      const completed = await new Promise<number>((resolve) => {
        child.once('message', (result: { completed: number }) => resolve(result.completed));
        child.send({ seconds: WINDOW_SECONDS, concurrency: CONCURRENCY, saver });
      });
      return { ...cpuPerRun(before, sampleProcesses(child.pid!, postgresDir), completed, saver === 'postgres'), runsPerSecond: completed / WINDOW_SECONDS };
    },
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { floor, stop };
}

const load = loadavg();
const stops: (() => Promise<void>)[] = [];
try {
  const floors = await startFloorProcess();
  stops.push(floors.stop);
  const floor = floors.floor('the floor: graph.invoke with a MemorySaver', 'memory');
  const postgresFloor = floors.floor("graph.invoke with LangGraph's PostgresSaver (no server)", 'postgres');
  const paths: Path[] = [floor, postgresFloor];
  for (const tracing of [false, true]) {
    const port = await freePort();
    const served = await startServe(join(here, 'graphs/langgraph.json'), port, { tracing });
    stops.push(served.stop);
    const client = new Client({ apiUrl: `http://127.0.0.1:${port}`, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
    paths.push(servedPath(`serve, tracing ${tracing ? 'on' : 'off'}`, client, served.child.pid!, join(served.dataDir, 'data'), true));
    if (!tracing) paths.push(servedPath('serve, tracing off, stateless (no checkpoints)', client, served.child.pid!, join(served.dataDir, 'data'), false));
  }
  if (!process.env.BENCH_SKIP_GATEWAY) {
    const deployed = await startDeployedGraph();
    stops.push(deployed.stop);
    const client = new Client({ apiUrl: deployed.deploymentUrl, apiKey: deployed.key, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
    paths.push(servedPath('through the gateway, tracing off', client, deployed.child.pid!, deployed.dataDir, true));
  }
  // Warm-up: JIT, pools, then the planner's statistics (ANALYZE, as autovacuum does within a minute of runs).
  for (const path of paths) await path.window();
  for (const dataDir of new Set(paths.map((path) => path.dataDir))) {
    if (!dataDir) continue;
    const db = await connectEmbedded(dataDir);
    await db.query('ANALYZE').finally(() => db.end());
  }
  const windows = new Map<Path, Window[]>(paths.map((path) => [path, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = paths.map((_, i) => paths[(i + round) % paths.length]!);
    for (const path of order) windows.get(path)!.push(await path.window());
    if (process.env.BENCH_SHOW_ROUNDS) console.log(`round ${round + 1}: ${order.map((path) => `${path.name} ${windows.get(path)!.at(-1)!.cpuMicroseconds.toFixed(0)}`).join(', ')}`);
  }
  const loadAfter = loadavg();
  console.log(`load average (1/5/15 min): before ${load.map((v) => v.toFixed(2)).join(' / ')}, after ${loadAfter.map((v) => v.toFixed(2)).join(' / ')}`);
  console.log(`| median of ${ROUNDS} rounds of ${WINDOW_SECONDS} s windows, ${CONCURRENCY} callers | runs/s | CPU µs per run: all | of it PostgreSQL | × the floor (median of rounds; range) | × PostgresSaver without a server |`);
  console.log('|---|---|---|---|---|---|');
  // Each round's ratio to a floor of the same round; the median of the rounds, with their range.
  const ratio = (own: Window[], of: Path) => {
    const ratios = own.map((w, round) => w.cpuMicroseconds / windows.get(of)![round]!.cpuMicroseconds).sort((a, b) => a - b);
    return `${median(ratios).toFixed(2)} (${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)})`;
  };
  for (const path of paths) {
    const own = windows.get(path)!;
    const cells = [median(own.map((w) => w.runsPerSecond)).toFixed(1), median(own.map((w) => w.cpuMicroseconds)).toFixed(0), median(own.map((w) => w.postgresMicroseconds)).toFixed(0)];
    console.log(`| ${path.name} | ${cells.join(' | ')} | ${path === floor ? '1' : `**${ratio(own, floor)}**`} | ${path === postgresFloor ? '1' : ratio(own, postgresFloor)} |`);
  }
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
process.exit(0);
