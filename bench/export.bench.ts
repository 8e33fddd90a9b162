// `npm run bench:export`: bulk export end to end, PostgreSQL → Arrow → Parquet (zstd) → S3 multipart
// into s3rver (a separate process on loopback), through the real worker path (pg-boss jobs, one run
// per UTC day, the default limits). For each size it prints rows/s end to end, the peak RSS of this
// process (API + workers) during the export, and, in the same run, parquet-wasm's pure encode rate on
// the same batches (read with the export's own query, converted before the clock starts): the ceiling.
// It checks the export is complete (rows written == rows in range) and asserts nothing about time.
//
// First it profiles one export of --profile-rows rows stage by stage, one stage at a time: PostgreSQL
// alone (COPY TO /dev/null), COPY into this process, decoding, Arrow, Arrow → parquet-wasm, Parquet
// encode, upload; so the end-to-end figures can be read against where the time goes.
//
// Options: --rows <n> (one size; default: 250000, 500000 and 1000000 in turn), --days <n> (default 4),
// --encode-sample <n> (rows encoded for the ceiling, default 200000), --profile-rows <n> (default
// 100000; 0 skips the profile). AGENT_PLATFORM_EXPORT_* variables of the shell apply to the export.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { createDestination } from '../src/platform/services/exports/destinations.service.js';
import { createExport, exportFieldsOf } from '../src/platform/services/exports/exports.service.js';
import { copyRunBatch, runBatchBoundary, runBatchSelect } from '../src/platform/services/traces/trace-run-export.store.js';
import { copyFieldSpans, DecodeArena, recordBatchFromCopy, recordBatchFromSpans } from '../src/platform/services/exports/copy-decode.js';
import { exportColumns } from '../src/platform/services/exports/export-columns.js';
import { IpcStreamEncoder, toWasmBatches, writerProperties } from '../src/platform/services/exports/parquet.js';
import { MultipartObject } from '../src/platform/services/exports/s3.js';
import { nextBatchRows } from '../src/platform/services/exports/export-runner.js';
import { authenticateApiKey } from '../src/platform/services/tenancy/authentication.service.js';
import { startPlatform } from '../src/start.js';
import { createBenchTenant } from './tenant.js';
import { startProcess, stopProcess } from './processes.js';
import { insertExportRuns } from './export-runs-fill.js';
import * as parquet from 'parquet-wasm';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string' },
    days: { type: 'string', default: '4' },
    'encode-sample': { type: 'string', default: '200000' },
    'profile-rows': { type: 'string', default: '100000' },
  },
});
const PROFILE_ROWS = Number(args['profile-rows']);
const SIZES = args.rows ? [Number(args.rows)] : [250_000, 500_000, 1_000_000];
const DAYS = Number(args.days);
const ENCODE_SAMPLE = Number(args['encode-sample']);
const DAY0 = Date.parse('2026-01-05T00:00:00Z');

/** s3rver in a child process, so its memory is not counted in this process's RSS. */
async function startS3rver(directory: string) {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', `import S3rver from 's3rver'; const s = new S3rver({ address: '127.0.0.1', port: 0, directory: ${JSON.stringify(directory)}, silent: true }); const a = await s.run(); console.log('PORT ' + a.port);`],
    { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const match = /PORT (\d+)/.exec(String(chunk));
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code}`)));
  });
  return { endpoint: `http://127.0.0.1:${port}`, stop: async () => { child.kill('SIGTERM'); await once(child, 'exit'); } };
}

/**
 * After a fill: VACUUM ANALYZE (visibility map, statistics), then CHECKPOINT, so the checkpointer's
 * writing of the fill's dirty pages does not land in the export's window, where it was counted as
 * PostgreSQL's CPU per exported row (the more rows filled, the more: 17.9 µs at 500k, 29.9 at 1M).
 */
async function settleAfterFill(pool: import('pg').Pool) {
  await pool.query('VACUUM ANALYZE trace_runs');
  await pool.query('CHECKPOINT');
}

const mib = (bytes: number) => (bytes / 1024 ** 2).toFixed(0);

/** A process's memory: RSS, V8 heap, external (of which ArrayBuffers), and parquet-wasm's linear memory (grows, never shrinks). */
type Memory = { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number; wasm: number };

const describeMemory = (m: Memory) =>
  `RSS ${mib(m.rss)} MiB = V8 heap ${mib(m.heapTotal)} (used ${mib(m.heapUsed)}) + external ${mib(m.external)} (ArrayBuffers ${mib(m.arrayBuffers)}, wasm ${mib(m.wasm)}) + code, stacks, native`;

/**
 * `agent-platform start --role worker` on the bench's database, with bench/export-worker-probe.mjs
 * loaded into it: its breakdown at the latest peak RSS (the probe samples every 50 ms), its exact peak
 * (VmHWM, from /proc), its CPU time.
 */
async function startExportWorker(databaseUrl: string, secretKey: string, exportSettings: Record<string, string>) {
  const folder = mkdtempSync(join(tmpdir(), 'agent-platform-bench-worker-'));
  const probeFile = join(folder, 'peak.json');
  const { child } = await startProcess(process.execPath, ['--import', new URL('./export-worker-probe.mjs', import.meta.url).href, 'bin/agent-platform.mjs', 'start', '--role', 'worker'], {
    cwd: process.cwd(),
    env: {
      DATABASE_URL: databaseUrl,
      AGENT_PLATFORM_DATA_DIR: folder,
      AGENT_PLATFORM_SECRET_KEY: secretKey,
      AGENT_PLATFORM_INGEST_THREADS: '0',
      LOG_LEVEL: 'warn',
      BENCH_MEMORY_PROBE_FILE: probeFile,
      ...exportSettings,
    },
    ready: /roles: worker/,
  });
  const status = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${child.pid}/status`, 'latin1'))![1]) * 1024;
  const probe = (): Memory => JSON.parse(readFileSync(probeFile, 'utf8'));
  return {
    /** Now: its RSS and the breakdown the probe saw at its latest peak (before any export: at start-up). */
    memory: (): Memory => ({ ...probe(), rss: status('VmRSS') }),
    /** Its peak RSS (VmHWM, exact) and the probe's breakdown at the highest peak it sampled. */
    peak: (): Memory => ({ ...probe(), rss: status('VmHWM') }),
    cpuMicros: () => procStat(child.pid!)!.own,
    stop: async () => {
      await stopProcess(child);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** CPU time of this process (all its threads), µs. */
const nodeCpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

const CLOCK_TICK_MICROS = 10_000; // USER_HZ is 100 on Linux

/** utime, stime, cutime, cstime and ppid of a process, from /proc/<pid>/stat (its name may hold spaces). */
function procStat(pid: number): { ppid: number; own: number; children: number } | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]!.split(' ');
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    return { ppid: Number(fields[1]), own: (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MICROS, children: (Number(fields[13]) + Number(fields[14])) * CLOCK_TICK_MICROS };
  } catch {
    return undefined; // exited meanwhile
  }
}

/**
 * CPU time of the whole PostgreSQL server, µs: the postmaster, its ended children (cutime) and the
 * living ones. Load changes how long a row takes, not how much CPU it needs, so these per-row figures
 * can be compared across runs on a shared machine.
 */
async function postgresCpuMicros(pool: import('pg').Pool): Promise<number> {
  let total = 0;
  for (const micros of (await postgresCpuByKind(pool)).values()) total += micros;
  return total;
}

/**
 * The same, by kind of process (from its title): backends, io workers (PostgreSQL 18 reads pages into
 * shared buffers in io worker processes by default), checkpointer, walwriter, …; the postmaster and
 * the processes that ended count as "postmaster and ended processes".
 */
async function postgresCpuByKind(pool: import('pg').Pool): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const postmaster = procStat(rows[0]!.pid)!.ppid;
  const main = procStat(postmaster)!;
  const byKind = new Map<string, number>([['postmaster and ended processes', main.own + main.children]]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat?.ppid !== postmaster) continue;
    let title = '';
    try {
      title = readFileSync(`/proc/${entry}/cmdline`, 'latin1').replace(/\0/g, ' ').trim();
    } catch {
      continue; // ended meanwhile: its time is in the postmaster's
    }
    const kind = /^postgres: (io worker|checkpointer|background writer|walwriter|autovacuum|logical replication)/.exec(title)?.[1] ?? 'backends';
    byKind.set(kind, (byKind.get(kind) ?? 0) + stat.own);
  }
  return byKind;
}

/** Per row, by kind: the CPU each kind of PostgreSQL process used between two readings. */
function describePostgresCpu(before: Map<string, number>, after: Map<string, number>, rows: number): string {
  return [...after]
    .map(([kind, micros]) => [kind, (micros - (before.get(kind) ?? 0)) / rows] as const)
    .filter(([, perRow]) => perRow >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([kind, perRow]) => `${kind} ${perRow.toFixed(1)}`)
    .join(', ');
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-export-'));
  const s3Dir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-s3-'));
  const s3 = await startS3rver(s3Dir);
  const secretKey = randomBytes(32).toString('base64');
  // The export's own settings may be tried from the shell (e.g. AGENT_PLATFORM_EXPORT_BATCH_ROWS=5000).
  const exportSettings = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('AGENT_PLATFORM_EXPORT_'))) as Record<string, string>;
  // This process runs the API side (fills, creates the export); the export runs in a worker process.
  const config = loadConfig({}, {
    AGENT_PLATFORM_DATA_DIR: dataDir,
    PORT: '0',
    AGENT_PLATFORM_SECRET_KEY: secretKey,
    LOG_LEVEL: 'warn',
    AGENT_PLATFORM_INGEST_THREADS: '0',
    AGENT_PLATFORM_ROLES: 'api',
    ...exportSettings,
  });
  console.log(`starting the platform (embedded PostgreSQL in ${dataDir}), s3rver at ${s3.endpoint} …`);
  const platform = await startPlatform(config, pino({ level: config.logLevel }));
  const deps = platform.deps;
  const table: string[][] = [];
  try {
    const { organization, workspace, key } = await createBenchTenant(deps);
    await deps.db.prisma.organization.update({ where: { id: organization.id }, data: { planTier: 'enterprise' } });
    const ctx = { ...deps, viewer: await authenticateApiKey(deps, key, workspace.id) };
    const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    await client.send(new CreateBucketCommand({ Bucket: 'bench' }));
    client.destroy();
    const destination = await createDestination(ctx, {
      destination_type: 's3',
      display_name: 'bench',
      config: { bucket_name: 'bench', endpoint_url: s3.endpoint },
      credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
    });

    if (PROFILE_ROWS > 0) {
      const project = await deps.db.prisma.tracingProject.create({ data: { id: crypto.randomUUID(), workspaceId: workspace.id, name: `bench-profile-${Date.now()}` } });
      await insertExportRuns(deps.db.pool, workspace.id, project.id, PROFILE_ROWS, 1, DAY0);
      await settleAfterFill(deps.db.pool);
      await profileStages(deps, s3.endpoint, { tenantId: workspace.id, sessionId: project.id, start: new Date(DAY0), end: new Date(DAY0 + 86_400_000), filter: null });
      await deps.db.pool.query('DELETE FROM trace_runs WHERE tenant_id = $1 AND session_id = $2', [workspace.id, project.id]);
    }

    for (const rows of SIZES) {
      const project = await deps.db.prisma.tracingProject.create({ data: { id: crypto.randomUUID(), workspaceId: workspace.id, name: `bench-${rows}-${Date.now()}` } });
      process.stdout.write(`${rows} rows: inserting … `);
      const insertStart = performance.now();
      await insertExportRuns(deps.db.pool, workspace.id, project.id, rows, DAYS, DAY0);
      await settleAfterFill(deps.db.pool);
      console.log(`${((performance.now() - insertStart) / 1000).toFixed(1)} s; exporting …`);

      // A fresh worker process per size (as `agent-platform start --role worker` runs in production):
      // its peak RSS is the exporting process's own, not this bench's (fills, ceiling, profile).
      const worker = await startExportWorker(deps.db.url, secretKey, exportSettings);
      const baseline = worker.memory();
      const load = loadavg()[0]!;
      const [nodeCpuStart, postgresCpuStart] = [worker.cpuMicros(), await postgresCpuByKind(deps.db.pool)];
      const start = performance.now();
      const created = await createExport(ctx, {
        bulk_export_destination_id: destination.id,
        session_id: project.id,
        start_time: new Date(DAY0).toISOString(),
        end_time: new Date(DAY0 + DAYS * 86_400_000).toISOString(),
        format_version: 'v2_beta',
        compression: 'zstandard',
      });
      const finished = await waitForExport(deps, created.id);
      const seconds = (performance.now() - start) / 1000;
      const nodeCpu = (worker.cpuMicros() - nodeCpuStart) / rows;
      const postgresCpuEnd = await postgresCpuByKind(deps.db.pool);
      const postgresCpu = ([...postgresCpuEnd.values()].reduce((a, b) => a + b, 0) - [...postgresCpuStart.values()].reduce((a, b) => a + b, 0)) / rows;
      const peak = worker.peak();
      const peakRss = peak.rss;
      await worker.stop();
      const runs = await deps.db.prisma.bulkExportRun.findMany({ where: { bulkExportId: created.id } });
      const written = runs.reduce((sum, run) => sum + ((run.metadata as any).result?.rows_written ?? 0), 0);
      const files = runs.reduce((sum, run) => sum + ((run.metadata as any).result?.exported_files?.length ?? 0), 0);
      if (finished !== 'Completed' || written !== rows) throw new Error(`export ${finished}: ${written} of ${rows} rows written`);

      const { encodeRate, encodeCpu, readRate, convertRate } = await pureEncodeRate(deps, workspace.id, project.id, Math.min(rows, ENCODE_SAMPLE));
      const endToEnd = rows / seconds;
      table.push([
        String(rows), String(runs.length), String(files), seconds.toFixed(1), endToEnd.toFixed(0), encodeRate.toFixed(0), (endToEnd / encodeRate).toFixed(2), mib(peakRss), mib(baseline.rss), `${mib(peak.heapTotal)} / ${mib(peak.arrayBuffers)} / ${mib(peak.wasm)}`,
        nodeCpu.toFixed(1), postgresCpu.toFixed(1), encodeCpu.toFixed(1), load.toFixed(1),
      ]);
      console.log(`  ${endToEnd.toFixed(0)} rows/s end to end, peak RSS ${mib(peakRss)} MiB (the worker process's VmHWM), pure encode ${encodeRate.toFixed(0)} rows/s`);
      console.log(`  worker process before the export: ${describeMemory(baseline)}`);
      console.log(`  worker process at its peak:       ${describeMemory(peak)}`);
      console.log(`  CPU per row: worker process ${nodeCpu.toFixed(1)} µs, PostgreSQL ${postgresCpu.toFixed(1)} µs; pure encode ${encodeCpu.toFixed(1)} µs`);
      console.log(`  PostgreSQL CPU µs per row by process: ${describePostgresCpu(postgresCpuStart, postgresCpuEnd, rows)}`);
      // The other stages alone, one batch at a time, to show where the time goes.
      console.log(`  stages alone: read (COPY → Arrow) ${readRate.toFixed(0)} rows/s, Arrow → parquet-wasm ${convertRate.toFixed(0)} rows/s`);
      await deps.db.pool.query('DELETE FROM trace_runs WHERE tenant_id = $1 AND session_id = $2', [workspace.id, project.id]);
    }
  } finally {
    await platform.stop();
    await s3.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(s3Dir, { recursive: true, force: true });
  }
  console.log('\n| rows | runs (days) | files | seconds | rows/s end to end | parquet-wasm encode rows/s | ratio | worker peak RSS MiB | worker RSS before MiB | at the peak: V8 heap / ArrayBuffers / wasm MiB | worker CPU µs/row | PostgreSQL CPU µs/row | encode CPU µs/row | load at start |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of table) console.log(`| ${row.join(' | ')} |`);
  const limits = config.exports;
  console.log(`\nBatches of up to ${limits.batchRows} rows and about ${mib(limits.batchBytes)} MiB of COPY output, ${limits.partSizeBytes / 1024 ** 2} MiB parts, ${limits.readConnections} read connections per run, ${limits.workerConcurrency} runs at once.`);
  console.log(`Targets: ratio ≥ 0.6, peak RSS ≤ 600 MiB and flat as rows grow. Machine: ${(await import('node:os')).cpus().length} cores, load ${(await import('node:os')).loadavg()[0]!.toFixed(1)}.`);
}

/** Waits for the export to finish, woken by its progress events. */
async function waitForExport(deps: import('../src/context.js').Deps, exportId: string): Promise<string> {
  const stop = new AbortController();
  const changes = deps.events.subscribe('exports.progress', { key: exportId, signal: stop.signal });
  try {
    for (;;) {
      const row = await deps.db.prisma.bulkExport.findUniqueOrThrow({ where: { id: exportId } });
      if (['Completed', 'Failed', 'Cancelled', 'TimedOut'].includes(row.status)) return row.status;
      await changes.next();
    }
  } finally {
    stop.abort();
  }
}

/**
 * parquet-wasm alone (zstd, the export's row groups) on the export's own batches: rows read with the
 * export's query and converted to a parquet-wasm table off the clock, then encoded (one batch per
 * file) on the clock, one batch at a time: wasm memory never shrinks, so holding the whole sample
 * there would raise the peak RSS measured for the next size.
 */
async function pureEncodeRate(
  deps: import('../src/context.js').Deps,
  tenantId: string,
  sessionId: string,
  sampleRows: number,
): Promise<{ encodeRate: number; encodeCpu: number; readRate: number; convertRate: number }> {
  const limits = deps.config.exports;
  const exportRow = { exportFields: [] as string[] } as unknown as Parameters<typeof exportFieldsOf>[0];
  const columns = exportColumns(exportFieldsOf(exportRow), 'v2_beta');
  const scope = { tenantId, sessionId, start: new Date(DAY0), end: new Date(DAY0 + DAYS * 86_400_000), filter: null };
  let cursor: { start_time: string; id: string } | null = null;
  let read = 0;
  let readSeconds = 0;
  let convertSeconds = 0;
  let encodeSeconds = 0;
  let encodeCpu = 0;
  let bytes = 0;
  while (read < sampleRows) {
    let clock = performance.now();
    // One Parquet row group of the export's (BATCH_ROWS rows) per file: the export reads smaller
    // batches when they exceed its batch bytes, but writes row groups of this size all the same.
    const size = Math.min(limits.batchRows, sampleRows - read);
    const upTo = await runBatchBoundary(deps.db.pool, scope, cursor, size);
    const { batch, rows, last } = recordBatchFromCopy(columns, await copyRunBatch(deps.db.pool, scope, columns, cursor, upTo), size);
    readSeconds += (performance.now() - clock) / 1000;
    if (!rows) break;
    cursor = last;
    read += rows;
    clock = performance.now();
    const wasmBatches = toWasmBatches(batch);
    convertSeconds += (performance.now() - clock) / 1000;
    const table = parquet.Table.fromIPCStream(concatIpc(wasmBatches));
    clock = performance.now();
    const cpu = nodeCpuMicros();
    // writeParquet consumes (frees) the table.
    bytes += parquet.writeParquet(table, writerProperties('zstandard', limits.batchRows)).byteLength;
    encodeCpu += nodeCpuMicros() - cpu;
    encodeSeconds += (performance.now() - clock) / 1000;
  }
  if (bytes === 0) throw new Error('nothing encoded');
  return { encodeRate: read / encodeSeconds, encodeCpu: encodeCpu / read, readRate: read / readSeconds, convertRate: read / convertSeconds };
}

/**
 * One day's export, stage by stage and one stage at a time (nothing overlaps, unlike the runner), with
 * the export's own columns, batch size, codec and part size: how long each stage takes per row.
 */
async function profileStages(deps: import('../src/context.js').Deps, endpoint: string, scope: Parameters<typeof copyRunBatch>[1]) {
  const limits = deps.config.exports;
  const columns = exportColumns(exportFieldsOf({ exportFields: [] } as unknown as Parameters<typeof exportFieldsOf>[0]), 'v2_beta');
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  const upload = new MultipartObject(client, 'bench', `profile/${Date.now()}.parquet`, limits.partSizeBytes);
  // Reused from batch to batch, as the runner does.
  const ipc = new IpcStreamEncoder();
  const arena = new DecodeArena();
  let copyBuffer: Buffer | undefined;
  /** Per stage: wall ms, and CPU µs of this process or (for `postgres` stages) of the PostgreSQL server. */
  const stages = new Map<string, { ms: number; cpu: number }>();
  const timed = async <T>(stage: string, work: () => T | Promise<T>, postgres = false): Promise<T> => {
    const cpu = () => (postgres ? postgresCpuMicros(deps.db.pool) : nodeCpuMicros());
    const [start, cpuStart] = [performance.now(), await cpu()];
    const value = await work();
    const [ms, used] = [performance.now() - start, (await cpu()) - cpuStart];
    const sum = stages.get(stage) ?? { ms: 0, cpu: 0 };
    stages.set(stage, { ms: sum.ms + ms, cpu: sum.cpu + used });
    return value;
  };
  let cursor: { start_time: string; id: string } | null = null;
  let rows = 0;
  let copyBytes = 0;
  /** PostgreSQL alone's CPU by kind of process, summed over the batches. */
  const aloneByKind = new Map<string, number>();
  for (;;) {
    const upTo = await timed('plan: batch boundary (index keys)', () => runBatchBoundary(deps.db.pool, scope, cursor, nextBatchRows(limits, { rows, bytes: copyBytes })));
    const select = runBatchSelect(scope, columns, cursor, upTo);
    // Needs a superuser (the embedded PostgreSQL's): PostgreSQL producing the rows, no client reading them.
    const kindsBefore = await postgresCpuByKind(deps.db.pool);
    await timed('PostgreSQL alone (COPY … TO /dev/null)', () => deps.db.pool.query(`COPY (${select}) TO '/dev/null' (FORMAT binary)`), true);
    const kindsAfter = await postgresCpuByKind(deps.db.pool);
    for (const [kind, micros] of kindsAfter) aloneByKind.set(kind, (aloneByKind.get(kind) ?? 0) + micros - (kindsBefore.get(kind) ?? 0));
    const copy = await timed('COPY into this process (PostgreSQL + socket)', () => copyRunBatch(deps.db.pool, scope, columns, cursor, upTo, copyBuffer));
    copyBuffer = Buffer.from(copy.buffer, copy.byteOffset, copy.buffer.byteLength - copy.byteOffset);
    arena.reset();
    const spans = await timed('decode: field spans', () => copyFieldSpans(copy, columns.length + 2, limits.batchRows, arena));
    if (!spans.rows) break;
    const { batch, last } = await timed('decode: Arrow columns', () => recordBatchFromSpans(columns, copy, spans, arena));
    const table = await timed('Arrow → parquet-wasm (IPC)', () => parquet.Table.fromIPCStream(ipc.encode(batch)));
    const encoded = await timed('Parquet encode (zstd)', () => parquet.writeParquet(table, writerProperties('zstandard', limits.batchRows)));
    await timed('upload (S3 multipart → s3rver)', () => upload.write(encoded));
    rows += spans.rows;
    copyBytes += copy.byteLength;
    cursor = last;
  }
  await timed('upload (S3 multipart → s3rver)', () => upload.complete());
  client.destroy();
  console.log(`stage profile: ${rows} rows in batches of up to ${limits.batchRows} rows / ${mib(limits.batchBytes)} MiB, ${(copyBytes / rows).toFixed(0)} COPY bytes per row, load ${loadavg()[0]!.toFixed(1)}`);
  console.log('| stage | ms | µs per row | rows/s | CPU µs per row |\n|---|---:|---:|---:|---:|');
  let pipeline = 0;
  let pipelineCpu = 0;
  for (const [stage, { ms, cpu }] of stages) {
    if (!stage.startsWith('PostgreSQL alone')) {
      pipeline += ms;
      pipelineCpu += cpu;
    }
    console.log(`| ${stage} | ${ms.toFixed(0)} | ${((ms * 1000) / rows).toFixed(1)} | ${((rows / ms) * 1000).toFixed(0)} | ${(cpu / rows).toFixed(1)} |`);
  }
  console.log(`| sum from COPY to upload, one after another | ${pipeline.toFixed(0)} | ${((pipeline * 1000) / rows).toFixed(1)} | ${((rows / pipeline) * 1000).toFixed(0)} | ${(pipelineCpu / rows).toFixed(1)} (this process) |`);
  console.log('(CPU: this process, except PostgreSQL alone: the whole PostgreSQL server, in 10 ms ticks.)');
  console.log(`PostgreSQL alone, CPU µs per row by process: ${describePostgresCpu(new Map(), aloneByKind, rows)}\n`);
  await postgresColumnShares(deps, scope, columns, rows);
}

/**
 * PostgreSQL's CPU per row for the day's rows by kind of column: one COPY of the whole day to /dev/null
 * per kind (the keys, plus that kind's columns), against the keys alone: what each kind adds to
 * producing an export's rows. The columns are the export's own SQL (binary forms).
 */
async function postgresColumnShares(deps: import('../src/context.js').Deps, scope: Parameters<typeof copyRunBatch>[1], columns: ReturnType<typeof exportColumns>, rows: number) {
  const copyAlone = async (subset: readonly { sql: string }[]) => {
    const before = await postgresCpuMicros(deps.db.pool);
    await deps.db.pool.query(`COPY (${runBatchSelect(scope, subset, null, null)}) TO '/dev/null' (FORMAT binary)`);
    return ((await postgresCpuMicros(deps.db.pool)) - before) / rows;
  };
  const keys = await copyAlone([{ sql: '1' }]);
  const all = await copyAlone(columns);
  console.log(`PostgreSQL CPU µs per row by kind of column (one COPY of the ${rows} rows to /dev/null each, load ${loadavg()[0]!.toFixed(1)}):`);
  console.log('| columns | CPU µs per row | over the keys alone |\n|---|---:|---:|');
  console.log(`| keys alone (scan, sort order, start_time and id) | ${keys.toFixed(1)} | |`);
  for (const kind of [...new Set(columns.map((column) => column.kind))]) {
    const subset = columns.filter((column) => column.kind === kind);
    const cpu = await copyAlone(subset);
    console.log(`| ${kind}: ${subset.map((column) => column.name).join(', ')} | ${cpu.toFixed(1)} | ${(cpu - keys).toFixed(1)} |`);
  }
  // The same JSON and timestamps in text form, to compare with the binary forms the export reads.
  for (const [kind, text] of [['json', (name: string) => `r.${name}::text`], ['timestamp', (name: string) => `r.${name}::text`]] as const) {
    const subset = columns.filter((column) => column.kind === kind).map((column) => ({ sql: text(column.name) }));
    if (!subset.length) continue;
    const cpu = await copyAlone(subset);
    console.log(`| ${kind} as text (::text), for comparison | ${cpu.toFixed(1)} | ${(cpu - keys).toFixed(1)} |`);
  }
  console.log(`| all the export's columns | ${all.toFixed(1)} | ${(all - keys).toFixed(1)} |\n`);
}

/** parquet-wasm record batches → one IPC stream buffer (a wasm Table), outside the timed section. */
function concatIpc(batches: parquet.RecordBatch[]): Uint8Array {
  // Each batch of one conversion shares the schema; one batch per conversion at these sizes.
  if (batches.length !== 1) throw new Error(`expected one record batch, got ${batches.length}`);
  return batches[0]!.intoIPCStream();
}

await main();
