// `npm run bench:tracing`: what tracing an agent run costs, in counts that hold on a loaded machine.
// The bench's two-node graph is run in this process, as the runtime runs it (the agent-run tracer of
// `root`, its onEnd awaited, the executor's configurable and metadata, concurrent runs), three ways:
//   off    no tracer;
//   built  the tracer, its trace handed to a batcher that only counts (JS work on the run's thread);
//   stored the tracer and the real TraceBatcher writing to a fresh platform's PostgreSQL.
// Per run: CPU µs of this process (process.cpuUsage: JS, GC, the pg client) and of PostgreSQL (all its
// processes, from /proc), trace rows and their JSON bytes, statements sent by the batcher.
// `stored − off` is what tracing costs a run; `built − off` is the part spent while the run executes,
// `stored − built` the batcher's write (serialization, statement building) and PostgreSQL's share.
//
//   BENCH_RUNS (default 3000)       runs per way and round
//   BENCH_ROUNDS (default 2)        rounds; the ways are interleaved within each
//   BENCH_CONCURRENCY (default 16)  runs in flight
//   BENCH_BEFORE_ROOT=<checkout>    also measure another checkout's tracer, paired round by round
//   BENCH_JSON=<file>               also write the figures as JSON
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const RUNS = Number(process.env.BENCH_RUNS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const here = dirname(fileURLToPath(import.meta.url));
const WAYS = ['off', 'built', 'stored'] as const;
type Way = (typeof WAYS)[number];
type Figures = { jsMicros: number; postgresMicros: number; rows: number; operations: number; bytesPerRow: number; statements: number };

const ticksPerSecond = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
const cpuSecondsOf = (pid: string) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { parent: Number(fields[1]), seconds: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond };
  } catch {
    return undefined;
  }
};
/** CPU seconds of a PostgreSQL server: its postmaster and every child (backends, background workers). */
function postgresCpuSeconds(postmaster: number): number {
  let seconds = cpuSecondsOf(String(postmaster))?.seconds ?? 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = cpuSecondsOf(entry);
    if (stat?.parent === postmaster) seconds += stat.seconds;
  }
  return seconds;
}

/** One checkout measured in this process (the child side: modules are loaded from `root`). */
async function measureRoot(root: string): Promise<Record<Way, Figures>> {
  const { startBenchPlatform, createBenchTenant } = await import(join(root, 'bench/tenant.ts'));
  const { graph } = await import(join(root, 'bench/graphs/two-node.ts'));
  const { createAgentRunTracer } = await import(join(root, 'src/agent-server/runtime/agent-run-tracer.ts'));
  const { TraceBatcher } = await import(join(root, 'src/platform/ingest/trace-batcher.ts'));
  const { newId } = await import(join(root, 'src/ids.ts'));
  const platform = await startBenchPlatform({});
  try {
    const { workspace } = await createBenchTenant(platform.deps);
    const who = { workspaceId: workspace.id };
    const { rows: [backend] } = await platform.deps.db.pool.query('SELECT pg_backend_pid() AS pid');
    const postmaster = cpuSecondsOf(String(backend.pid))!.parent;

    // Statements the batcher sends: its deps' pool, counted.
    let statements = 0;
    const counted = <T extends { query: (...args: never[]) => unknown }>(target: T): T =>
      new Proxy(target, { get: (object, key) => (key === 'query' ? (...args: never[]) => (statements++, object.query(...args)) : Reflect.get(object, key)) });
    const pool: import('pg').Pool = platform.deps.db.pool;
    const countedPool = new Proxy(pool, {
      get: (object, key) => {
        if (key === 'query') return (...args: never[]) => (statements++, (object.query as (...a: never[]) => unknown)(...args));
        if (key === 'connect') return async () => counted(await object.connect());
        return Reflect.get(object, key);
      },
    });
    const deps = { ...platform.deps, db: { ...platform.deps.db, pool: countedPool } };

    // What a trace becomes: rows and their JSON size, from the batches handed to the batcher.
    const counting = { rows: 0, operations: 0, bytes: 0, sampled: 0, add: async (_who: unknown, batch: { post?: unknown[]; patch?: unknown[] }) => {
      const operations = [...(batch.post ?? []), ...(batch.patch ?? [])];
      counting.rows += batch.post?.length ?? 0;
      counting.operations += operations.length;
      // JSON size of the first runs' rows only: measuring it costs CPU the runtime does not spend.
      if (counting.sampled < 50 * 6) for (const operation of operations) (counting.sampled++, (counting.bytes += JSON.stringify(operation).length));
    } };

    const input = { steps: [] };
    const runOnce = async (way: Way, batcher: unknown) => {
      const runId = newId();
      const tracer = way === 'off' ? undefined : createAgentRunTracer(deps, who, 'bench-tracing', batcher);
      const tracing = tracer?.({ runId, threadId: runId, assistantId: runId, graphId: 'two_node', deploymentId: runId });
      // The config the runtime's executor gives a run: its ids as configurable and as metadata (with
      // tracing on, LangChain copies that metadata with the callbacks at every step).
      const ids = { thread_id: runId, run_id: runId, assistant_id: runId, graph_id: 'two_node' };
      await graph.invoke(input, { runId, configurable: ids, metadata: { ...ids, run_attempt: 1 }, ...(tracing ? { callbacks: tracing.callbacks } : {}) });
      await tracing?.onEnd?.({ status: 'success' });
    };
    const runMany = async (way: Way, batcher: unknown, runs: number) => {
      let next = 0;
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < runs) await runOnce(way, batcher);
      }));
    };

    const totals = Object.fromEntries(WAYS.map((way) => [way, { jsMicros: 0, postgresMicros: 0, rows: 0, operations: 0, bytesPerRow: 0, statements: 0 }])) as Record<Way, Figures>;
    const warm = new TraceBatcher(deps, { capacity: 10_000, flushIntervalMs: platform.config.agentServerTracing.flushIntervalMs });
    for (const way of WAYS) await runMany(way, way === 'stored' ? warm : counting, 300);
    await warm.close();
    for (let round = 0; round < ROUNDS; round++) {
      for (const way of WAYS) {
        const batcher = way === 'stored' ? new TraceBatcher(deps, { capacity: 10_000, flushIntervalMs: platform.config.agentServerTracing.flushIntervalMs }) : counting;
        Object.assign(counting, { rows: 0, operations: 0, bytes: 0, sampled: 0 });
        statements = 0;
        const { rows: [before] } = await pool.query('SELECT count(*)::int AS rows FROM trace_runs');
        const cpu = process.cpuUsage();
        const postgres = postgresCpuSeconds(postmaster);
        await runMany(way, batcher, RUNS);
        if (way === 'stored') await (batcher as { close(): Promise<void> }).close();
        const js = process.cpuUsage(cpu);
        const postgresSeconds = postgresCpuSeconds(postmaster) - postgres;
        const sent = statements;
        const { rows: [after] } = await pool.query('SELECT count(*)::int AS rows FROM trace_runs');
        const sum = totals[way];
        sum.jsMicros += (js.user + js.system) / RUNS / ROUNDS;
        sum.postgresMicros += (postgresSeconds * 1e6) / RUNS / ROUNDS;
        sum.rows += (way === 'stored' ? after!.rows - before!.rows : counting.rows) / RUNS / ROUNDS;
        if (way === 'built') sum.bytesPerRow += counting.bytes / Math.max(1, counting.sampled) / ROUNDS;
        sum.operations += counting.operations / RUNS / ROUNDS;
        sum.statements += sent / RUNS / ROUNDS;
      }
    }
    totals.stored.bytesPerRow = totals.built.bytesPerRow;
    return totals;
  } finally {
    await platform.stop();
  }
}

function measureInChild(root: string): Record<Way, Figures> {
  const result = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
    cwd: root,
    env: { ...process.env, BENCH_TRACING_CHILD_ROOT: root, BENCH_ROUNDS: '1' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const line = result.stdout.split('\n').find((text) => text.startsWith('FIGURES '));
  if (!line) throw new Error(`the measurement of ${root} failed:\n${result.stdout}`);
  return JSON.parse(line.slice('FIGURES '.length));
}

const format = (value: number, digits = 0) => value.toFixed(digits).padStart(10);

async function main() {
  const childRoot = process.env.BENCH_TRACING_CHILD_ROOT;
  if (childRoot) {
    console.log(`FIGURES ${JSON.stringify(await measureRoot(childRoot))}`);
    process.exit(0);
  }
  const root = resolve(here, '..');
  const checkouts: [string, string][] = process.env.BENCH_BEFORE_ROOT ? [['before', resolve(process.env.BENCH_BEFORE_ROOT)], ['after', root]] : [['this checkout', root]];
  const loads = [loadavg()[0]!];
  const sums = new Map<string, Record<Way, Figures>[]>(checkouts.map(([label]) => [label, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Paired: the checkouts take turns, so the machine's load drifts over both alike.
    for (const [label, checkout] of checkouts) {
      sums.get(label)!.push(measureInChild(checkout));
      loads.push(loadavg()[0]!);
    }
  }
  const mean = (list: Record<Way, Figures>[], way: Way, key: keyof Figures) => list.reduce((sum, figures) => sum + figures[way][key], 0) / list.length;
  console.log(`\nTracing cost per agent run (two-node graph, ${RUNS} runs per way × ${ROUNDS} rounds, ${CONCURRENCY} in flight), load average ${loads.map((load) => load.toFixed(1)).join(' → ')}`);
  const labels = checkouts.map(([label]) => label);
  console.log(`${'figure'.padEnd(64)}${labels.map((label) => label.padStart(16)).join('')}`);
  const out: Record<string, Record<string, number>> = {};
  const row = (title: string, value: (list: Record<Way, Figures>[]) => number, digits = 0) => {
    const values = labels.map((label) => value(sums.get(label)!));
    labels.forEach((label, i) => ((out[label] ??= {})[title] = values[i]!));
    console.log(`${title.padEnd(64)}${values.map((v) => format(v, digits).padStart(16)).join('')}`);
  };
  row('this process CPU µs per run, tracing off', (l) => mean(l, 'off', 'jsMicros'));
  row('this process CPU µs per run, trace built (counted, not stored)', (l) => mean(l, 'built', 'jsMicros'));
  row('this process CPU µs per run, trace stored', (l) => mean(l, 'stored', 'jsMicros'));
  row('  tracing in JS while the run executes (built − off)', (l) => mean(l, 'built', 'jsMicros') - mean(l, 'off', 'jsMicros'));
  row('  tracing in JS, batcher write (stored − built)', (l) => mean(l, 'stored', 'jsMicros') - mean(l, 'built', 'jsMicros'));
  row('PostgreSQL CPU µs per run, tracing off', (l) => mean(l, 'off', 'postgresMicros'));
  row('PostgreSQL CPU µs per run, trace stored', (l) => mean(l, 'stored', 'postgresMicros'));
  row('  PostgreSQL CPU µs per trace row', (l) => (mean(l, 'stored', 'postgresMicros') - mean(l, 'off', 'postgresMicros')) / Math.max(1e-9, mean(l, 'stored', 'rows')), 1);
  row('tracing CPU µs per run in all (JS + PostgreSQL)', (l) => mean(l, 'stored', 'jsMicros') + mean(l, 'stored', 'postgresMicros') - mean(l, 'off', 'jsMicros') - mean(l, 'off', 'postgresMicros'));
  row('trace rows per run (stored)', (l) => mean(l, 'stored', 'rows'), 2);
  row('trace operations per run handed to the batcher (posts + patches)', (l) => mean(l, 'built', 'operations'), 2);
  row('  of which posts', (l) => mean(l, 'built', 'rows'), 2);
  row('JSON bytes per trace operation', (l) => mean(l, 'built', 'bytesPerRow'));
  row('statements per run sent by the batcher', (l) => mean(l, 'stored', 'statements'), 3);
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, `${JSON.stringify({ loads, runs: RUNS, rounds: ROUNDS, concurrency: CONCURRENCY, figures: out }, null, 2)}\n`);
}

await main();
