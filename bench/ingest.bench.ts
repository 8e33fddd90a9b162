// `npm run bench:ingest`: trace ingestion throughput (runs/s) and acknowledgement latency with many
// concurrent SDK-shaped multipart posts (100 runs each, gzip, realistic inputs and outputs), against a
// real platform started in this process the way `agent-platform start` does (embedded PostgreSQL in
// a temp dir). In the same run it measures the raw ceiling: multi-row INSERTs of the same rows
// straight into the same table over the pool, HTTP and raw alternating for --rounds rounds (the
// figures are the median round's: one pair alone moves by a third on this machine). It checks nothing is lost (rows in the database == runs
// sent) and asserts nothing about time.
//
// Options: --requests <n> (default 600, × 100 runs), --concurrency <n> (default 32), --raw-connections
// <n> (default 4), --pool <n> (the server's DB pool; default: the configuration's default),
// --write-connections <n> (INSERTs in flight per ingest thread, group commit; 64 = a statement per
// request, as before group commit; default: the configuration's default),
// --ingest-threads <n> (threads parsing and storing ingested runs; 0: the request thread; default: the
// configuration's default), --rounds <n> (default 3), --warmup-requests <n> (default 200: posts before the first round),
// --profile-requests <n> (default 40: requests of the breakdown, one at a time and then all at once), --json
// <file> (also write the figures as { name: { value, unit, floor? } }, read by `npm run bench`).
//
// Then the breakdown: fresh requests through ingestion's stages one at a time, in a worker thread of
// their own (decode, multipart split, parts → runs, validation and derived fields, INSERT parameters,
// the service's statements), each stage's CPU on that thread, the PostgreSQL backend's CPU, statements
// and bytes per request: counts that hold on a loaded machine, where the throughput figures do not.
//
// The load comes from a child process that builds and gzips every request body before the clock
// starts, so the measurement is the server's work, not the client's serialisation, and this
// process's CPU (by thread: main, ingest threads, libuv's pool, V8's helpers) is the server's alone.
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { makeRequests, RUNS_PER_REQUEST, RUNS_PER_TRACE } from './ingest-payload.js';
import { otlpBody } from './otlp-payload.js';
import { formatWaits, sampleWaits } from './pg-waits.js';
import { createBenchTenant, startBenchPlatform } from './tenant.js';

type LoadOptions = { url: string; key: string; requests: number; concurrency: number; session: string; format?: 'multipart' | 'otlp' };
type LoadResult = { busyMs: number; cpuMs: number; runsSent: number; statuses: Record<number, number>; latenciesMs: number[]; wallMs: number; bodyBytes: number; rawBytes: number };

/**
 * Names the calling OS thread (Linux keeps 15 characters), so the per-thread CPU of the HTTP phase
 * tells the bench's own threads from the server's (ingest threads are `ap-ingest`, V8's helpers `node`).
 */
function nameThread(name: string) {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15));
  } catch {
    // not Linux: per-thread figures lump it with V8's helpers
  }
}

/** CPU time of the calling thread alone, in ms (not the process: the server, client and PostgreSQL are told apart). */
function threadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

// ───────────────────────────── load generator (child process) ─────────────────────────────

// The load generator is a process of its own, so every CPU figure of this process is the server's:
// as a worker thread of this process its setup (building and gzipping the bodies, ~40 µs per run)
// and its isolate's garbage collection (V8's helper threads are shared by the process) were counted
// as the server's ingest threads. It builds its bodies, says it is ready, and posts them when told to
// go, so the clock starts with the first post.

/** The bodies of one load, built and gzipped: the setup the measurement leaves out. */
function prepareRequests(options: LoadOptions) {
  const built = makeRequests(options.session, options.requests, options.format === 'otlp' ? 2_000_000 : 0);
  // The OTLP phase posts the same trees as spans (bench/otlp-payload.ts), the project in Langsmith-Project.
  return options.format === 'otlp' ? built.map((request) => ({ ...request, ...otlpBody(request.runs) })) : built;
}

async function generateLoad(options: LoadOptions, requests: ReturnType<typeof prepareRequests>): Promise<LoadResult> {
  const target = options.format === 'otlp'
    ? { path: '/otel/v1/traces', headers: () => ({ 'x-api-key': options.key, 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip', 'langsmith-project': options.session }) }
    : { path: '/runs/multipart', headers: (request: (typeof requests)[number]) => ({ 'x-api-key': options.key, 'content-type': `multipart/form-data; boundary=${request.boundary}`, 'content-encoding': 'gzip' }) };
  const statuses: Record<number, number> = {};
  const latenciesMs: number[] = [];
  let next = 0;
  const elu = performance.eventLoopUtilization();
  // The whole process (its GC helpers too): it does nothing else.
  const cpu = process.cpuUsage();
  const started = performance.now();
  const lane = async () => {
    while (next < requests.length) {
      const request = requests[next++]!;
      const sent = performance.now();
      const response = await fetch(`${options.url}${target.path}`, {
        method: 'POST',
        headers: target.headers(request),
        body: request.body as Uint8Array<ArrayBuffer>,
      });
      await response.arrayBuffer();
      latenciesMs.push(performance.now() - sent);
      statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, lane));
  const used = process.cpuUsage(cpu);
  return {
    busyMs: performance.eventLoopUtilization(elu).active,
    cpuMs: (used.user + used.system) / 1000,
    runsSent: requests.length * RUNS_PER_REQUEST,
    statuses,
    latenciesMs,
    wallMs: performance.now() - started,
    bodyBytes: requests.reduce((sum, r) => sum + r.body.length, 0),
    rawBytes: requests.reduce((sum, r) => sum + r.rawBytes, 0),
  };
}

const LOAD_PROCESS = 'BENCH_INGEST_LOAD_PROCESS';
/** Load generator processes, left out of PostgreSQL's count (which walks this process's descendants). */
const loadProcesses = new Set<number>();

if (process.env[LOAD_PROCESS]) {
  process.once('message', (options: LoadOptions) => {
    const requests = prepareRequests(options);
    process.once('message', () => {
      generateLoad(options, requests).then(
        (result) => process.send!(result, () => process.disconnect()),
        (error: unknown) => {
          throw error;
        },
      );
    });
    process.send!('ready');
  });
}

/** Starts a load generator and waits until its bodies are built; `run` posts them and resolves with the figures. */
function prepareLoad(options: LoadOptions): Promise<{ run: () => Promise<LoadResult> }> {
  return new Promise((resolve, reject) => {
    // Forked with this process's exec arguments: tsx's loader comes with them.
    const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, [LOAD_PROCESS]: '1' } });
    loadProcesses.add(child.pid!);
    child.once('error', reject);
    child.once('exit', (code) => {
      loadProcesses.delete(child.pid!);
      if (code) reject(new Error(`the load generator exited with code ${code}`));
    });
    child.once('message', () => {
      resolve({
        run: () =>
          new Promise<LoadResult>((done, failed) => {
            child.once('message', (result: LoadResult) => done(result));
            child.once('exit', (code) => code && failed(new Error(`the load generator exited with code ${code}`)));
            child.send('go');
          }),
      });
    });
    child.send(options);
  });
}

const runLoad = async (options: LoadOptions) => (await prepareLoad(options)).run();

// The worker thread of this bench: the stage breakdown (on a thread of its own, so its CPU clock
// counts only ingestion's work, not the server's in the main thread).
type ProfileOptions = { mode: 'profile'; config: import('../src/config.js').Config; databaseUrl: string; who: Ingester; session: string; requests: number };
type Ingester = { workspaceId: string; apiKeyId: null; userId: string };

if (!isMainThread) {
  profileInThread(workerData as ProfileOptions).then(
    (result) => parentPort!.postMessage(result),
    (error: unknown) => {
      throw error;
    },
  );
}

// ───────────────────────────── main ─────────────────────────────

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function main() {
  const { values: args } = parseArgs({
    options: {
      requests: { type: 'string', default: '600' },
      concurrency: { type: 'string', default: '32' },
      'raw-connections': { type: 'string', default: '4' },
      pool: { type: 'string' },
      'ingest-threads': { type: 'string' },
      'write-connections': { type: 'string' },
      'profile-requests': { type: 'string', default: '40' },
      'warmup-requests': { type: 'string', default: '200' },
      rounds: { type: 'string', default: '3' },
      json: { type: 'string' },
    },
  });
  const REQUESTS = Number(args.requests);
  const CONCURRENCY = Number(args.concurrency);
  const RAW_CONNECTIONS = Number(args['raw-connections']);
  const ROUNDS = Math.max(1, Number(args.rounds));

  const schemas = await import('../src/platform/ingest/ingest.schemas.js');
  const traceRuns = await import('../src/platform/ingest/ingest.store.js');
  const { resolveProjectIds } = await import('../src/platform/services/traces/projects.service.js');

  const platform = await startBenchPlatform({ AGENT_PLATFORM_DB_POOL_SIZE: args.pool, AGENT_PLATFORM_INGEST_THREADS: args['ingest-threads'], AGENT_PLATFORM_INGEST_WRITE_CONNECTIONS: args['write-connections'] });
  const config = platform.config;
  try {
    const { workspace, user, key } = await createBenchTenant(platform.deps);
    const session = 'bench-ingest';

    // Warm-up through the whole path (JIT, connections, the project row), as many posts as a round of
    // --requests 200: the rounds measure a process that has been ingesting, as a platform is. After 20
    // posts V8's helper threads were still compiling: 20-26 µs per run of CPU in the next 300 posts
    // against 6-13 after 400 (all server threads: 68-74 µs per run against 50-59).
    await runLoad({ url: platform.url!, key, requests: Number(args['warmup-requests']), concurrency: CONCURRENCY, session });

    const who = { workspaceId: workspace.id, apiKeyId: null, userId: user.id };
    const projects = await resolveProjectIds(platform.deps.db.pool, workspace.id, { ids: [], names: [`${session}-raw`] });

    /** One HTTP phase: REQUESTS multipart posts from CONCURRENCY clients, with the server's CPU, waits and WAL. */
    const measureHttp = async () => {
      // The bodies are built first: the waits sampled and the WAL counted are the load's alone.
      const generator = await prepareLoad({ url: platform.url!, key, requests: REQUESTS, concurrency: CONCURRENCY, session });
      const before = await countRuns(platform.deps.db.pool, workspace.id);
      const walBefore = await walLsn(platform.deps.db.pool);
      const httpWaits = await sampleWaits(platform.deps.db.url);
      const cpuBefore = cpuSnapshot();
      const load = await generator.run();
      const cpu = cpuSince(cpuBefore);
      const waits = await httpWaits.stop();
      const walBytes = await walBytesSince(platform.deps.db.pool, walBefore);
      const stored = (await countRuns(platform.deps.db.pool, workspace.id)) - before;
      return { load, cpu, waits, walBytes, stored, rate: load.runsSent / (load.wallMs / 1000), sorted: [...load.latenciesMs].sort((a, b) => a - b) };
    };

    /** One OTLP phase: the same number of requests of the same trees as spans, OTLP protobuf (gzip), same clients. */
    const measureOtlp = async () => {
      const before = await countRuns(platform.deps.db.pool, workspace.id);
      const load = await runLoad({ url: platform.url!, key, requests: REQUESTS, concurrency: CONCURRENCY, session: `${session}-otlp`, format: 'otlp' });
      const stored = (await countRuns(platform.deps.db.pool, workspace.id)) - before;
      return { load, stored, rate: load.runsSent / (load.wallMs / 1000), sorted: [...load.latenciesMs].sort((a, b) => a - b) };
    };

    /**
     * One raw phase: the ceiling, multi-row INSERTs of fresh rows of the same shape straight into the same
     * table over RAW_CONNECTIONS connections, half the requests' rows as VALUES lists (when `forms` has
     * it) and half as unnest(arrays), the form ingest uses.
     */
    const measureRaw = async (forms: readonly ('values' | 'unnest')[]) => {
      // Built (and normalised) before the clock starts: the ceiling is the database's work and the driver's.
      const rawRequests = makeRequests(`${session}-raw`, REQUESTS, 1_000_000);
      const statements = rawRequests.map((request) => {
        const runs = request.runs.map((raw, i) => {
          const run = schemas.normalizeRunCreate(raw, ['post', i]);
          (run as { sessionId: string | null }).sessionId = projects.byName.get(`${session}-raw`)!;
          return run;
        });
        // VALUES binds one parameter per column per row; unnest binds one array per column.
        const values = runs.flatMap((run) => traceRuns.runRowValues(run, who).map((value) => (Buffer.isBuffer(value) ? value.toString('utf8') : value)));
        return { values, columns: traceRuns.runColumnArrays(runs, who) };
      });
      const rates: Partial<Record<'values' | 'unnest', number>> = {};
      let unnest: { cpu: ReturnType<typeof cpuSince>; waits: import('./pg-waits.js').WaitProfile; rows: number; walBytes: number } | undefined;
      for (const form of forms) {
        const half = form === 'values' ? statements.slice(0, statements.length / 2) : statements.slice(statements.length / 2);
        const sql = form === 'values' ? traceRuns.insertRunsSql(RUNS_PER_REQUEST, '') : traceRuns.insertRunsUnnestSql('');
        let nextStatement = 0;
        const rawWal = await walLsn(platform.deps.db.pool);
        const rawWaits = await sampleWaits(platform.deps.db.url);
        const rawCpuBefore = cpuSnapshot();
        const started = performance.now();
        await Promise.all(
          Array.from({ length: RAW_CONNECTIONS }, async () => {
            const client = await platform.deps.db.pool.connect();
            try {
              while (nextStatement < half.length) {
                const statement = half[nextStatement++]!;
                await client.query(form === 'values' ? { text: sql, values: statement.values } : { name: 'bench.raw_unnest', text: sql, values: statement.columns });
              }
            } finally {
              client.release();
            }
          }),
        );
        rates[form] = (half.length * RUNS_PER_REQUEST) / ((performance.now() - started) / 1000);
        const rawCpu = cpuSince(rawCpuBefore);
        const waits = await rawWaits.stop();
        const walBytes = await walBytesSince(platform.deps.db.pool, rawWal);
        if (form === 'unnest') unnest = { cpu: rawCpu, waits, rows: half.length * RUNS_PER_REQUEST, walBytes };
      }
      return { rates, unnest: unnest! };
    };

    // HTTP and raw alternate, ROUNDS times: on this noisy machine one pair's ratio moved from 0.59 to
    // 0.80 with the same code, so the figure is the median round's, each HTTP phase beside its own raw one.
    console.log(`${ROUNDS} rounds of: HTTP, ${REQUESTS} multipart posts × ${RUNS_PER_REQUEST} runs, ${CONCURRENCY} concurrent; then raw, multi-row INSERTs of the same rows, ${RAW_CONNECTIONS} connections …`);
    const rounds: { http: Awaited<ReturnType<typeof measureHttp>>; raw: Awaited<ReturnType<typeof measureRaw>>; ratio: number }[] = [];
    const otlpRounds: { otlp: Awaited<ReturnType<typeof measureOtlp>>; ratio: number }[] = [];
    await runLoad({ url: platform.url!, key, requests: 10, concurrency: 4, session: `${session}-otlp`, format: 'otlp' });
    for (let round = 1; round <= ROUNDS; round++) {
      const http = await measureHttp();
      // OTLP right after multipart, on the same machine state: spans/s against runs/s for the same trees.
      const otlp = await measureOtlp();
      otlpRounds.push({ otlp, ratio: otlp.rate / http.rate });
      console.log(`  round ${round}: OTLP protobuf ${Math.round(otlp.rate).toLocaleString('en-US')} spans/s, multipart ${Math.round(http.rate).toLocaleString('en-US')} runs/s, ratio ${(otlp.rate / http.rate).toFixed(2)} (responses ${JSON.stringify(otlp.load.statuses)})`);
      // The VALUES form is measured once, for comparison: ingest uses unnest.
      const raw = await measureRaw(round === 1 ? ['values', 'unnest'] : ['unnest']);
      rounds.push({ http, raw, ratio: http.rate / raw.rates.unnest! });
      console.log(`  round ${round}: HTTP ${Math.round(http.rate).toLocaleString('en-US')} runs/s, raw unnest ${Math.round(raw.rates.unnest!).toLocaleString('en-US')} rows/s, ratio ${(http.rate / raw.rates.unnest!).toFixed(2)} (load ${loadavg()[0]!.toFixed(1)})`);
    }
    const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor((rounds.length - 1) / 2)]!;
    const { load, cpu, sorted } = median.http;
    const httpWaitProfile = median.http.waits;
    const httpWalBytes = median.http.walBytes;
    const rawUnnest = median.raw.unnest;
    const httpRate = median.http.rate;
    const rawRates = { values: rounds[0]!.raw.rates.values!, unnest: median.raw.rates.unnest! };
    const rawRate = rawRates.unnest;
    const otlpLost = otlpRounds.reduce((sum, { otlp }) => sum + otlp.load.runsSent - otlp.stored, 0);
    const lost = rounds.reduce((sum, { http }) => sum + http.load.runsSent - http.stored, 0) + otlpLost;
    const otlpMedian = [...otlpRounds].sort((a, b) => a.ratio - b.ratio)[Math.floor((otlpRounds.length - 1) / 2)]!;
    console.log('');
    console.log(`machine: ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, embedded PostgreSQL on the same machine`);
    console.log(`payload: ${RUNS_PER_REQUEST} runs per request (${RUNS_PER_TRACE}-run traces), ${(load.rawBytes / load.runsSent / 1024).toFixed(1)} KiB per run as multipart, gzip ${(load.rawBytes / load.bodyBytes).toFixed(1)}×`);
    console.log('');
    console.log(`the median round (${rounds.indexOf(median) + 1} of ${rounds.length}) in detail:`);
    console.log(`HTTP ingest (POST /runs/multipart, ${CONCURRENCY} concurrent, DB pool ${config.dbPoolSize}, ingest threads ${config.ingestThreads}):`);
    console.log(`  runs/s            ${Math.round(httpRate).toLocaleString('en-US')}`);
    console.log(`  ack latency       p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted[sorted.length - 1]!.toFixed(1)} ms`);
    console.log(`  responses         ${JSON.stringify(load.statuses)}`);
    const perRun = (ms: number | null, runs: number) => (ms === null ? 'n/a' : `${((ms / runs) * 1000).toFixed(0)} µs`);
    // This process is the server alone: the load generator is a process of its own.
    const serverOtherMs = cpu.processMs - cpu.mainCpuMs;
    console.log(`  CPU per run       server main thread ${perRun(cpu.mainCpuMs, load.runsSent)}, server ingest threads + GC ${perRun(serverOtherMs, load.runsSent)}, PostgreSQL ${perRun(cpu.postgresMs, load.runsSent)}; bench client (load generator process) ${perRun(load.cpuMs, load.runsSent)} (thread CPU clocks and /proc)`);
    console.log(`  CPU per thread    ${formatRoles(cpu.byThreadName, load.runsSent)} (/proc/self/task, 10 ms ticks)`);
    console.log(`  machine           ${(cpu.machineMs / cpu.wallMs).toFixed(2)} of ${availableParallelism()} cores busy, ${(cpu.othersMs / cpu.wallMs).toFixed(2)} by other processes`);
    console.log(`  PostgreSQL        ${formatWaits(httpWaitProfile)}`);
    console.log(`  PostgreSQL CPU    ${formatRoles(cpu.postgresByRole, load.runsSent)}`);
    console.log(`  WAL               ${Math.round(httpWalBytes / load.runsSent).toLocaleString('en-US')} bytes per run`);
    const sent = rounds.reduce((sum, { http }) => sum + http.load.runsSent, 0);
    console.log(`  runs sent         ${sent.toLocaleString('en-US')} in ${rounds.length} rounds, stored ${(sent - lost).toLocaleString('en-US')} ${lost === 0 ? '(nothing lost)' : '(MISMATCH)'}`);
    console.log(`raw ceiling (multi-row INSERT of 100 rows into the same table, ids claimed in trace_run_ids by a CTE in the same statement as ingest must, no usage deltas, ${RAW_CONNECTIONS} connections):`);
    console.log(`  VALUES lists      ${Math.round(rawRates.values).toLocaleString('en-US')} rows/s (round 1)`);
    console.log(`  unnest(arrays)    ${Math.round(rawRates.unnest).toLocaleString('en-US')} rows/s (the form ingest uses)`);
    if (rawUnnest) {
      console.log(`  unnest CPU per row  bench main thread (driver) ${perRun(rawUnnest.cpu.mainCpuMs, rawUnnest.rows)}, PostgreSQL ${perRun(rawUnnest.cpu.postgresMs, rawUnnest.rows)}; machine ${(rawUnnest.cpu.machineMs / rawUnnest.cpu.wallMs).toFixed(2)} cores busy, ${(rawUnnest.cpu.othersMs / rawUnnest.cpu.wallMs).toFixed(2)} by other processes`);
      console.log(`  unnest PostgreSQL   ${formatWaits(rawUnnest.waits)}`);
      console.log(`  unnest PostgreSQL CPU ${formatRoles(rawUnnest.cpu.postgresByRole, rawUnnest.rows)}`);
      console.log(`  unnest WAL          ${Math.round(rawUnnest.walBytes / rawUnnest.rows).toLocaleString('en-US')} bytes per row`);
    }
    console.log(`HTTP / raw unnest   ${(httpRate / rawRate).toFixed(2)}× (median of ${rounds.map(({ ratio }) => ratio.toFixed(2)).join(', ')})`);
    const otlpSorted = otlpMedian.otlp.sorted;
    console.log(`OTLP ingest (POST /otel/v1/traces, protobuf gzip, the same trees as spans, ${CONCURRENCY} concurrent), its median round:`);
    console.log(`  spans/s           ${Math.round(otlpMedian.otlp.rate).toLocaleString('en-US')} (${(otlpMedian.otlp.load.rawBytes / otlpMedian.otlp.load.runsSent / 1024).toFixed(1)} KiB per span as protobuf, gzip ${(otlpMedian.otlp.load.rawBytes / otlpMedian.otlp.load.bodyBytes).toFixed(1)}×)`);
    console.log(`  ack latency       p50 ${percentile(otlpSorted, 50).toFixed(1)} ms, p99 ${percentile(otlpSorted, 99).toFixed(1)} ms`);
    console.log(`  spans sent        ${otlpRounds.reduce((sum, { otlp }) => sum + otlp.load.runsSent, 0).toLocaleString('en-US')}, ${otlpLost === 0 ? 'all stored' : `${otlpLost} MISSING`}`);
    console.log(`OTLP / multipart    ${otlpMedian.ratio.toFixed(2)}× (median of ${otlpRounds.map(({ ratio }) => ratio.toFixed(2)).join(', ')}; target 0.8×)`);
    console.log(`load average        ${loadavg().map((n) => n.toFixed(1)).join(' ')} (other processes on this machine share its cores)`);

    // Where a batch's time goes: the same stages the ingest thread runs, one request at a time here.
    const breakdown = await inWorker<Breakdown>({
      mode: 'profile',
      config,
      databaseUrl: platform.deps.db.url,
      who: { workspaceId: workspace.id, apiKeyId: null, userId: user.id },
      session: `${session}-profile`,
      requests: Number(args['profile-requests']),
    });
    printBreakdown(breakdown);

    if (args.json) {
      const { writeFileSync } = await import('node:fs');
      const figures: Record<string, { value: number; unit: string; floor?: number; reference?: number }> = {
        'ingest runs/s (multipart, 32 clients) vs raw unnest insert': { value: httpRate, unit: 'runs/s', floor: rawRate },
        'ingest ack p50': { value: percentile(sorted, 50), unit: 'ms' },
        'ingest spans/s (OTLP protobuf, 32 clients) vs multipart runs/s': { value: otlpMedian.otlp.rate, unit: 'spans/s', floor: 0.8 * httpRate },
        'ingest ack p99': { value: percentile(sorted, 99), unit: 'ms' },
        'ingest runs lost': { value: lost, unit: 'runs' },
        'ingest statements per request': { value: breakdown.statementsPerRequest, unit: 'statements' },
        'ingest statements per request (the breakdown\'s requests at once)': { value: breakdown.together.statements / breakdown.requests, unit: 'statements' },
        'ingest PostgreSQL CPU per run (requests at once)': { value: (breakdown.together.postgresCpuMs / breakdown.runs) * 1000, unit: 'µs' },
        'ingest JS CPU per run (decode → parameters)': { value: (breakdown.jsCpuMs / breakdown.runs) * 1000, unit: 'µs' },
        'ingest PostgreSQL CPU per run': { value: (breakdown.postgresCpuMs / breakdown.runs) * 1000, unit: 'µs' },
      };
      writeFileSync(args.json, `${JSON.stringify(figures, null, 2)}\n`);
    }
    if (lost !== 0) process.exitCode = 1;
  } finally {
    await platform.stop();
  }
}

// ───────────────────────────── breakdown ─────────────────────────────

type Stage = { name: string; cpuMs: number; wallMs: number };
type Breakdown = { requests: number; runs: number; stages: Stage[]; jsCpuMs: number; postgresCpuMs: number; statementsPerRequest: number; together: { statements: number; jsCpuMs: number; postgresCpuMs: number }; roundTripCpuMs: number; bytes: { encoded: number; decoded: number; parameters: number }; otlp: OtlpBreakdown };
/** The same trees as OTLP protobuf spans through OTLP's stages (decode, spans → run creates, the service). */
type OtlpBreakdown = { stages: Stage[]; jsCpuMs: number; postgresCpuMs: number; statementsPerRequest: number; together: { statements: number; jsCpuMs: number; postgresCpuMs: number }; bytes: { encoded: number; decoded: number } };


/** CPU time of one PostgreSQL backend (from /proc; the server runs on this machine), in ms. */
function backendCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/**
 * Runs `requests` fresh requests through ingestion's stages one at a time on this thread, each stage
 * timed apart: CPU of this thread (what an ingest thread spends; barely moved by other processes)
 * and wall time. The database stage is the service's own statements on one connection, counted, with
 * that backend's CPU read from /proc.
 */
async function profileInThread(options: ProfileOptions): Promise<Breakdown> {
  nameThread('bench-profile');
  const { pino } = await import('pino');
  const { configInThread, createDeps } = await import('../src/wiring.js');
  const { deps, stop } = await createDeps(configInThread(options.config), pino({ level: 'warn' }), { databaseUrl: options.databaseUrl, listen: false });
  try {
    return await profileStages(deps, options.who, options.session, options.requests);
  } finally {
    await stop();
  }
}

/** Stages timed by name (thread CPU and wall), summed over every call: what the breakdowns print. */
function stageClock() {
  const stages = new Map<string, Stage>();
  const timed = async <T>(name: string, work: () => T | Promise<T>): Promise<T> => {
    const cpu = threadCpuMs();
    const wall = performance.now();
    const result = await work();
    const stage = stages.get(name) ?? { name, cpuMs: 0, wallMs: 0 };
    stage.cpuMs += threadCpuMs() - cpu;
    stage.wallMs += performance.now() - wall;
    stages.set(name, stage);
    return result;
  };
  return { stages, timed };
}

const INSERT_ALONE = 'the INSERT alone (driver + round trip; part of the service below)';

async function profileStages(deps: Pick<import('../src/context.js').Deps, 'db' | 'config'>, who: Ingester, session: string, requests: number): Promise<Breakdown> {
  const wire = await import('../src/platform/ingest/ingest-wire.js');
  const ingest = await import('../src/platform/ingest/ingest.service.js');
  const schemas = await import('../src/platform/ingest/ingest.schemas.js');
  const traceRuns = await import('../src/platform/ingest/ingest.store.js');
  const bodies = makeRequests(session, requests, 2_000_000);
  const limit = deps.config.ingestBodyLimitBytes;
  const { stages, timed } = stageClock();
  // One connection, counted: the service checks out its client from this pool.
  const client = await deps.db.pool.connect();
  const backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  let statements = 0;
  let parameterBytes = 0;
  const counting = new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'release') return () => undefined;
      if (property !== 'query') return Reflect.get(target, property, receiver);
      return (config: unknown, values?: unknown[]) => {
        statements++;
        const params = (typeof config === 'object' && config && 'values' in config ? (config as { values: unknown[] }).values : values) ?? [];
        for (const value of params) parameterBytes += typeof value === 'string' ? Buffer.byteLength(value) : Buffer.isBuffer(value) ? value.length : value == null ? 0 : Buffer.byteLength(JSON.stringify(value));
        return (target.query as (...args: unknown[]) => unknown).call(target, config, values);
      };
    },
  });
  const countingDeps = { config: deps.config, db: { ...deps.db, pool: { connect: async () => counting, query: (...args: unknown[]) => (counting.query as (...a: unknown[]) => unknown)(...args) } as unknown as import('pg').Pool } };
  let postgresCpuMs = 0;
  let decoded = 0;
  let roundTripCpuMs = 0;
  let together = { statements: 0, jsCpuMs: 0, postgresCpuMs: 0 };
  let otlp: OtlpBreakdown | undefined;
  let multipartStatements = 0;
  let multipartParameterBytes = 0;
  try {
    // Warm-up (JIT, prepared statements) on one request that is not counted.
    await ingest.ingestRunBatch(countingDeps, who, wire.multipartToBatch(wire.parseMultipart(await wire.decodeBody(bodies[0]!.body, 'gzip', limit), bodies[0]!.boundary)));
    statements = 0;
    parameterBytes = 0;
    stages.clear();
    for (const request of bodies.slice(1)) {
      const body = await timed('decode (gunzip)', () => wire.decodeBody(request.body, 'gzip', limit));
      decoded += body.length;
      const parts = await timed('split multipart', () => wire.parseMultipart(body, request.boundary));
      const batch = await timed('parts → runs (depth check, JSON.parse)', () => wire.multipartToBatch(parts));
      // The service normalises and builds its parameters inside ingestRunBatch: timed apart here on a
      // second, untimed decoding of the same parts (so nothing parsed lazily is already cached).
      const copy = wire.multipartToBatch(parts);
      const runs = await timed('validate + derive (normalizeRunCreate)', () => copy.post!.map((raw, i) => schemas.normalizeRunCreate(raw, ['post', i])));
      for (const run of runs) {
        run.id = randomUUID(); // stored below apart from the service's copy
        run.sessionId = run.id; // any uuid
      }
      const parameters = await timed('build INSERT parameters', () => traceRuns.runColumnArrays(runs, who));
      // Part of the service stage, shown apart (and not added to the JS total twice): the driver's work
      // for the INSERT (send the parameters, read the ids back) on this thread.
      await timed(INSERT_ALONE, () => client.query({ name: 'traces.insert_runs', text: traceRuns.insertRunsWithHooksSql(), values: parameters }));
      const before = backendCpuMs(backend);
      await timed('service (normalise again + statements)', () => ingest.ingestRunBatch(countingDeps, who, batch));
      postgresCpuMs += backendCpuMs(backend) - before;
    }
    // All at once: as many fresh requests handed to the service together, as concurrent clients would
    // (group commit shares statements among them; --write-connections 64 gives each its own): the
    // service's statements, this thread's CPU and the backend's, to set beside the one-at-a-time figures.
    const batches = await Promise.all(
      makeRequests(session, requests, 3_000_000)
        .slice(1)
        .map(async (request) => wire.multipartToBatch(wire.parseMultipart(await wire.decodeBody(request.body, 'gzip', limit), request.boundary))),
    );
    const statementsBefore = statements;
    const cpuBefore = threadCpuMs();
    const backendBefore = backendCpuMs(backend);
    await Promise.all(batches.map((batch) => ingest.ingestRunBatch(countingDeps, who, batch)));
    together = { statements: statements - statementsBefore, jsCpuMs: threadCpuMs() - cpuBefore, postgresCpuMs: backendCpuMs(backend) - backendBefore };
    // Multipart's counts end here: the OTLP half below uses the same counting connection.
    multipartStatements = statements;
    multipartParameterBytes = parameterBytes;
    otlp = await profileOtlpStages(countingDeps, who, session, requests, backend, () => statements);
    // For scale: what one round trip costs this thread, whatever the statement.
    const cpu = threadCpuMs();
    for (let i = 0; i < 200; i++) await client.query({ name: 'bench.round_trip', text: 'SELECT $1::int AS x', values: [i] });
    roundTripCpuMs = (threadCpuMs() - cpu) / 200;
  } finally {
    client.release();
  }
  const list = [...stages.values()];
  const count = bodies.length - 1;
  const service = stages.get('service (normalise again + statements)')!;
  const normalise = stages.get('validate + derive (normalizeRunCreate)')!;
  const parameters = stages.get('build INSERT parameters')!;
  // The service stage's own JS is its normalisation and parameters (measured above) plus the driver's work; the rest of its wall time waits on PostgreSQL.
  const jsCpuMs = list.filter((stage) => stage !== service && stage.name !== INSERT_ALONE).reduce((sum, stage) => sum + stage.cpuMs, 0) + Math.max(0, service.cpuMs - normalise.cpuMs - parameters.cpuMs);
  return {
    requests: count,
    runs: count * RUNS_PER_REQUEST,
    stages: list,
    jsCpuMs,
    postgresCpuMs,
    statementsPerRequest: (multipartStatements - together.statements) / count,
    together,
    roundTripCpuMs,
    bytes: { encoded: bodies.slice(1).reduce((sum, r) => sum + r.body.length, 0), decoded, parameters: multipartParameterBytes },
    otlp: otlp!,
  };
}

const OTLP_SERVICE = 'OTLP service (map + normalise + statements)';

/**
 * The breakdown's OTLP half: fresh trees as OTLP protobuf bodies (bench/otlp-payload.ts), one request
 * at a time through OTLP's stages, then the service (mapping again, normalisation, hierarchy and
 * statements) on the counting connection; then as many at once.
 */
async function profileOtlpStages(
  deps: Pick<import('../src/context.js').Deps, 'db' | 'config'>,
  who: Ingester,
  session: string,
  requests: number,
  backend: number,
  statementsSoFar: () => number,
): Promise<OtlpBreakdown> {
  const wire = await import('../src/platform/ingest/ingest-wire.js');
  const otlpWire = await import('../src/platform/ingest/otlp-wire.js');
  const otlpIngest = await import('../src/platform/ingest/otlp-ingest.service.js');
  const schemas = await import('../src/platform/ingest/ingest.schemas.js');
  const limit = deps.config.ingestBodyLimitBytes;
  const options = { project: `${session}-otlp`, jsonMaxDepth: deps.config.jsonMaxDepth };
  const bodies = makeRequests(session, requests, 4_000_000).map((request) => otlpBody(request.runs).body);
  const { stages, timed } = stageClock();
  const decodeAll = async (body: Buffer) => otlpWire.parseOtlpBody(await wire.decodeBody(body, 'gzip', limit), 'protobuf', options.jsonMaxDepth);
  // Warm-up on one request that is not counted.
  await otlpIngest.ingestOtlpSpans(deps, who, await decodeAll(bodies[0]!), options);
  const statementsBefore = statementsSoFar();
  let postgresCpuMs = 0;
  let decoded = 0;
  for (const body of bodies.slice(1)) {
    const raw = await timed('OTLP decode (gunzip)', () => wire.decodeBody(body, 'gzip', limit));
    decoded += raw.length;
    const traces = await timed('OTLP protobuf → spans (protobufjs + attributes)', () => otlpWire.parseOtlpBody(raw, 'protobuf', options.jsonMaxDepth));
    const { posts } = await timed('OTLP spans → run creates (mapping)', () => otlpIngest.otlpSpansToRuns(traces, options));
    await timed('OTLP validate + derive (normalizeRunCreate)', () => posts.map((post, i) => schemas.normalizeRunCreate(post, ['post', i])));
    const before = backendCpuMs(backend);
    await timed(OTLP_SERVICE, () => otlpIngest.ingestOtlpSpans(deps, who, traces, options));
    postgresCpuMs += backendCpuMs(backend) - before;
  }
  const count = bodies.length - 1;
  const statementsPerRequest = (statementsSoFar() - statementsBefore) / count;
  // All at once, as concurrent exporters would send them.
  const batches = await Promise.all(makeRequests(session, requests, 5_000_000).slice(1).map((request) => decodeAll(otlpBody(request.runs).body)));
  const togetherStatements = statementsSoFar();
  const cpuBefore = threadCpuMs();
  const backendBefore = backendCpuMs(backend);
  await Promise.all(batches.map((traces) => otlpIngest.ingestOtlpSpans(deps, who, traces, options)));
  const together = { statements: statementsSoFar() - togetherStatements, jsCpuMs: threadCpuMs() - cpuBefore, postgresCpuMs: backendCpuMs(backend) - backendBefore };
  const list = [...stages.values()];
  // The service maps and normalises again: its own JS beyond those stages is the hierarchy, parameters and driver.
  const service = stages.get(OTLP_SERVICE)!;
  const mapping = list.filter((stage) => stage.name.includes('mapping') || stage.name.includes('normalizeRunCreate')).reduce((sum, stage) => sum + stage.cpuMs, 0);
  const jsCpuMs = list.filter((stage) => stage !== service).reduce((sum, stage) => sum + stage.cpuMs, 0) + Math.max(0, service.cpuMs - mapping);
  return { stages: list, jsCpuMs, postgresCpuMs, statementsPerRequest, together, bytes: { encoded: bodies.slice(1).reduce((sum, body) => sum + body.length, 0), decoded } };
}

function printBreakdown(b: Breakdown) {
  const per = (ms: number) => `${(ms / b.requests).toFixed(2).padStart(7)} ms`;
  console.log('');
  console.log(`breakdown per ${RUNS_PER_REQUEST}-run request (${b.requests} requests one at a time on one thread; CPU = this thread, wall = elapsed):`);
  for (const stage of b.stages) console.log(`  ${stage.name.padEnd(42)} CPU ${per(stage.cpuMs)}   wall ${per(stage.wallMs)}`);
  console.log(`  ${'JS CPU per request (all stages, once)'.padEnd(42)} CPU ${per(b.jsCpuMs)}   = ${((b.jsCpuMs / b.runs) * 1000).toFixed(1)} µs per run`);
  console.log(`  ${'PostgreSQL backend CPU per request'.padEnd(42)} CPU ${per(b.postgresCpuMs)}   = ${((b.postgresCpuMs / b.runs) * 1000).toFixed(1)} µs per run (/proc, 10 ms ticks)`);
  const service = b.stages.find((stage) => stage.name === 'service (normalise again + statements)');
  console.log(`  ${`service, the ${b.requests} requests at once`.padEnd(42)} CPU ${per(b.together.jsCpuMs)} (one at a time ${per(service?.cpuMs ?? 0).trim()}); PostgreSQL ${((b.together.postgresCpuMs / b.runs) * 1000).toFixed(1)} µs per run (one at a time ${((b.postgresCpuMs / b.runs) * 1000).toFixed(1)}); statements per request ${(b.together.statements / b.requests).toFixed(2)} (one at a time ${b.statementsPerRequest.toFixed(2)})`);
  console.log(`  statements per request ${b.statementsPerRequest.toFixed(1)} (one round trip, SELECT $1, costs this thread ${b.roundTripCpuMs.toFixed(2)} ms CPU); bytes per request: ${Math.round(b.bytes.encoded / b.requests).toLocaleString('en-US')} gzip → ${Math.round(b.bytes.decoded / b.requests).toLocaleString('en-US')} multipart → ${Math.round(b.bytes.parameters / b.requests).toLocaleString('en-US')} in statement parameters`);
  const o = b.otlp;
  console.log(`the same trees as OTLP protobuf spans, per ${RUNS_PER_REQUEST}-span request (${b.requests} requests one at a time):`);
  for (const stage of o.stages) console.log(`  ${stage.name.padEnd(42)} CPU ${per(stage.cpuMs)}   wall ${per(stage.wallMs)}`);
  console.log(`  ${'OTLP JS CPU per request (all stages, once)'.padEnd(42)} CPU ${per(o.jsCpuMs)}   = ${((o.jsCpuMs / b.runs) * 1000).toFixed(1)} µs per span`);
  console.log(`  ${'OTLP PostgreSQL backend CPU per request'.padEnd(42)} CPU ${per(o.postgresCpuMs)}   = ${((o.postgresCpuMs / b.runs) * 1000).toFixed(1)} µs per span (/proc, 10 ms ticks)`);
  console.log(`  ${`OTLP service, the ${b.requests} requests at once`.padEnd(42)} CPU ${per(o.together.jsCpuMs)}; PostgreSQL ${((o.together.postgresCpuMs / b.runs) * 1000).toFixed(1)} µs per span; statements per request ${(o.together.statements / b.requests).toFixed(2)} (one at a time ${o.statementsPerRequest.toFixed(2)})`);
  console.log(`  bytes per request: ${Math.round(o.bytes.encoded / b.requests).toLocaleString('en-US')} gzip → ${Math.round(o.bytes.decoded / b.requests).toLocaleString('en-US')} protobuf`);
}

function inWorker<T>(options: ProfileOptions): Promise<T> {
  return new Promise((resolve, reject) => {
    // A worker does not inherit tsx's loader: register it, then load this file in the worker.
    const source = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const worker = new Worker(source, { eval: true, workerData: options });
    worker.once('message', (result: T) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

// CPU accounting for the HTTP phase, so a figure taken on a shared machine can be read: how busy the
// server's main thread was, what this process (the server alone: the load generator is a child process
// left out) and its PostgreSQL used, by thread, and how much of the machine other processes took. PostgreSQL and machine figures come from /proc (Linux).
type CpuSnapshot = { at: number; elu: EventLoopUtilization; mainCpu: number; process: NodeJS.CpuUsage; postgres: ReturnType<typeof postgresCpuMs>; machine: number | null; threads: Map<number, { name: string; ms: number }> };

/**
 * utime + stime of each of this process's threads, in ms, by thread id with its name: the main
 * thread as `main`, ingest threads `ap-ingest`, the breakdown's `bench-profile`, libuv's pool
 * (async gunzip, DNS, fs) `libuv-worker`, V8's helpers (GC, compilers) `node`.
 */
function threadCpu(): Map<number, { name: string; ms: number }> {
  const threads = new Map<number, { name: string; ms: number }>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const name = Number(tid) === process.pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
        threads.set(Number(tid), { name, ms: (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS });
      } catch {
        // exited meanwhile
      }
    }
  } catch {
    // not Linux
  }
  return threads;
}

const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux

/** PostgreSQL's processes by role, as their titles name them (client connections are "client backends"). */
const BACKGROUND_ROLES = ['checkpointer', 'background writer', 'walwriter', 'autovacuum launcher', 'autovacuum worker', 'logical replication launcher', 'io worker', 'archiver'];
const processRole = (title: string) => BACKGROUND_ROLES.find((role) => title.startsWith(`postgres: ${role}`)) ?? (title.startsWith('postgres: ') ? 'client backends' : 'postmaster (and exited children)');

/**
 * utime + stime of every descendant of this process (the embedded PostgreSQL server and its
 * processes), in ms, also by role; the postmaster's count includes its exited children (a finished
 * autovacuum worker).
 */
function postgresCpuMs(): { total: number; byRole: Map<string, number> } | null {
  try {
    const stats = new Map<number, { ppid: number; ms: number; role: string }>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
        const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0+$/, '').replaceAll('\0', ' ');
        // utime, stime, and (for the postmaster) its reaped children's cutime, cstime.
        const own = Number(fields[11]) + Number(fields[12]);
        const children = Number(fields[13]) + Number(fields[14]);
        stats.set(Number(entry), { ppid: Number(fields[1]), ms: own * CLOCK_TICK_MS, role: processRole(title) });
        if (!title.startsWith('postgres: ')) stats.get(Number(entry))!.ms += children * CLOCK_TICK_MS;
      } catch {
        // exited meanwhile
      }
    }
    const ours = new Set([process.pid]);
    let total = 0;
    const byRole = new Map<string, number>();
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, stat] of stats) {
        if (!ours.has(pid) && ours.has(stat.ppid) && !loadProcesses.has(pid)) {
          ours.add(pid);
          total += stat.ms;
          byRole.set(stat.role, (byRole.get(stat.role) ?? 0) + stat.ms);
          grew = true;
        }
      }
    }
    return { total, byRole };
  } catch {
    return null;
  }
}

/** Busy CPU time of the whole machine (all cores), in ms. */
function machineCpuMs(): number | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = fields[3]! + (fields[4] ?? 0);
    return (fields.reduce((a, b) => a + b, 0) - idle) * CLOCK_TICK_MS;
  } catch {
    return null;
  }
}

function cpuSnapshot(): CpuSnapshot {
  return { at: performance.now(), elu: performance.eventLoopUtilization(), mainCpu: threadCpuMs(), process: process.cpuUsage(), postgres: postgresCpuMs(), machine: machineCpuMs(), threads: threadCpu() };
}

function cpuSince(start: CpuSnapshot) {
  const end = cpuSnapshot();
  const processUsage = process.cpuUsage(start.process);
  const processMs = (processUsage.user + processUsage.system) / 1000;
  const postgresMs = start.postgres === null || end.postgres === null ? null : end.postgres.total - start.postgres.total;
  const postgresByRole = new Map<string, number>();
  for (const [role, ms] of end.postgres?.byRole ?? []) postgresByRole.set(role, ms - (start.postgres?.byRole.get(role) ?? 0));
  const machineMs = start.machine === null || end.machine === null ? 0 : end.machine - start.machine;
  // Threads born in the window count from zero; those that ended in it are the process's remainder.
  const byThreadName = new Map<string, number>();
  for (const [tid, { name, ms }] of end.threads) byThreadName.set(name, (byThreadName.get(name) ?? 0) + ms - (start.threads.get(tid)?.ms ?? 0));
  const liveMs = [...byThreadName.values()].reduce((sum, ms) => sum + ms, 0);
  if (end.threads.size) byThreadName.set('threads ended meanwhile', processMs - liveMs);
  return {
    byThreadName,
    wallMs: end.at - start.at,
    mainBusyMs: performance.eventLoopUtilization(end.elu, start.elu).active,
    mainCpuMs: end.mainCpu - start.mainCpu,
    postgresByRole,
    processMs,
    postgresMs,
    machineMs,
    othersMs: Math.max(0, machineMs - processMs - (postgresMs ?? 0)),
  };
}

/** PostgreSQL CPU per run by process role, largest first. */
function formatRoles(byRole: Map<string, number>, runs: number): string {
  return [...byRole].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]).map(([role, ms]) => `${role} ${((ms / runs) * 1000).toFixed(0)} µs`).join(', ') + ' per run';
}

async function walLsn(pool: import('pg').Pool): Promise<string> {
  return (await pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
}

async function walBytesSince(pool: import('pg').Pool, lsn: string): Promise<number> {
  return Number((await pool.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS bytes', [lsn])).rows[0]!.bytes);
}

async function countRuns(pool: import('pg').Pool, workspaceId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM trace_runs WHERE tenant_id = $1', [workspaceId]);
  return rows[0]!.n;
}

if (isMainThread && !process.env[LOAD_PROCESS]) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
