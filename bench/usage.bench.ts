// `npm run bench:usage`: the Usage API at size. Loads N traces (default 10 million) across 50
// projects, 20 users and 10 API keys over 2 years straight into trace_runs with generate_series (root
// runs with the columns usage reads), rebuilds the rollups from them as `admin usage rebuild` does,
// then measures over HTTP: p50/p99 of the JSON endpoint for one-year ranges per group_by, and the
// 2-year CSV export's time and the server's peak RSS while it streams. Prints figures; asserts
// nothing about time (it does check that the rollups count every loaded trace).
//
// Options: --traces <n> (default 10000000; e.g. --traces 200000 for a quick check), --requests <n>
// (JSON requests per group_by, default 200), --days <n> (span of the data, default 730), --explain
// (print EXPLAIN ANALYZE of the first measured query of each group_by).
import { randomUUID } from 'node:crypto';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createBenchTenant, startBenchPlatform } from './tenant.js';
import { insertClaimingIdsSql } from '../src/platform/ingest/ingest.store.js';

const PROJECTS = 50;
const USERS = 20;
const KEYS = 10;
const DAY_MS = 86_400_000;
const LOAD_CHUNK = 1_000_000;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** Prints the plan of the first usage read of each group_by (the store's named statements). */
function explainUsageQueries(pool: import('pg').Pool) {
  const query = pool.query.bind(pool) as (config: unknown, values?: unknown) => Promise<{ rows: Record<string, string>[] }>;
  const explained = new Set<string>();
  (pool as unknown as { query: typeof query }).query = async (config, values) => {
    const statement = config as { name?: string; text?: string; values?: unknown[] };
    if (statement?.name?.startsWith('usage.select_') && !explained.has(statement.name)) {
      explained.add(statement.name);
      const plan = await query({ text: `EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`, values: statement.values });
      console.log(`${statement.name}:\n${plan.rows.map((row) => row['QUERY PLAN']).join('\n')}\n`);
    }
    return query(config, values);
  };
}

async function main() {
  const { values: args } = parseArgs({
    options: {
      traces: { type: 'string', default: '10000000' },
      requests: { type: 'string', default: '200' },
      days: { type: 'string', default: '730' },
      explain: { type: 'boolean', default: false },
    },
  });
  const TRACES = Number(args.traces);
  const REQUESTS = Number(args.requests);
  const DAYS = Number(args.days);
  // Whole UTC days ending at today's midnight; the data start date is the first of them.
  const end = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const start = end - DAYS * DAY_MS;

  const tenancy = await import('../src/platform/services/tenancy/tenancy.service.js');
  const apiKeys = await import('../src/platform/services/tenancy/api-keys.service.js');
  const { SYSTEM_VIEWER } = await import('../src/viewer.js');
  const { resolveProjectIds } = await import('../src/platform/services/traces/projects.service.js');
  const { rebuildUsageRollups } = await import('../src/platform/services/usage/usage.service.js');

  const platform = await startBenchPlatform({ AGENT_PLATFORM_ROLES: 'api', AGENT_PLATFORM_USAGE_DATA_START: new Date(start).toISOString() });
  const pool = platform.deps.db.pool;
  try {
    const { organization, workspace, key } = await createBenchTenant(platform.deps);
    const system = { ...platform.deps, viewer: SYSTEM_VIEWER };
    const users = [];
    const keyIds = [];
    for (let i = 0; i < USERS; i++) {
      const user = await tenancy.createUser(system, {
        organizationId: organization.id,
        email: `bench-user-${i}-${randomUUID().slice(0, 6)}@example.test`,
        organizationRole: 'ORGANIZATION_MEMBER',
        workspaces: [{ workspaceId: workspace.id, role: 'WORKSPACE_EDITOR' }],
      });
      users.push(user.id);
      if (i < KEYS) keyIds.push((await apiKeys.createApiKey(system, { organizationId: organization.id, userId: user.id, workspaceId: null })).apiKey.id);
    }
    const projects = await resolveProjectIds(pool, workspace.id, { ids: [], names: Array.from({ length: PROJECTS }, (_, i) => `bench-project-${i}`) });
    const projectIds = [...projects.byName.values()];

    // ── load: root runs spread evenly over the span, each with a project, user and key drawn
    // independently (a seeded hash of the row number), so every combination occurs ──
    const pick = (seed: number, n: string) => `((hashint8extended(g, ${seed}) & 2147483647) % ${n})::int`;
    console.log(`loading ${fmt(TRACES)} traces over ${DAYS} days into trace_runs (generate_series, ${fmt(LOAD_CHUNK)} per statement) …`);
    const loadStarted = performance.now();
    for (let from = 1; from <= TRACES; from += LOAD_CHUNK) {
      const to = Math.min(TRACES, from + LOAD_CHUNK - 1);
      await pool.query(
        insertClaimingIdsSql(`INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order, api_key_id, user_id)
         SELECT $1::uuid, r.id, ($2::uuid[])[1 + ${pick(1, '$7')}], r.id, 'bench', 'chain', r.start_time, 'success', true, 'bench',
                ($3::uuid[])[1 + ${pick(2, '$8')}], ($4::uuid[])[1 + ${pick(3, '$9')}]
           FROM generate_series($5::bigint, $6::bigint) AS g,
                LATERAL (SELECT gen_random_uuid() AS id,
                                to_timestamp($10::float8 + (g - 1) * $11::float8) AS start_time) AS r`),
        [workspace.id, projectIds, keyIds, users, from, to, PROJECTS, KEYS, USERS, start / 1000, (DAYS * 86_400) / TRACES],
      );
      process.stdout.write(`  ${fmt(to)} rows, ${fmt(to / ((performance.now() - loadStarted) / 1000))} rows/s\r`);
    }
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    console.log('');
    console.log('rebuilding the rollups from trace_runs (admin usage rebuild) …');
    const rebuildStarted = performance.now();
    const rebuilt = await rebuildUsageRollups(system);
    const rebuildSeconds = (performance.now() - rebuildStarted) / 1000;
    // As autovacuum would after a bulk change: fresh statistics and visibility map.
    await pool.query('VACUUM ANALYZE usage_hourly_rollups, usage_daily_rollups');
    if (rebuilt.traces < TRACES) throw new Error(`rollups count ${rebuilt.traces} traces, ${TRACES} were loaded`);

    if (args.explain) explainUsageQueries(pool);

    // ── JSON endpoint: one-year ranges at random starts within the span ──
    const get = async (path: string, query: string) => {
      const response = await fetch(`${platform.url}/api/v1/orgs/current/billing/${path}?${query}`, { headers: { 'x-api-key': key } });
      const body = await response.text();
      if (response.status !== 200) throw new Error(`${response.status} ${body}`);
      return body;
    };
    const yearQuery = (groupBy: string) => {
      const offsetDays = Math.floor(Math.random() * Math.max(1, DAYS - 365));
      const from = new Date(start + offsetDays * DAY_MS + Math.floor(Math.random() * 24) * 3_600_000);
      const to = new Date(from.getTime() + 365 * DAY_MS);
      return `start_time=${from.toISOString()}&end_time=${to.toISOString()}&workspace_ids=${workspace.id}&group_by=${groupBy}`;
    };
    const json: { groupBy: string; p50: number; p99: number; rows: number }[] = [];
    for (const groupBy of ['workspace', 'project', 'user', 'api_key']) {
      for (let i = 0; i < 10; i++) await get('granular-usage', yearQuery(groupBy));
      const latencies: number[] = [];
      let rows = 0;
      for (let i = 0; i < REQUESTS; i++) {
        const started = performance.now();
        const body = await get('granular-usage', yearQuery(groupBy));
        latencies.push(performance.now() - started);
        rows = (JSON.parse(body) as { usage: unknown[] }).usage.length;
      }
      latencies.sort((a, b) => a - b);
      json.push({ groupBy, p50: percentile(latencies, 50), p99: percentile(latencies, 99), rows });
    }

    // ── CSV export over the whole span, per group_by: time and this (server) process's peak RSS ──
    const csv: { groupBy: string; ms: number; bytes: number; baseRss: number; peakRss: number }[] = [];
    for (const groupBy of ['workspace', 'project', 'user', 'api_key']) {
      const baseRss = process.memoryUsage().rss;
      let peakRss = baseRss;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 5);
      const started = performance.now();
      const body = await get('granular-usage/export', `start_time=${new Date(start).toISOString()}&end_time=${new Date(end).toISOString()}&workspace_ids=${workspace.id}&group_by=${groupBy}`);
      const ms = performance.now() - started;
      clearInterval(sampler);
      csv.push({ groupBy, ms, bytes: Buffer.byteLength(body), baseRss, peakRss: Math.max(peakRss, process.memoryUsage().rss) });
    }

    const { rows: counts } = await pool.query<{ grain: string; n: string }>(
      "SELECT 'hourly' AS grain, count(*) AS n FROM usage_hourly_rollups WHERE workspace_id = $1 UNION ALL SELECT 'daily', count(*) FROM usage_daily_rollups WHERE workspace_id = $1",
      [workspace.id],
    );
    const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
    console.log('');
    console.log(`machine: ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, embedded PostgreSQL on the same machine`);
    console.log(`data: ${fmt(TRACES)} traces, ${PROJECTS} projects, ${USERS} users, ${KEYS} keys, ${DAYS} days; rollup rows ${counts.map((c) => `${c.grain} ${fmt(Number(c.n))}`).join(', ')}`);
    console.log(`loader: INSERT … generate_series ${fmt(TRACES / loadSeconds)} traces/s (${loadSeconds.toFixed(1)} s); rebuild ${fmt(TRACES / rebuildSeconds)} traces/s (${rebuildSeconds.toFixed(1)} s); together ${fmt(TRACES / (loadSeconds + rebuildSeconds))} traces/s`);
    console.log('');
    console.log(`JSON  GET /api/v1/orgs/current/billing/granular-usage, one-year range (30-day stride), ${REQUESTS} sequential requests per group_by:`);
    console.log('  group_by     p50 ms   p99 ms   records');
    for (const r of json) console.log(`  ${r.groupBy.padEnd(10)} ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}   ${String(r.rows).padStart(7)}`);
    console.log('');
    console.log(`CSV   GET …/granular-usage/export, the whole ${DAYS}-day range (365-day stride):`);
    console.log('  group_by     time ms    bytes   server RSS before → peak');
    for (const r of csv) console.log(`  ${r.groupBy.padEnd(10)} ${r.ms.toFixed(1).padStart(8)}  ${String(r.bytes).padStart(7)}   ${mb(r.baseRss)} → ${mb(r.peakRss)}`);
    console.log(`load average        ${loadavg().map((n) => n.toFixed(1)).join(' ')} (other processes on this machine share its cores)`);
  } finally {
    await platform.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
