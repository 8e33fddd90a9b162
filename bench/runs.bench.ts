// npm run bench:runs — the agent server side by side with the reference in-memory server
// (`@langchain/langgraph-cli dev`, installed in bench/reference), both serving the same trivial
// two-node graph and driven through the official SDK, plus LangGraph's own in-process invoke rate
// (the floor). Prints a table; asserts nothing about time.
//
//   BENCH_SAMPLES (default 200)   sequential samples for the latency rows
//   BENCH_SECONDS (default 10)    duration of the 32-client throughput row
//   BENCH_SKIP_REFERENCE=1        measure the platform only
//   BENCH_SKIP_TRACING=1          skip the second platform column (tracing on)
//   BENCH_SKIP_GATEWAY=1          skip the deployed column (the same graph deployed through the control
//                                 plane, called at /deployments/<id> through the gateway, tracing off)
//   BENCH_PAIRS (8), BENCH_PAIR_SECONDS (2)   the paired comparison of the gateway with serve: both
//                                 running, runs.wait samples interleaved and throughput windows alternating,
//                                 so the machine's other load hits both alike (the columns are measured a
//                                 minute apart, and their ratio moves with that load)
//   BENCH_BEFORE_ROOT=<checkout>  also measure another checkout's platform (e.g. main), side by side
//   BENCH_STATEMENT_RUNS (50)     runs counted per kind for the statements-per-run rows
//   BENCH_SHOW_STATEMENTS=1       print each counted statement with its calls per run
//   BENCH_IDLE_ONLY=1             only that: serve after 2 s of load, then idle (and the gateway's platform with its deployment, unless skipped)
//   BENCH_IDLE_SECONDS (10)       after the load, the connections serve holds and its CPU (and its PostgreSQL's) over as long idle
//   BENCH_IDLE_SETTLE_SECONDS (0) …after first idling this long (past timers the load armed, pools' idle timeouts)
//   BENCH_CPU_PROF_DIR=<dir>      run each serve under `node --cpu-prof` (profiles in <dir>/<column>) and
//                                 print where its threads' CPU went during the throughput row
//   --json <file>                 also write the figures as a flat { name: { value, unit, floor?, reference? } }
//
// Per run it also prints where the time and the PostgreSQL round trips go, counted so the figures do not
// depend on the machine's load: statements per run by kind from pg_stat_statements (the embedded
// PostgreSQL is restarted with it preloaded; statements of as long idle are subtracted), the stages from
// the run rows' own timestamps (created → claimed: queue hand-off; claimed → ended: graph and
// persistence; the client's time outside that span: HTTP parse and response), and the bytes stored.
// During the throughput row it reads /proc for CPU µs per run of each part (the serve process's api
// thread, runtime thread and helper threads; PostgreSQL's backends) and the bytes the serve process read
// and wrote per run (HTTP and PostgreSQL wire). In the gateway's column the "serve process" is the
// platform's (the gateway, api and worker roles), and the deployment's agent server, its child
// process, is read by thread too. The main threads' time runnable but waiting for a core (schedstat)
// tells a starved process (the machine's other load, a deployment's cgroup CPU share) from a busy one.
//
// The platform is measured twice: with tracing off (like-for-like with the reference, which traces
// nothing) and with tracing on, as `serve` runs by default (every run stored as a trace tree).
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { printSummaries, summarizeProfiles } from './cpu-profile-summary.js';
import { floorCpuMicroseconds } from './graph-floor.js';
import { graph } from './graphs/two-node.js';
import { CHILD_PARTS, CPU_PARTS, type PerRun, perRun, postgresCpuByPid, reapedChildrenCpuSeconds, sampleProcesses, WAIT_PARTS } from './process-cpu.js';
import { connectEmbedded, freePort, referenceDir, startDeployedGraph, startProcess, startReference, stopProcess } from './processes.js';

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = 32;
const STATEMENT_RUNS = Number(process.env.BENCH_STATEMENT_RUNS ?? 50);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 8);
const PAIR_SECONDS = Number(process.env.BENCH_PAIR_SECONDS ?? 2);
const BEFORE_ROOT = process.env.BENCH_BEFORE_ROOT;
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 10);
const IDLE_SETTLE_SECONDS = Number(process.env.BENCH_IDLE_SETTLE_SECONDS ?? 0);
const jsonFlag = process.argv.indexOf('--json');
const JSON_FILE = jsonFlag >= 0 ? process.argv[jsonFlag + 1] : undefined;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

type Figures = { waitP50: number; waitP99: number; firstEventP50: number; runsPerSecond: number; perRun?: PerRun };

/** Where a run's time, round trips and bytes go (the platform columns only). */
type Breakdown = {
  stages: { queueHandOffMs: number; executionMs: number; httpAndResponseMs: number };
  statements: Record<'stateless' | 'thread', { total: number; byKind: Record<string, number>; idlePerSecond: number }>;
  bytes: Record<'stateless' | 'thread', number>;
};

// Statement kinds, first match wins (pg_stat_statements' normalised text).
const INSIDE_ANOTHER = 'inside another statement (foreign-key checks): not a round trip';
const STATEMENT_KINDS: [kind: string, pattern: RegExp][] = [
  [INSIDE_ANOTHER, /^\s*SELECT 1 FROM ONLY .* FOR KEY SHARE OF x/i],
  ['transaction (BEGIN/COMMIT)', /^\s*(BEGIN|COMMIT|ROLLBACK|START TRANSACTION)\b/i],
  ['thread lock', /FOR UPDATE OF t\b/i],
  ['run insert (+ job, wake-up)', /INSERT INTO agent_runs/i],
  // The claim, alone or after pg-boss's fetch in the same statement (pg_stat_statements may show the
  // status literal as a parameter).
  ['run claim (+ job fetch, metadata event)', /attempt = attempt \+ 1/i],
  ['events + outcome', /run_events/i],
  ['status changes (runs, threads)', /UPDATE agent_(runs|threads)/i],
  ['checkpoint writes', /INSERT INTO "?langgraph"?\.|INSERT INTO checkpoint/i],
  ['checkpoint reads', /checkpoint/i],
  ['trace writes', /trace_runs|tracing_projects|trace_/i],
  ['queue (pg-boss)', /pgboss/i],
  ['LISTEN/NOTIFY', /^\s*(LISTEN|UNLISTEN|SELECT pg_notify)/i],
];
const kindOf = (query: string) => STATEMENT_KINDS.find(([, pattern]) => pattern.test(query))?.[0] ?? 'other';

async function statementsByKind(db: pg.Client): Promise<Map<string, number>> {
  const { rows } = await db.query<{ query: string; calls: number }>(
    `SELECT s.query, s.calls::int FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'`,
  );
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(kindOf(row.query), (counts.get(kindOf(row.query)) ?? 0) + row.calls);
  return counts;
}

/** Statements per run by kind: `runs` runs of `work`, minus the statements of as long idle (pollers, timers). */
async function countStatements(db: pg.Client, runs: number, work: () => Promise<void>): Promise<{ total: number; byKind: Record<string, number>; idlePerSecond: number }> {
  await db.query('SELECT pg_stat_statements_reset()');
  const started = performance.now();
  await work();
  const elapsed = performance.now() - started;
  const busy = await statementsByKind(db);
  if (process.env.BENCH_SHOW_STATEMENTS) {
    const { rows } = await db.query<{ query: string; calls: number; rows: number; ms: number }>(
      `SELECT s.query, s.calls::int, s.rows::int, s.total_exec_time::float8 AS ms FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() ORDER BY s.calls DESC LIMIT 40`,
    );
    // Mean execution time and rows per call beside the per-run figures: a statement whose mean grows
    // with the tables (a plan that scans what it should look up) shows here.
    console.error('  calls/run  ms/run  ms/call  rows/call  [kind] statement');
    for (const row of rows) {
      const perCall = `${(row.ms / row.calls).toFixed(3).padStart(7)}  ${(row.rows / row.calls).toFixed(1).padStart(9)}`;
      console.error(`  ${(row.calls / runs).toFixed(2).padStart(6)}  ${(row.ms / runs).toFixed(3).padStart(7)}  ${perCall}  [${kindOf(row.query)}] ${row.query.replace(/\s+/g, ' ').slice(0, 160)}`);
    }
  }
  await db.query('SELECT pg_stat_statements_reset()');
  await new Promise((resolve) => setTimeout(resolve, elapsed));
  const idle = await statementsByKind(db);
  if (process.env.BENCH_SHOW_STATEMENTS) {
    const { rows } = await db.query<{ query: string; calls: number }>(
      `SELECT s.query, s.calls::int FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() ORDER BY s.calls DESC LIMIT 15`,
    );
    console.error(`  idle for ${(elapsed / 1000).toFixed(1)} s, per second:`);
    for (const row of rows) console.error(`  ${(row.calls / (elapsed / 1000)).toFixed(2).padStart(6)}/s  [${kindOf(row.query)}] ${row.query.replace(/\s+/g, ' ').slice(0, 160)}`);
  }
  const byKind: Record<string, number> = {};
  for (const [kind, calls] of busy) {
    const perRun = (calls - (idle.get(kind) ?? 0)) / runs;
    if (Math.abs(perRun) >= 0.005) byKind[kind] = perRun;
  }
  const roundTrips = Object.entries(byKind).filter(([kind]) => kind !== INSIDE_ANOTHER);
  const idleTotal = [...idle].filter(([kind]) => kind !== INSIDE_ANOTHER).reduce((sum, [, calls]) => sum + calls, 0);
  return { total: roundTrips.reduce((sum, [, value]) => sum + value, 0), byKind, idlePerSecond: idleTotal / (elapsed / 1000) };
}

async function measureBreakdown(url: string, db: pg.Client, clientMeanMs: number, window: { from: string; to: string }): Promise<Breakdown> {
  // The latency samples' runs, from their own timestamps.
  const { rows: [span] } = await db.query<{ queue: number; execution: number }>(
    `SELECT avg(extract(epoch FROM started_at - created_at) * 1000)::float8 AS queue, avg(extract(epoch FROM ended_at - started_at) * 1000)::float8 AS execution
     FROM agent_runs WHERE created_at BETWEEN $1 AND $2 AND ended_at IS NOT NULL`,
    [window.from, window.to],
  );
  const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });
  const input = { steps: [] };
  const stateless = await countStatements(db, STATEMENT_RUNS, async () => {
    for (let i = 0; i < STATEMENT_RUNS; i++) await client.runs.wait(null, 'two_node', { input });
  });
  const thread = await client.threads.create();
  const threadStatements = await countStatements(db, STATEMENT_RUNS, async () => {
    for (let i = 0; i < STATEMENT_RUNS; i++) for await (const _ of client.runs.stream(thread.thread_id, 'two_node', { input, streamMode: 'updates' }));
  });
  // Bytes stored per run: its stream events and output, and for a thread run the checkpoints it wrote.
  const { rows: [statelessBytes] } = await db.query<{ bytes: number }>(
    `SELECT (avg(coalesce(octet_length(r.output::text), 0) + coalesce((SELECT sum(octet_length(e.data)) FROM run_events e WHERE e.run_id = r.id), 0)))::float8 AS bytes
     FROM agent_runs r WHERE created_at BETWEEN $1 AND $2`,
    [window.from, window.to],
  );
  const { rows: [threadBytes] } = await db.query<{ bytes: number }>(
    `SELECT ((SELECT sum(octet_length(r.output::text) + coalesce((SELECT sum(octet_length(e.data)) FROM run_events e WHERE e.run_id = r.id), 0)) FROM agent_runs r WHERE r.thread_id = $1)
           + (SELECT coalesce(sum(octet_length(checkpoint::text) + octet_length(metadata::text)), 0) FROM langgraph.checkpoints WHERE thread_id = $1::text)
           + (SELECT coalesce(sum(octet_length(blob)), 0) FROM langgraph.checkpoint_blobs WHERE thread_id = $1::text)
           + (SELECT coalesce(sum(octet_length(blob)), 0) FROM langgraph.checkpoint_writes WHERE thread_id = $1::text))::float8 / $2 AS bytes`,
    [thread.thread_id, STATEMENT_RUNS],
  );
  return {
    stages: { queueHandOffMs: span!.queue, executionMs: span!.execution, httpAndResponseMs: clientMeanMs - span!.queue - span!.execution },
    statements: { stateless, thread: threadStatements },
    bytes: { stateless: statelessBytes!.bytes, thread: threadBytes!.bytes },
  };
}

/** The serve process and its PostgreSQL's data folder, for the /proc readings; a profile folder when profiling. */
type Watched = { pid: number; postgresDir: string; profileDir?: string };

async function measure(name: string, url: string, db?: pg.Client, watched?: Watched, apiKey?: string): Promise<Figures & { breakdown?: Breakdown }> {
  const client = new Client({ apiUrl: url, apiKey, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
  const input = { steps: [] };
  for (let i = 0; i < 20; i++) await client.runs.wait(null, 'two_node', { input });

  const waits: number[] = [];
  const from = db ? (await db.query<{ now: string }>('SELECT clock_timestamp()::text AS now')).rows[0]!.now : '';
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    await client.runs.wait(null, 'two_node', { input });
    waits.push(performance.now() - started);
  }
  const to = db ? (await db.query<{ now: string }>('SELECT clock_timestamp()::text AS now')).rows[0]!.now : '';

  const firstEvents: number[] = [];
  for (let i = 0; i < Math.min(SAMPLES, 100); i++) {
    const thread = await client.threads.create();
    const started = performance.now();
    for await (const part of client.runs.stream(thread.thread_id, 'two_node', { input, streamMode: 'updates' })) {
      if (part.event === 'updates' && firstEvents.length === i) firstEvents.push(performance.now() - started);
    }
  }

  const before = watched && sampleProcesses(watched.pid, watched.postgresDir);
  const fromMicros = Number(process.hrtime.bigint() / 1000n);
  const { completed, failed, elapsed } = await throughput(client, SECONDS);
  const toMicros = Number(process.hrtime.bigint() / 1000n);
  const usage = watched && perRun(before!, sampleProcesses(watched.pid, watched.postgresDir), completed);
  if (watched?.profileDir) profileWindows.set(watched.profileDir, { fromMicros, toMicros, runs: completed });
  if (failed) console.error(`${name}: ${failed} runs failed under load`);
  const figures = { waitP50: percentile(waits, 50), waitP99: percentile(waits, 99), firstEventP50: percentile(firstEvents, 50), runsPerSecond: completed / elapsed, perRun: usage };
  const meanWait = waits.reduce((sum, value) => sum + value, 0) / waits.length;
  const breakdown = db ? await measureBreakdown(url, db, meanWait, { from, to }) : undefined;
  console.error(`${name}: ${JSON.stringify({ ...figures, breakdown })}`);
  return { ...figures, breakdown };
}

/** CONCURRENCY clients calling runs.wait back to back for `seconds` (the runs in flight then are waited for and counted). */
async function throughput(client: Client, seconds: number): Promise<{ completed: number; failed: number; elapsed: number }> {
  const input = { steps: [] };
  let completed = 0;
  let failed = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        try {
          await client.runs.wait(null, 'two_node', { input });
          completed++;
        } catch {
          failed++;
        }
      }
    }),
  );
  return { completed, failed, elapsed: (performance.now() - started) / 1000 };
}

type Paired = { serveP50: number; gatewayP50: number; serveRunsPerSecond: number; gatewayRunsPerSecond: number; ratios: number[] };

/**
 * serve and the gateway measured in turn while both run, so the machine's drift (its other load)
 * hits both alike: SAMPLES runs.wait of each, interleaved one by one, and PAIRS throughput windows
 * of PAIR_SECONDS each, alternating which goes first. The ratio is per pair of windows.
 */
async function measurePaired(serveUrl: string, gatewayUrl: string, apiKey: string): Promise<Paired> {
  const serve = new Client({ apiUrl: serveUrl, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
  const gateway = new Client({ apiUrl: gatewayUrl, apiKey, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
  const input = { steps: [] };
  const waits = { serve: [] as number[], gateway: [] as number[] };
  const timed = async (which: 'serve' | 'gateway') => {
    const started = performance.now();
    await (which === 'serve' ? serve : gateway).runs.wait(null, 'two_node', { input });
    waits[which].push(performance.now() - started);
  };
  for (let i = 0; i < SAMPLES; i++) {
    for (const which of i % 2 ? (['gateway', 'serve'] as const) : (['serve', 'gateway'] as const)) await timed(which);
  }
  const rates = { serve: [] as number[], gateway: [] as number[] };
  const ratios: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    const rate: Record<'serve' | 'gateway', number> = { serve: 0, gateway: 0 };
    for (const which of i % 2 ? (['gateway', 'serve'] as const) : (['serve', 'gateway'] as const)) {
      const { completed, failed, elapsed } = await throughput(which === 'serve' ? serve : gateway, PAIR_SECONDS);
      if (failed) console.error(`paired ${which}: ${failed} runs failed under load`);
      rate[which] = completed / elapsed;
      rates[which].push(rate[which]);
    }
    ratios.push(rate.gateway / rate.serve);
  }
  const paired = {
    serveP50: percentile(waits.serve, 50),
    gatewayP50: percentile(waits.gateway, 50),
    serveRunsPerSecond: percentile(rates.serve, 50),
    gatewayRunsPerSecond: percentile(rates.gateway, 50),
    ratios,
  };
  console.error(`paired: ${JSON.stringify({ ...paired, rates })}`);
  return paired;
}

/**
 * The connections the serve process holds (client backends, by database and application name), and what
 * it and its PostgreSQL do over IDLE_SECONDS with nothing to do (pollers, timers, pools that close and
 * reopen connections): CPU in ms per second, statements per second, connections opened.
 */
async function reportIdle(name: string, db: pg.Client, pid: number, postgresDir: string) {
  const backends = async () => {
    const { rows } = await db.query<{ datname: string; application_name: string; n: number }>(
      `SELECT datname, application_name, count(*)::int AS n FROM pg_stat_activity
       WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1, 2 ORDER BY 3 DESC`,
    );
    return `${rows.reduce((sum, row) => sum + row.n, 0)} (${rows.map((row) => `${row.datname.replace(/^agent_deployment_.*/, 'deployment')}/${row.application_name || '-'} ${row.n}`).join(', ')})`;
  };
  console.error(`${name}: client backends after load: ${await backends()}`);
  // Past what follows the load (timers armed by it, pools' idle timeouts), to the steady idle.
  await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_SECONDS * 1000));
  if (IDLE_SETTLE_SECONDS) console.error(`${name}: client backends after ${IDLE_SETTLE_SECONDS} s settling: ${await backends()}`);
  const statements = await db.query('SELECT pg_stat_statements_reset()').then(() => true, () => false);
  const from = (await db.query<{ now: string }>('SELECT clock_timestamp()::text AS now')).rows[0]!.now;
  const before = sampleProcesses(pid, postgresDir);
  const reapedBefore = reapedChildrenCpuSeconds(pid);
  const postgresBefore = postgresCpuByPid(postgresDir);
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const after = sampleProcesses(pid, postgresDir);
  const postgresAfter = postgresCpuByPid(postgresDir);
  const postgres = [...postgresAfter].reduce((sum, [backend, seconds]) => sum + seconds - (postgresBefore.get(backend) ?? 0), 0);
  const serveParts = [
    ...CPU_PARTS.slice(0, 4).map((part) => [part, after.cpuSeconds[part] - before.cpuSeconds[part]] as const),
    ...CHILD_PARTS.map((part) => [part, after.childCpuSeconds[part] - before.childCpuSeconds[part]] as const).filter(([, seconds]) => seconds > 0),
    ['commands it ran (du, git…)', reapedChildrenCpuSeconds(pid) - reapedBefore] as const,
  ];
  const serve = serveParts.reduce((sum, [, seconds]) => sum + seconds, 0);
  const perSecond = (seconds: number) => ((seconds * 1000) / IDLE_SECONDS).toFixed(2);
  console.error(
    `${name}: idle CPU over ${IDLE_SECONDS} s, ms/s: all ${perSecond(serve + postgres)}; serve process ${perSecond(serve)} (${serveParts.map(([part, seconds]) => `${part} ${perSecond(seconds)}`).join('; ')}); PostgreSQL ${perSecond(postgres)}`,
  );
  const { rows: [opened] } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND backend_start > $1`,
    [from],
  );
  console.error(`${name}: connections opened while idle: ${opened!.n}; client backends after ${IDLE_SECONDS} s idle: ${await backends()}`);
  if (!statements) return;
  const { rows } = await db.query<{ datname: string; query: string; calls: number; ms: number }>(
    `SELECT d.datname, s.query, s.calls::int, s.total_exec_time::float8 AS ms FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE s.query NOT LIKE '%pg_stat%' ORDER BY s.calls DESC LIMIT 25`,
  );
  const total = rows.reduce((sum, row) => sum + row.calls, 0);
  console.error(`${name}: statements while idle: ${(total / IDLE_SECONDS).toFixed(2)}/s`);
  for (const row of rows) console.error(`  ${(row.calls / IDLE_SECONDS).toFixed(2).padStart(6)}/s ${row.datname.replace(/^agent_deployment_.*/, 'deployment').padEnd(14)} ${row.query.replace(/\s+/g, ' ').slice(0, 150)}`);
}

/** Profile folders of the columns measured under --cpu-prof, with their throughput window. */
const profileWindows = new Map<string, { fromMicros: number; toMicros: number; runs: number }>();

async function inProcessRate(): Promise<{ msPerRun: number; runsPerSecond: number }> {
  for (let i = 0; i < 200; i++) await graph.invoke({ steps: [] });
  const runs = 2000;
  const started = performance.now();
  for (let i = 0; i < runs; i++) await graph.invoke({ steps: [] });
  const ms = performance.now() - started;
  return { msPerRun: ms / runs, runsPerSecond: (runs / ms) * 1000 };
}

/**
 * Measures one checkout's `serve` on its own embedded PostgreSQL, durable (checkpoints, events,
 * queue). It is started once to create the database, which is then told to preload
 * pg_stat_statements, and started again for the measurement.
 */
async function measurePlatform(name: string, checkout: string, tracing: boolean, then?: (url: string) => Promise<void>): Promise<Figures & { breakdown?: Breakdown }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-runs-'));
  chmodSync(dataDir, 0o711);
  const dataPath = join(dataDir, 'data');
  const profileDir = process.env.BENCH_CPU_PROF_DIR ? join(process.env.BENCH_CPU_PROF_DIR, name.replace(/[^a-z0-9]+/gi, '-')) : undefined;
  const start = async (profiled = false) => {
    const port = await freePort();
    const started = await startProcess(
      process.execPath,
      [join(checkout, 'bin/agent-platform.mjs'), 'serve', '--config', join(here, 'graphs/langgraph.json'), '--port', String(port), '--data-dir', dataPath],
      {
        cwd: checkout,
        env: {
          LOG_LEVEL: 'warn',
          DATABASE_URL: '',
          AGENT_SERVER_TRACING: String(tracing),
          ...(profiled && profileDir ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${profileDir}`.trim() } : {}),
        },
        ready: /running at http/,
      },
    );
    return { ...started, port };
  };
  try {
    const first = await start();
    const setup = await connectEmbedded(dataPath);
    await setup.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await setup.end();
    await stopProcess(first.child);
    const platform = await start(true);
    const db = await connectEmbedded(dataPath);
    try {
      await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      if (process.env.BENCH_IDLE_ONLY) {
        const client = new Client({ apiUrl: `http://127.0.0.1:${platform.port}`, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
        await throughput(client, 2);
        await reportIdle(name, db, platform.child.pid!, join(dataPath, 'postgres'));
        await then?.(`http://127.0.0.1:${platform.port}`);
        return { waitP50: NaN, waitP99: NaN, firstEventP50: NaN, runsPerSecond: NaN };
      }
      const figures = await measure(name, `http://127.0.0.1:${platform.port}`, db, { pid: platform.child.pid!, postgresDir: join(dataPath, 'postgres'), profileDir });
      await reportIdle(name, db, platform.child.pid!, join(dataPath, 'postgres'));
      // Still running (idle: its pollers only) while `then` measures something else, and against it.
      await then?.(`http://127.0.0.1:${platform.port}`);
      return figures;
    } finally {
      await db.end().catch(() => undefined);
      await stopProcess(platform.child);
      // The profiles are written as the process exits.
      const window = profileDir && profileWindows.get(profileDir);
      if (window) {
        console.log(`\nCPU profile of ${name}, throughput row only (${window.runs} runs; profiles in ${profileDir}):`);
        printSummaries(summarizeProfiles(profileDir!, window), window.runs);
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The same graph deployed through the control plane (startDeployedGraph: `start`, its own process and
 * embedded PostgreSQL, as `serve` is measured), called at /deployments/<id> through the gateway.
 */
async function measureGateway(then?: (url: string, apiKey: string) => Promise<void>): Promise<Figures> {
  // Under BENCH_CPU_PROF_DIR the platform's process (the gateway's side) is profiled; the deployment's does not inherit it.
  const profileDir = process.env.BENCH_CPU_PROF_DIR ? join(process.env.BENCH_CPU_PROF_DIR, 'gateway') : undefined;
  const deployed = await startDeployedGraph({ env: profileDir ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${profileDir}`.trim() } : {} });
  try {
    // The platform's process (the gateway), the deployment's agent server (its child) and PostgreSQL (both databases) are read from /proc.
    const watched = { pid: deployed.child.pid!, postgresDir: deployed.postgresDir, profileDir };
    if (process.env.BENCH_IDLE_ONLY) {
      // The platform with one deployment, idle: its process (and the deployment's agent server, its child) and PostgreSQL.
      const client = new Client({ apiUrl: deployed.deploymentUrl, apiKey: deployed.key, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
      await throughput(client, 2);
      const db = await connectEmbedded(deployed.dataDir);
      try {
        await reportIdle('platform with one deployment (gateway)', db, watched.pid, watched.postgresDir);
      } finally {
        await db.end();
      }
      return { waitP50: NaN, waitP99: NaN, firstEventP50: NaN, runsPerSecond: NaN };
    }
    const figures = await measure('gateway', deployed.deploymentUrl, undefined, watched, deployed.key);
    await then?.(deployed.deploymentUrl, deployed.key);
    return figures;
  } finally {
    await deployed.stop();
    const window = profileDir && profileWindows.get(profileDir);
    if (window) {
      console.log(`\nCPU profile of the platform's process behind the gateway, throughput row only (${window.runs} runs; profiles in ${profileDir}):`);
      printSummaries(summarizeProfiles(profileDir!, window), window.runs);
    }
  }
}

type Column = { key: string; title: string; figures?: Figures & { breakdown?: Breakdown } };

async function main() {
  const columns: Column[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  let paired: Paired | undefined;
  const loadBefore = loadavg();
  try {
    const checkouts: [label: string, key: string, root: string][] = BEFORE_ROOT ? [['before', 'before.', BEFORE_ROOT], ['after', '', root]] : [['', '', root]];
    // Paired: each tracing setting is measured before and after in turn, so drift hits both alike.
    // The gateway's column is measured while this checkout's serve (tracing off) still runs, idle, and
    // then the two in turn (measurePaired).
    let gateway: Column | undefined;
    for (const tracing of process.env.BENCH_SKIP_TRACING ? [false] : [false, true]) {
      for (const [label, key, checkout] of checkouts) {
        const title = `platform${label ? ` ${label}` : ''}, tracing ${tracing ? 'on' : 'off'}`;
        const withGateway = !process.env.BENCH_SKIP_GATEWAY && !tracing && checkout === root;
        const then = withGateway
          ? async (serveUrl: string) => {
              const figures = await measureGateway(async (gatewayUrl, apiKey) => void (paired = process.env.BENCH_IDLE_ONLY ? undefined : await measurePaired(serveUrl, gatewayUrl, apiKey)));
              gateway = { key: 'gateway', title: 'deployed, through the gateway, tracing off', figures };
            }
          : undefined;
        columns.push({ key: `${key}${tracing ? 'tracing_on' : 'tracing_off'}`, title, figures: await measurePlatform(title, checkout, tracing, then) });
        if (gateway && !columns.includes(gateway)) columns.push(gateway);
      }
    }

    if (!process.env.BENCH_SKIP_REFERENCE) {
      mkdirSync(join(referenceDir, 'graphs'), { recursive: true });
      copyFileSync(join(here, 'graphs/two-node.ts'), join(referenceDir, 'graphs/two-node.ts'));
      const referencePort = await freePort();
      const reference = await startReference(join(referenceDir, 'langgraph.json'), referencePort);
      cleanups.push(() => stopProcess(reference.child));
      // The dev server prints its banner before the graph has registered; wait until the API answers.
      const client = new Client({ apiUrl: `http://127.0.0.1:${referencePort}`, callerOptions: { maxRetries: 0 } });
      for (let i = 0; ; i++) {
        try {
          await client.assistants.search({ graphId: 'two_node' }).then((found) => {
            if (!found.length) throw new Error('not registered yet');
          });
          break;
        } catch (error) {
          if (i > 240) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
      columns.push({ key: 'reference', title: 'reference (langgraph-cli dev, in-memory)', figures: await measure('reference', `http://127.0.0.1:${referencePort}`) });
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
  const floor = await inProcessRate();
  const floorCpu = { plain: await floorCpuMicroseconds(false, 2000), durable: await floorCpuMicroseconds(true, 2000) };
  const loadAfter = loadavg();

  const cell = (value: number | undefined, unit: string, digits: number) => (value === undefined || Number.isNaN(value) ? '—' : `${value.toFixed(digits)}${unit ? ` ${unit}` : ''}`);
  const row = (label: string, unit: string, pick: (f: Figures & { breakdown?: Breakdown }) => number | undefined, digits = 1) =>
    `| ${label} | ${columns.map((column) => cell(column.figures ? pick(column.figures) : undefined, unit, digits)).join(' | ')} |`;
  const kinds = (which: 'stateless' | 'thread') => [
    ...new Set(columns.flatMap((column) => Object.keys(column.figures?.breakdown?.statements[which].byKind ?? {}))),
  ].sort();
  console.log('');
  console.log(`load average (1/5/15 min): before ${loadBefore.map((value) => value.toFixed(2)).join(' / ')}, after ${loadAfter.map((value) => value.toFixed(2)).join(' / ')}`);
  console.log('');
  console.log(`| two-node graph, official SDK (${SAMPLES} samples, ${SECONDS}s load) | ${columns.map((column) => column.title).join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---').join('|')}|`);
  console.log(row('stateless runs.wait p50', 'ms', (f) => f.waitP50));
  console.log(row('stateless runs.wait p99', 'ms', (f) => f.waitP99));
  console.log(row('first `updates` event of a thread stream, p50', 'ms', (f) => f.firstEventP50));
  console.log(row(`runs/s with ${CONCURRENCY} concurrent clients (runs.wait)`, 'runs/s', (f) => f.runsPerSecond));
  console.log(row('runs.wait stage: HTTP parse + response (mean)', 'ms', (f) => f.breakdown?.stages.httpAndResponseMs, 2));
  console.log(row('runs.wait stage: queue hand-off, created → claimed (mean)', 'ms', (f) => f.breakdown?.stages.queueHandOffMs, 2));
  console.log(row('runs.wait stage: graph + persistence, claimed → ended (mean)', 'ms', (f) => f.breakdown?.stages.executionMs, 2));
  console.log(row(`stateless runs/wait: round trips (statements) per run (${STATEMENT_RUNS} runs)`, '', (f) => f.breakdown?.statements.stateless.total, 2));
  for (const kind of kinds('stateless')) console.log(row(`  ${kind}`, '', (f) => f.breakdown?.statements.stateless.byKind[kind] ?? (f.breakdown ? 0 : undefined), 2));
  console.log(row(`thread runs/stream: round trips (statements) per run (${STATEMENT_RUNS} runs)`, '', (f) => f.breakdown?.statements.thread.total, 2));
  for (const kind of kinds('thread')) console.log(row(`  ${kind}`, '', (f) => f.breakdown?.statements.thread.byKind[kind] ?? (f.breakdown ? 0 : undefined), 2));
  console.log(row('background statements per second while idle (pollers, timers)', '/s', (f) => f.breakdown ? (f.breakdown.statements.stateless.idlePerSecond + f.breakdown.statements.thread.idlePerSecond) / 2 : undefined, 2));
  for (const part of CPU_PARTS) console.log(row(`CPU per run under load: ${part}`, 'µs', (f) => f.perRun?.cpuMicroseconds[part], 0));
  // A deployed revision's agent server: the gateway column's child process (none in serve's).
  const deployedColumn = columns.some((column) => Object.values(column.figures?.perRun?.childCpuMicroseconds ?? {}).some((value) => value > 0));
  if (deployedColumn) console.log(row(`  of which the deployment's database`, 'µs', (f) => f.perRun?.deploymentDatabaseMicroseconds, 0));
  if (deployedColumn) for (const part of CHILD_PARTS) console.log(row(`CPU per run under load: ${part}`, 'µs', (f) => f.perRun?.childCpuMicroseconds[part], 0));
  const sum = (values: Record<string, number>) => Object.values(values).reduce((total, value) => total + value, 0);
  const allCpu = (f: Figures) => (f.perRun ? sum(f.perRun.cpuMicroseconds) + sum(f.perRun.childCpuMicroseconds) : undefined);
  console.log(row('CPU per run under load: all', 'µs', allCpu, 0));
  console.log(row(`CPU per run under load: all × the floor (${floorCpu.durable.toFixed(0)} µs: the graph in-process with a MemorySaver)`, '×', (f) => (allCpu(f) ?? NaN) / floorCpu.durable, 2));
  for (const part of WAIT_PARTS) {
    if (part !== WAIT_PARTS[2] || deployedColumn) console.log(row(`waiting for a core per run under load: ${part}`, 'µs', (f) => f.perRun?.waitMicroseconds[part], 0));
  }
  console.log(row('bytes read per run by the serve process (HTTP, PostgreSQL wire)', 'B', (f) => f.perRun?.serveReadBytes, 0));
  console.log(row('bytes written per run by the serve process (HTTP, PostgreSQL wire)', 'B', (f) => f.perRun?.serveWrittenBytes, 0));
  console.log(row('bytes stored per stateless run (events, output)', 'B', (f) => f.breakdown?.bytes.stateless, 0));
  console.log(row('bytes stored per thread run (events, output, checkpoints)', 'B', (f) => f.breakdown?.bytes.thread, 0));
  const serveOff = columns.find((column) => column.key === 'tracing_off')?.figures;
  const gateway = columns.find((column) => column.key === 'gateway')?.figures;
  if (serveOff && gateway) {
    console.log(
      `| through the gateway vs serve (tracing off) | runs.wait p50 ${(gateway.waitP50 - serveOff.waitP50 >= 0 ? '+' : '')}${(gateway.waitP50 - serveOff.waitP50).toFixed(2)} ms, runs/s ×${(gateway.runsPerSecond / serveOff.runsPerSecond).toFixed(2)} |${columns.slice(1).map(() => ' |').join('')}`,
    );
  }
  if (paired) {
    const ratios = [...paired.ratios].sort((a, b) => a - b);
    const delta = paired.gatewayP50 - paired.serveP50;
    console.log(
      `| through the gateway vs serve, paired (both running: ${SAMPLES} interleaved runs.wait each, ${PAIRS} alternating ${PAIR_SECONDS}s windows each) | runs.wait p50 ${paired.serveP50.toFixed(1)} vs ${paired.gatewayP50.toFixed(1)} ms (${delta >= 0 ? '+' : ''}${delta.toFixed(2)} ms), runs/s ${paired.serveRunsPerSecond.toFixed(1)} vs ${paired.gatewayRunsPerSecond.toFixed(1)} (median window), ×${percentile(ratios, 50).toFixed(2)} (median of pairs; ${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)}) |${columns.slice(1).map(() => ' |').join('')}`,
    );
  }
  console.log(`| in-process graph.invoke (the floor) | ${floor.msPerRun.toFixed(2)} ms/run = ${floor.runsPerSecond.toFixed(0)} runs/s; CPU ${floorCpu.plain.toFixed(0)} µs/run, ${floorCpu.durable.toFixed(0)} µs/run with a MemorySaver |${columns.slice(1).map(() => ' |').join('')}`);
  console.log('');

  if (JSON_FILE) {
    // Flat, so a before/after comparison is a diff of two files: { name: { value, unit, floor?, reference? } }.
    type Figure = { value: number; unit: string; floor?: number; reference?: number };
    const out: Record<string, Figure> = { 'runs.in_process_floor': { value: floor.runsPerSecond, unit: 'runs/s' } };
    const reference = columns.find((column) => column.key === 'reference')?.figures;
    const put = (name: string, value: number | undefined, unit: string, extra: Omit<Figure, 'value' | 'unit'> = {}) => {
      if (value !== undefined && !Number.isNaN(value)) out[name] = { value, unit, ...Object.fromEntries(Object.entries(extra).filter(([, v]) => v !== undefined)) };
    };
    for (const { key, figures } of columns) {
      if (!figures || key === 'reference') continue;
      const p = `runs.${key}`;
      put(`${p}.wait_p50`, figures.waitP50, 'ms', { floor: floor.msPerRun, reference: reference?.waitP50 });
      put(`${p}.wait_p99`, figures.waitP99, 'ms', { reference: reference?.waitP99 });
      put(`${p}.first_event_p50`, figures.firstEventP50, 'ms', { reference: reference?.firstEventP50 });
      put(`${p}.runs_per_second`, figures.runsPerSecond, 'runs/s', { floor: floor.runsPerSecond, reference: reference?.runsPerSecond });
      const breakdown = figures.breakdown;
      if (!breakdown) continue;
      put(`${p}.stage_http_and_response`, breakdown.stages.httpAndResponseMs, 'ms');
      put(`${p}.stage_queue_hand_off`, breakdown.stages.queueHandOffMs, 'ms');
      put(`${p}.stage_graph_and_persistence`, breakdown.stages.executionMs, 'ms');
      put(`${p}.statements_per_stateless_run`, breakdown.statements.stateless.total, 'statements');
      put(`${p}.statements_per_thread_run`, breakdown.statements.thread.total, 'statements');
      put(`${p}.idle_statements_per_second`, (breakdown.statements.stateless.idlePerSecond + breakdown.statements.thread.idlePerSecond) / 2, 'statements/s');
      put(`${p}.bytes_per_stateless_run`, breakdown.bytes.stateless, 'bytes');
      put(`${p}.bytes_per_thread_run`, breakdown.bytes.thread, 'bytes');
      if (figures.perRun) {
        for (const part of CPU_PARTS) put(`${p}.cpu_per_run.${part.split(' (')[0]!.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`, figures.perRun.cpuMicroseconds[part], 'µs');
        put(`${p}.serve_bytes_read_per_run`, figures.perRun.serveReadBytes, 'bytes');
        put(`${p}.serve_bytes_written_per_run`, figures.perRun.serveWrittenBytes, 'bytes');
      }
    }
    const tracingOn = out['runs.tracing_on.runs_per_second'];
    if (tracingOn && out['runs.tracing_off.runs_per_second']) tracingOn.reference = out['runs.tracing_off.runs_per_second'].value;
    if (paired) {
      out['runs.paired.wait_p50_delta'] = { value: paired.gatewayP50 - paired.serveP50, unit: 'ms' };
      out['runs.paired.runs_per_second_ratio'] = { value: percentile(paired.ratios, 50), unit: 'ratio' };
    }
    out['runs.load_average_1m'] = { value: (loadBefore[0]! + loadAfter[0]!) / 2, unit: 'load' };
    writeFileSync(JSON_FILE, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`figures written to ${JSON_FILE}`);
  }
}

await main();
process.exit(0);
