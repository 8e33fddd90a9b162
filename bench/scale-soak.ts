// bench:scale --soak-minutes N — does everything written for runs on threads expire? A real `serve`
// process (its graph config sets `checkpointer.ttl`: threads without a TTL are deleted a minute after
// their last update, swept every minute; finished queue jobs are kept 60 s) on its own embedded
// PostgreSQL, while a few clients run runs on threads continuously (a new thread every few runs). Every
// minute it prints the rows and total size (heap, indexes, TOAST) of each table a run writes to (in
// its agent server's own database); at the
// end, whether the sizes stayed flat over the second half of the soak. Tracing is off: trace runs are
// kept for days by their own retention (dropped by week partitions), not by the thread TTL.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { createDeps } from '../src/wiring.js';
import { createSecretBox } from '../src/crypto.js';
import { deploymentDatabaseUrl } from '../src/platform/services/deployments/deployment-database.js';

const here = new URL('.', import.meta.url).pathname;
const root = new URL('..', import.meta.url).pathname;

const CLIENTS = 4;
const RUNS_PER_THREAD = 3;
const TABLES = [
  'public.agent_threads',
  'public.agent_runs',
  'public.run_events',
  'langgraph.checkpoints',
  'langgraph.checkpoint_blobs',
  'langgraph.checkpoint_writes',
  'pgboss.job',
];

const load = () => loadavg().map((value) => value.toFixed(2)).join(' ');

export async function soak(minutes: number): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-soak-'));
  chmodSync(dataDir, 0o711);
  // Its own embedded PostgreSQL, which the serve process shares.
  const config = loadConfig({}, { AGENT_PLATFORM_DATA_DIR: join(dataDir, 'db'), AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'warn' });
  const wiring = await createDeps(config, pino({ level: 'warn' }), {});
  const configPath = join(dataDir, 'langgraph.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      graphs: { two_node: join(here, 'graphs/two-node.ts:graph') },
      checkpointer: { ttl: { strategy: 'delete', default_ttl: 1, sweep_interval_minutes: 1 } },
    }),
  );
  let server: ChildProcess | undefined;
  let stats: pg.Pool | undefined;
  try {
    // serve's platform on the embedded server's platform database; its agent server (runs, threads,
    // checkpoints, queue) on a database of its own there, made by the embedded admin login.
    const secretKey = randomBytes(32).toString('base64');
    const adminUrl = new URL(wiring.deps.db.url);
    adminUrl.username = 'agent_platform_admin';
    adminUrl.password = readFileSync(join(config.dataDir, 'admin-login-password'), 'utf8').trim();
    const { child, url, deploymentId } = await startServe(configPath, dataDir, wiring.deps.db.url, adminUrl.toString(), secretKey);
    server = child;
    stats = new pg.Pool({ connectionString: deploymentDatabaseUrl(wiring.deps.db.url, createSecretBox(Buffer.from(secretKey, 'base64')), deploymentId), max: 1 });
    console.log(`bench:scale soak — ${minutes} min, ${CLIENTS} clients, ${RUNS_PER_THREAD} runs per thread, thread TTL 1 min (langgraph.json), jobs kept 60 s; load ${load()}`);
    const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });
    let runs = 0;
    let failures = 0;
    let stopping = false;
    const workers = Array.from({ length: CLIENTS }, async () => {
      while (!stopping) {
        try {
          const thread = await client.threads.create();
          for (let i = 0; i < RUNS_PER_THREAD && !stopping; i++) {
            await client.runs.wait(thread.thread_id, 'two_node', { input: { steps: [] } });
            runs++;
          }
        } catch {
          failures++;
        }
      }
    });

    const header = ['minute', 'runs', 'load', ...TABLES.map((table) => table.replace(/^public\./, ''))];
    console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
    const sizes: number[][] = [];
    for (let minute = 1; minute <= minutes; minute++) {
      await new Promise((resolve) => setTimeout(resolve, 60_000));
      const row: string[] = [];
      const bytes: number[] = [];
      for (const table of TABLES) {
        // Summed over partitions (pg-boss's job table is partitioned by queue); pg_partition_tree lists
        // nothing for a plain table, which is its own size.
        const { rows } = await stats.query<{ rows: string; bytes: string }>(
          `SELECT count(*) AS rows, COALESCE((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('${table}')), pg_total_relation_size('${table}')) AS bytes FROM ${table}`,
        );
        row.push(`${Number(rows[0]!.rows).toLocaleString('en')} rows, ${(Number(rows[0]!.bytes) / 1024).toFixed(0)} kB`);
        bytes.push(Number(rows[0]!.bytes));
      }
      sizes.push(bytes);
      console.log(`| ${minute} | ${runs.toLocaleString('en')} | ${load()} | ${row.join(' | ')} |`);
    }
    stopping = true;
    await Promise.all(workers);

    // Flat: the second half's peak size is at most a fifth above the first half's peak. (A table's
    // size at any one minute swings with what the sweep just deleted and vacuum truncated, so a single
    // minute, such as the half, is no baseline.)
    const half = Math.floor(minutes / 2);
    if (minutes >= 4) {
      const verdicts = TABLES.map((table, index) => {
        const first = Math.max(...sizes.slice(0, half).map((size) => size[index]!));
        const second = Math.max(...sizes.slice(half).map((size) => size[index]!));
        return `${table}: peak ${(first / 1024).toFixed(0)} kB in minutes 1–${half}, ${(second / 1024).toFixed(0)} kB in ${half + 1}–${minutes} (${second <= first * 1.2 ? 'flat' : 'GROWS'})`;
      });
      console.log(`\nsizes, first half against second:\n  ${verdicts.join('\n  ')}`);
    }
    console.log(`\n${runs.toLocaleString('en')} runs, ${failures} failed calls; load ${load()}`);
  } finally {
    await stats?.end();
    if (server) await stop(server);
    await wiring.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function startServe(configPath: string, dataDir: string, databaseUrl: string, adminDatabaseUrl: string, secretKey: string): Promise<{ child: ChildProcess; url: string; deploymentId: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/agent-platform.mjs'), 'serve', '--config', configPath, '--port', '0', '--data-dir', join(dataDir, 'serve')], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      AGENT_PLATFORM_ADMIN_DATABASE_URL: adminDatabaseUrl,
      AGENT_PLATFORM_SECRET_KEY: secretKey,
      AGENT_PLATFORM_JOB_RETENTION_SECONDS: '60',
      AGENT_SERVER_TRACING: 'false',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve not ready in 180 s:\n${output}`)), 180_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /deployment ([0-9a-f-]{36})\) running at (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, url: match[2]!, deploymentId: match[1]! });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve exited (${code}):\n${output}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
