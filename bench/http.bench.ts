// `npm run bench:http`: requests/s and latency of an authenticated GraphQL query and an authenticated
// REST GET, over loopback, against a real platform (embedded PostgreSQL in a temp dir, migrations,
// event bus, job queue, HTTP server) started in this process the way `agent-platform start` does.
// It measures; it asserts nothing about time. Options: --duration <s> (default 10), --connections <n>
// (default 16).
//
// Where the load comes from: a worker thread (autocannon's own `workers: 1` mode). Generating load on
// the server's own event loop would steal the time it is measuring; a second process would work too,
// but a worker thread keeps this one command self-contained and still gives the client its own core.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { Pool } from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { startPlatform } from '../src/start.js';
import { createBenchTenant } from './tenant.js';

// autocannon ships no type declarations: type the small part used here.
type Histogram = { average: number; p50: number; p99: number; max: number };
type AutocannonResult = {
  requests: Histogram & { total: number };
  latency: Histogram;
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
};
type AutocannonOptions = {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
  workers?: number;
};
const autocannon = createRequire(import.meta.url)('autocannon') as (options: AutocannonOptions) => Promise<AutocannonResult>;

const { values: args } = parseArgs({
  options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '16' } },
});
const DURATION_S = Number(args.duration);
const CONNECTIONS = Number(args.connections);
const WARMUP_S = Math.min(2, DURATION_S);

const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-'));
// Production-like: default pool size and log level (request logs put 2xx at debug, so no line per request).
const config = loadConfig(
  {},
  {
    AGENT_PLATFORM_DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
  },
);
const logger = pino({ level: config.logLevel });

type Target = { name: string; path: string; method: 'GET' | 'POST'; body?: string; check: (body: any) => boolean };

async function main() {
  console.log(`starting the platform (embedded PostgreSQL in ${dataDir}) …`);
  const platform = await startPlatform(config, logger);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stop().finally(() => process.exit(130)));

  try {
    const url = platform.url!;
    const { workspace, user, key } = await createBenchTenant(platform.deps);

    const targets: Target[] = [
      {
        name: 'GraphQL viewer (POST /graphql)',
        path: '/graphql',
        method: 'POST',
        body: JSON.stringify({ query: '{ viewer { user { email } workspaces { id } } }' }),
        check: (body) => body?.data?.viewer?.user?.email === user.email && body.data.viewer.workspaces?.[0]?.id === workspace.id,
      },
      {
        name: 'REST GET /api/v1/workspaces',
        path: '/api/v1/workspaces',
        method: 'GET',
        check: (body) => Array.isArray(body) && body.length === 1 && body[0].id === workspace.id,
      },
    ];
    const headers = { 'content-type': 'application/json', 'x-api-key': key };

    const rows: string[][] = [];
    for (const target of targets) {
      // A benchmark of error responses would be meaningless: check the answer once first.
      const probe = await fetch(`${url}${target.path}`, { method: target.method, headers, body: target.body });
      const probeBody = await probe.json();
      if (probe.status !== 200 || !target.check(probeBody)) {
        throw new Error(`${target.name}: unexpected answer ${probe.status} ${JSON.stringify(probeBody)}`);
      }
      const options = { url: `${url}${target.path}`, method: target.method, headers, body: target.body, connections: CONNECTIONS, workers: 1 };
      process.stdout.write(`${target.name}: warming up ${WARMUP_S} s, measuring ${DURATION_S} s …\n`);
      await autocannon({ ...options, duration: WARMUP_S });
      await settle(platform.deps.db.pool);
      const result = await autocannon({ ...options, duration: DURATION_S });
      await settle(platform.deps.db.pool);
      rows.push([
        target.name,
        Math.round(result.requests.total / result.duration).toLocaleString('en-US'),
        result.latency.p50.toFixed(1),
        result.latency.p99.toFixed(1),
        String(result.non2xx + result.errors + result.timeouts),
      ]);
    }

    console.log('');
    console.log(`machine: ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}`);
    console.log(`load: autocannon in a worker thread, ${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARMUP_S} s warm-up, loopback`);
    console.log(`server: one process, DB pool ${config.dbPoolSize}, embedded PostgreSQL on the same machine`);
    console.log('');
    printTable(['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx/errors'], rows);
  } finally {
    await stop();
  }
}

/**
 * Waits until the server has finished the requests autocannon abandoned when it closed its sockets:
 * their handlers still run, and would otherwise bleed into the next measurement or hit a closed pool
 * at shutdown. No event marks that moment, so the database pool is watched until it stays idle.
 */
async function settle(pool: Pool) {
  const deadline = Date.now() + 5_000;
  let quietPolls = 0;
  while (quietPolls < 5 && Date.now() < deadline) {
    await delay(20);
    quietPolls = pool.waitingCount === 0 && pool.idleCount === pool.totalCount ? quietPolls + 1 : 0;
  }
}

function printTable(header: string[], rows: string[][]) {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of rows) console.log(line(row));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
