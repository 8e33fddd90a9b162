// npm run bench:scale — does the cost of a read stay flat as the data grows? Fills trace runs (straight
// into the table with multi-row INSERT … SELECT, a realistic spread over projects, run types, statuses,
// names, tags and metadata) up to each size, then times the runs queries through the traces service
// and prints p50/p99 and the plan's scan node of the service's own SQL. Then a thread with N
// checkpoints written through the runtime's checkpointer, timing history (list, limit 10) and get
// state (getTuple). Prints figures; asserts nothing.
//
//   --runs 10000,100000,1000000     trace-run sizes (default 10000,100000,1000000; 0 skips)
//   --checkpoints 1,1000,10000      checkpoint counts (default 1,1000,10000; 0 skips)
//   --samples 40                    timed calls per query, after 3 warm-ups
//   --soak-minutes N                instead: a `serve` process with a 1-minute thread TTL (langgraph.json
//                                   checkpointer.ttl) running runs on threads continuously for N minutes,
//                                   printing each table's rows and size every minute (see scale-soak.ts)
//   DATABASE_URL                    use that database instead of a fresh embedded one
//
// trace_runs is partitioned by week: each new week of the fill is built as a bare table, indexed and
// attached as its partition (fastFillTraceRuns; a week a previous size ended in is topped up through
// trace_runs), and a plan's scans are counted per trace_runs index over the partitions.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { emptyCheckpoint } from '@langchain/langgraph-checkpoint';
import type pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { createDeps } from '../src/wiring.js';
import { openPersistence } from '../src/agent-server/runtime/persistence.js';
import { setUpDeploymentDatabase } from '../src/agent-server/services/served-deployment/database-setup.js';
import { connectDatabase } from '../src/db.js';
import type { Deps, ServiceContext } from '../src/context.js';
import { migrateDatabase } from '../src/database/migrate.js';
import { dropDeploymentDatabase, ensureDeploymentDatabase } from '../src/platform/services/deployments/deployment-database.js';
import { authenticateApiKey } from '../src/platform/services/tenancy/authentication.service.js';
import { getRun, queryRuns } from '../src/platform/services/traces/queries.service.js';
import { createBenchTenant } from './tenant.js';
import { fastFillTraceRuns, uuidOf } from './trace-run-fill.js';
import { soak } from './scale-soak.js';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000,100000,1000000' },
    checkpoints: { type: 'string', default: '1,1000,10000' },
    samples: { type: 'string', default: '40' },
    'soak-minutes': { type: 'string', default: '0' },
  },
});
const sizes = (text: string) => text.split(',').map((part) => Number(part.trim())).filter((n) => n > 0).sort((a, b) => a - b);
const RUN_SIZES = sizes(args.runs!);
const CHECKPOINT_SIZES = sizes(args.checkpoints!);
const SAMPLES = Number(args.samples);
const PROJECTS = 20;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(0));

async function time(call: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 3; i++) await call();
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const start = performance.now();
    await call();
    samples.push(performance.now() - start);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/**
 * Records the SQL the service sends (all of one call's statements: a walk or a search that reads the
 * partitions in turn sends several), so the benchmark can EXPLAIN exactly those. The partition list
 * read from the catalog (cached for a minute) is left out.
 */
function recordingPool(pool: pg.Pool): { pool: pg.Pool; take: () => { text: string; values: unknown[] }[] } {
  let sent: { text: string; values: unknown[] }[] = [];
  const proxy = new Proxy(pool, {
    get(target, property, receiver) {
      if (property === 'query') {
        return (text: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
          const statement = typeof text === 'string' ? { text, values: values ?? [] } : { text: text.text, values: text.values ?? values ?? [] };
          if (!statement.text.includes('pg_inherits')) sent.push(statement);
          return target.query(text as string, values);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return {
    pool: proxy,
    take: () => {
      const taken = sent;
      sent = [];
      return taken;
    },
  };
}

type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: PlanNode[] };

/**
 * The plan's scan nodes of trace_runs's partitions that ran (partitions an ordered read did not get to
 * are left out), e.g. "Index Scan tenant_id_session_id_… ×3" (three
 * partitions' part of that index) or "Seq Scan"; `parentIndex` names each partition's index by the
 * trace_runs index it is part of.
 */
function scanSummary(node: PlanNode, parentIndex: Map<string, string>): string {
  const scans: string[] = [];
  const visit = (n: PlanNode) => {
    if (n['Actual Loops'] === 0) return; // never executed: a partition the read did not get to
    if (n['Node Type'].includes('Scan') && (n['Relation Name']?.startsWith('trace_runs') || n['Index Name']?.startsWith('trace_runs'))) {
      const index = n['Index Name'] && (parentIndex.get(n['Index Name']) ?? n['Index Name']);
      scans.push(index ? `${n['Node Type']} ${index.replace(/^trace_runs_/, '')}` : n['Node Type']);
    }
    for (const child of n.Plans ?? []) visit(child);
  };
  visit(node);
  const counts = new Map<string, number>();
  for (const scan of scans) counts.set(scan, (counts.get(scan) ?? 0) + 1);
  return [...counts].map(([scan, count]) => (count > 1 ? `${scan} ×${count}` : scan)).join(', ');
}

async function main() {
  if (Number(args['soak-minutes']) > 0) return soak(Number(args['soak-minutes']));
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-scale-'));
  const config = loadConfig({}, {
    AGENT_PLATFORM_DATA_DIR: dataDir,
    DATABASE_URL: process.env.DATABASE_URL,
    AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    AGENT_PLATFORM_INGEST_THREADS: '0',
    LOG_LEVEL: 'warn',
  });
  const logger = pino({ level: 'warn' });
  console.log(`bench:scale — runs ${RUN_SIZES.join(', ')}; checkpoints ${CHECKPOINT_SIZES.join(', ')}; ${SAMPLES} samples; load ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const wiring = await createDeps(config, logger, {});
  try {
    const { deps } = wiring;
    const tenant = await createBenchTenant(deps);
    const viewer = await authenticateApiKey(deps, tenant.key, tenant.workspace.id);
    const recorder = recordingPool(deps.db.pool);
    const ctx: ServiceContext = { ...deps, db: { ...deps.db, pool: recorder.pool }, viewer };
    const projects = Array.from({ length: PROJECTS }, () => randomUUID());

    const queries: { name: string; call: () => Promise<unknown> }[] = [
      { name: 'newest 100 of a project', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100 }) },
      { name: 'newest 100 of 3 projects', call: () => queryRuns(ctx, { session: projects.slice(0, 3), limit: 100 }) },
      { name: '+ eq(name, "step_7")', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, filter: 'eq(name, "step_7")' }) },
      { name: '+ eq(run_type, "retriever")', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, filter: 'eq(run_type, "retriever")' }) },
      { name: '+ eq(status, "error"), no hits', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, filter: 'eq(status, "error")' }) },
      { name: '+ is_root', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, isRoot: true }) },
      { name: '+ has(tags, "vip")', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, filter: 'has(tags, "vip")' }) },
      {
        name: '+ metadata user_id = user-7',
        call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, filter: 'and(eq(metadata_key, "user_id"), eq(metadata_value, "user-7"))' }),
      },
      { name: '+ gt(latency, 4.9)', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, filter: 'gt(latency, 4.9)' }) },
      // No index serves latency: the first (empty) page of a walk that finds nothing.
      { name: '+ gt(latency, 1000), no hits', call: () => queryRuns(ctx, { session: [projects[0]!], limit: 100, filter: 'gt(latency, 1000)' }) },
      { name: 'one trace', call: () => queryRuns(ctx, { trace: traceOf(0), limit: 100 }) },
      { name: 'GET /runs/{id}', call: () => getRun(ctx, traceOf(0)) },
    ];
    // A trace in the middle of what the smallest size holds, in project 0 or not: any will do.
    let traceId = '';
    const traceOf = (_: number) => traceId;

    const results: { size: number; query: string; p50: number; p99: number; plan: string; buffers: number }[] = [];
    let filled = 0;
    for (const size of RUN_SIZES) {
      console.log(`\n${size.toLocaleString('en')} trace runs`);
      const started = performance.now();
      await fastFillTraceRuns(deps.db.pool, tenant.workspace.id, projects, filled, size, (line) => console.log(`  ${line}`));
      const fillSeconds = (performance.now() - started) / 1000;
      await deps.db.pool.query('VACUUM ANALYZE trace_runs');
      const total = (performance.now() - started) / 1000;
      console.log(`  fill ${fillSeconds.toFixed(1)} s (${Math.round((size - filled) / fillSeconds).toLocaleString('en')} runs/s, load ${(await import('node:os')).loadavg()[0]!.toFixed(2)}), + VACUUM ANALYZE ${total.toFixed(1)} s`);
      filled = size;
      const { rows } = await deps.db.pool.query<{ trace_id: string }>(`SELECT ${uuidOf("'trace-' || ($1::int / 10)")} AS trace_id`, [size]);
      traceId = rows[0]!.trace_id;
      const { rows: parts } = await deps.db.pool.query<{ child: string; parent: string }>(
        `SELECT c.relname AS child, p.relname AS parent FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE c.relkind = 'i'`,
      );
      const parentIndex = new Map(parts.map((part) => [part.child, part.parent]));
      const { rows: partitionCount } = await deps.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'trace_runs'::regclass`);
      console.log(`  ${partitionCount[0]!.n} partitions of trace_runs (weeks and the default)`);
      for (const query of queries) {
        const figures = await time(query.call);
        recorder.take();
        await query.call();
        // Buffers (8 kB pages) the call's statements touched: a figure the machine's load does not change.
        let buffers = 0;
        const plans: PlanNode[] = [];
        const statements = recorder.take();
        for (const { text, values } of statements) {
          const explained = await deps.db.pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode & { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
            `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
            values,
          );
          const top = explained.rows[0]!['QUERY PLAN'][0].Plan;
          buffers += top['Shared Hit Blocks'] + top['Shared Read Blocks'];
          plans.push(top);
        }
        const plan = `${statements.length} statement${statements.length === 1 ? '' : 's'}: ${scanSummary({ 'Node Type': 'Statements', Plans: plans }, parentIndex)}`;
        results.push({ size, query: query.name, ...figures, plan, buffers });
        console.log(`  ${query.name.padEnd(34)} p50 ${ms(figures.p50).padStart(6)} ms  p99 ${ms(figures.p99).padStart(6)} ms  ${String(buffers).padStart(6)} buffers  ${plan}`);
      }
    }

    if (RUN_SIZES.length) {
      console.log('\n| query | ' + RUN_SIZES.map((size) => `${size.toLocaleString('en')} p50 / p99 ms`).join(' | ') + ` | p99 ${RUN_SIZES.at(-1)!.toLocaleString('en')} ÷ ${RUN_SIZES[0]!.toLocaleString('en')} | plan at ${RUN_SIZES.at(-1)!.toLocaleString('en')} |`);
      console.log('|---|' + RUN_SIZES.map(() => '---|').join('') + '---|---|');
      for (const query of queries) {
        const row = results.filter((result) => result.query === query.name);
        const ratio = row.at(-1)!.p99 / row[0]!.p99;
        console.log(`| ${query.name} | ${row.map((r) => `${ms(r.p50)} / ${ms(r.p99)} (${r.buffers} buf)`).join(' | ')} | ${ratio.toFixed(1)}× | ${row.at(-1)!.plan} |`);
      }

    }

    await benchCheckpoints(deps);
  } finally {
    await wiring.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * A thread grown checkpoint by checkpoint through the runtime's saver, in a deployment's own database
 * (an agent server's, made as a local deployment's is); history and get state at each size.
 */
async function benchCheckpoints(deps: Deps) {
  if (!CHECKPOINT_SIZES.length) return;
  const deploymentId = randomUUID();
  const { url } = await ensureDeploymentDatabase(deps, deploymentId, { local: true });
  await migrateDatabase(url, deps.logger, 'agent-server');
  const db = connectDatabase(url, { poolSize: 2 });
  await setUpDeploymentDatabase(db, deploymentId, { threadTtl: {} });
  const persistence = await openPersistence(db, deploymentId, {});
  try {
    const saver = persistence.checkpointer;
    const threadId = randomUUID();
    const config = { configurable: { thread_id: threadId, checkpoint_ns: '' } };
    let parent: string | undefined;
    let written = 0;
    const rows: string[] = [];
    console.log('\nthread checkpoints (history limit 10 = checkpointer list; get state = getTuple)');
    for (const size of CHECKPOINT_SIZES) {
      const started = performance.now();
      for (; written < size; written++) {
        // A constant 12-byte state in two channels, each step a new version of both (two blobs per checkpoint).
        const checkpoint = emptyCheckpoint();
        checkpoint.channel_values = { messages: 'hello world!', step: 'hello world!' };
        checkpoint.channel_versions = { messages: written + 1, step: written + 1 };
        const saved = await saver.put(
          { configurable: { thread_id: threadId, checkpoint_ns: '', ...(parent ? { checkpoint_id: parent } : {}) } },
          checkpoint,
          { source: 'loop', step: written, parents: {} },
          { messages: written + 1, step: written + 1 },
        );
        parent = saved.configurable!.checkpoint_id as string;
      }
      const fill = (performance.now() - started) / 1000;
      const history = await time(async () => {
        const tuples = [];
        for await (const tuple of saver.list(config, { limit: 10 })) tuples.push(tuple);
        if (tuples.length !== Math.min(10, size)) throw new Error(`history returned ${tuples.length}`);
      });
      const state = await time(() => saver.getTuple(config));
      const line = `| ${size.toLocaleString('en')} | ${ms(history.p50)} / ${ms(history.p99)} | ${ms(state.p50)} / ${ms(state.p99)} |`;
      rows.push(line);
      console.log(`  ${size.toLocaleString('en')} checkpoints (written in ${fill.toFixed(1)} s): history ${ms(history.p50)} / ${ms(history.p99)} ms, get state ${ms(state.p50)} / ${ms(state.p99)} ms`);
    }
    console.log('\n| checkpoints | history limit 10 p50 / p99 ms | get state p50 / p99 ms |\n|---|---|---|');
    for (const row of rows) console.log(row);
  } finally {
    await db.close();
    await dropDeploymentDatabase(deps, deploymentId);
  }
}

await main();
