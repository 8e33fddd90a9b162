// npm run bench:runs — the agent server side by side with the reference in-memory server
// (`@langchain/langgraph-cli dev`, installed in bench/reference), both serving the same trivial
// two-node graph and driven through the official SDK, plus LangGraph's own in-process invoke rate
// (the floor). Prints a table; asserts nothing about time.
//
//   BENCH_SAMPLES (default 200)   sequential samples for the latency rows
//   BENCH_SECONDS (default 10)    duration of the 32-client throughput row
//   BENCH_SKIP_REFERENCE=1        measure the platform only
//   BENCH_SKIP_TRACING=1          skip the second platform column (tracing on)
//
// The platform is measured twice: with tracing off (like-for-like with the reference, which traces
// nothing) and with tracing on, as `serve` runs by default (every run stored as a trace tree).
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { graph } from './graphs/two-node.js';
import { freePort, startProcess, stopProcess } from './processes.js';

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = 32;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

type Figures = { waitP50: number; waitP99: number; firstEventP50: number; runsPerSecond: number };

async function measure(name: string, url: string): Promise<Figures> {
  const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0, maxConcurrency: CONCURRENCY * 2 } });
  const input = { steps: [] };
  for (let i = 0; i < 20; i++) await client.runs.wait(null, 'two_node', { input });

  const waits: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    await client.runs.wait(null, 'two_node', { input });
    waits.push(performance.now() - started);
  }

  const firstEvents: number[] = [];
  for (let i = 0; i < Math.min(SAMPLES, 100); i++) {
    const thread = await client.threads.create();
    const started = performance.now();
    for await (const part of client.runs.stream(thread.thread_id, 'two_node', { input, streamMode: 'updates' })) {
      if (part.event === 'updates' && firstEvents.length === i) firstEvents.push(performance.now() - started);
    }
  }

  let completed = 0;
  let failed = 0;
  const deadline = performance.now() + SECONDS * 1000;
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
  const elapsed = (performance.now() - started) / 1000;
  if (failed) console.error(`${name}: ${failed} runs failed under load`);
  const figures = { waitP50: percentile(waits, 50), waitP99: percentile(waits, 99), firstEventP50: percentile(firstEvents, 50), runsPerSecond: completed / elapsed };
  console.error(`${name}: ${JSON.stringify(figures)}`);
  return figures;
}

async function inProcessRate(): Promise<{ msPerRun: number; runsPerSecond: number }> {
  for (let i = 0; i < 200; i++) await graph.invoke({ steps: [] });
  const runs = 2000;
  const started = performance.now();
  for (let i = 0; i < runs; i++) await graph.invoke({ steps: [] });
  const ms = performance.now() - started;
  return { msPerRun: ms / runs, runsPerSecond: (runs / ms) * 1000 };
}

async function main() {
  const results: Record<string, Figures> = {};
  const cleanups: (() => Promise<void>)[] = [];
  try {
    // The platform: `serve` on its own embedded PostgreSQL, durable (checkpoints, events, queue).
    for (const tracing of process.env.BENCH_SKIP_TRACING ? [false] : [false, true]) {
      const dataDir = mkdtempSync(join(tmpdir(), 'bench-runs-'));
      chmodSync(dataDir, 0o711);
      const platformPort = await freePort();
      const platform = await startProcess(
        process.execPath,
        [join(root, 'bin/agent-platform.mjs'), 'serve', '--config', join(here, 'graphs/langgraph.json'), '--port', String(platformPort), '--data-dir', join(dataDir, 'data')],
        { cwd: root, env: { LOG_LEVEL: 'warn', DATABASE_URL: '', AGENT_SERVER_TRACING: String(tracing) }, ready: /running at http/ },
      );
      try {
        results[tracing ? 'platformTraced' : 'platform'] = await measure(tracing ? 'platform (tracing on)' : 'platform', `http://127.0.0.1:${platformPort}`);
      } finally {
        await stopProcess(platform.child);
        rmSync(dataDir, { recursive: true, force: true });
      }
    }

    if (!process.env.BENCH_SKIP_REFERENCE) {
      const referenceDir = join(here, 'reference');
      if (!existsSync(join(referenceDir, 'node_modules/@langchain/langgraph-cli'))) {
        // The reference server has its own folder and lockfile (its peer dependencies clash with ours).
        console.log('Installing the reference server from bench/reference/package-lock.json (npm ci, once)…');
        const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: referenceDir, stdio: 'inherit' });
        if (install.status !== 0) throw new Error(`npm ci in bench/reference failed (exit ${install.status ?? install.signal})`);
      }
      mkdirSync(join(referenceDir, 'graphs'), { recursive: true });
      copyFileSync(join(here, 'graphs/two-node.ts'), join(referenceDir, 'graphs/two-node.ts'));
      const referencePort = await freePort();
      const reference = await startProcess(
        join(referenceDir, 'node_modules/.bin/langgraphjs'),
        ['dev', '--port', String(referencePort), '--host', '127.0.0.1', '--no-browser', '--config', join(referenceDir, 'langgraph.json')],
        { cwd: referenceDir, env: { LANGSMITH_TRACING: 'false', LANGCHAIN_TRACING_V2: 'false' }, ready: /Server running at|Starting \d+ workers|localhost:\d+|127\.0\.0\.1:\d+/ },
      );
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
      results.reference = await measure('reference', `http://127.0.0.1:${referencePort}`);
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
  const floor = await inProcessRate();

  const cell = (figures: Figures | undefined, pick: (f: Figures) => number, unit: string, digits: number) => (figures ? `${pick(figures).toFixed(digits)} ${unit}` : '—');
  const row = (label: string, unit: string, pick: (f: Figures) => number, digits = 1) =>
    `| ${label} | ${[results.platform, results.platformTraced, results.reference].map((f) => cell(f, pick, unit, digits)).join(' | ')} |`;
  console.log('');
  console.log(
    `| two-node graph, official SDK (${SAMPLES} samples, ${SECONDS}s load) | platform, tracing off (Postgres, durable) | platform, tracing on (as served) | reference (langgraph-cli dev, in-memory) |`,
  );
  console.log('|---|---|---|---|');
  console.log(row('stateless runs.wait p50', 'ms', (f) => f.waitP50));
  console.log(row('stateless runs.wait p99', 'ms', (f) => f.waitP99));
  console.log(row('first `updates` event of a thread stream, p50', 'ms', (f) => f.firstEventP50));
  console.log(row(`runs/s with ${CONCURRENCY} concurrent clients (runs.wait)`, 'runs/s', (f) => f.runsPerSecond));
  console.log(`| in-process graph.invoke (the floor) | ${floor.msPerRun.toFixed(2)} ms/run = ${floor.runsPerSecond.toFixed(0)} runs/s | | |`);
  console.log('');
}

await main();
process.exit(0);
