// `npm run bench:export`: bulk export end to end, PostgreSQL → Arrow → Parquet (zstd) → S3 multipart
// into s3rver (a separate process on loopback), through the real worker path (pg-boss jobs, one run
// per UTC day, the default limits). For each size it prints rows/s end to end, the peak RSS of this
// process (API + workers) during the export, and, in the same run, parquet-wasm's pure encode rate on
// the same batches (read with the export's own query, converted before the clock starts): the ceiling.
// It checks the export is complete (rows written == rows in range) and asserts nothing about time.
//
// Options: --rows <n> (one size; default: 250000, 500000 and 1000000 in turn), --days <n> (default 4),
// --encode-sample <n> (rows encoded for the ceiling, default 200000).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { createDestination } from '../src/services/exports/destinations.service.js';
import { createExport, exportFieldsOf } from '../src/services/exports/exports.service.js';
import { copyRunBatch } from '../src/services/traces/trace-runs.store.js';
import { exportColumns, recordBatchFromCopy, toWasmBatches, writerProperties } from '../src/services/exports/parquet.js';
import { authenticateApiKey } from '../src/services/tenancy/tenancy.service.js';
import { startPlatform } from '../src/platform.js';
import { createBenchTenant } from './tenant.js';
import * as parquet from 'parquet-wasm';

const { values: args } = parseArgs({
  options: { rows: { type: 'string' }, days: { type: 'string', default: '4' }, 'encode-sample': { type: 'string', default: '200000' } },
});
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
 * Realistic trace runs straight into trace_runs (one INSERT … SELECT per chunk): traces of five runs
 * (chain root, two chain nodes, an LLM call, a tool) with inputs, outputs, metadata, tags, tokens and
 * costs of typical sizes, spread evenly over `days` UTC days.
 */
async function insertRuns(pool: import('pg').Pool, tenantId: string, sessionId: string, rows: number, days: number) {
  const chunk = 50_000;
  for (let from = 0; from < rows; from += chunk) {
    await pool.query(
      `INSERT INTO trace_runs (tenant_id, id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type, start_time, end_time, status,
                               is_root, dotted_order, inputs, outputs, error, extra, events, tags, total_tokens, prompt_tokens, completion_tokens,
                               total_cost, prompt_cost, completion_cost, first_token_time)
       SELECT $1::uuid, id, $2::uuid, trace, CASE WHEN pos = 0 THEN NULL ELSE trace END, CASE WHEN pos = 0 THEN '{}'::uuid[] ELSE ARRAY[trace] END,
              (ARRAY['AgentExecutor','planner','executor','ChatOpenAI','search'])[pos + 1], (ARRAY['chain','chain','chain','llm','tool'])[pos + 1],
              t, t + make_interval(secs => 0.2 + (g % 900) / 1000.0), CASE WHEN g % 50 = 0 THEN 'error' ELSE 'success' END,
              pos = 0, to_char(t AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISSUS"Z"') || id::text,
              jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat(md5(g::text), 8))), 'context', repeat(md5((g + 1)::text), 6)),
              CASE WHEN g % 50 = 0 THEN NULL ELSE jsonb_build_object('output', repeat(md5((g + 2)::text), 10)) END,
              CASE WHEN g % 50 = 0 THEN 'ToolException: upstream timed out' END,
              jsonb_build_object('metadata', jsonb_build_object('user_id', 'user-' || g % 50, 'thread_id', 'thread-' || g % 200, 'ls_model_name', 'gpt-4o-mini'),
                                 'runtime', jsonb_build_object('sdk', 'langsmith-js', 'sdk_version', '0.12.0')),
              CASE WHEN pos = 3 THEN jsonb_build_array(jsonb_build_object('name', 'new_token', 'time', t)) END,
              ARRAY['bench', 'shard-' || g % 8], CASE WHEN pos = 3 THEN 300 + g % 700 END, CASE WHEN pos = 3 THEN 200 + g % 500 END,
              CASE WHEN pos = 3 THEN 100 + g % 200 END, CASE WHEN pos = 3 THEN (g % 1000) / 100000.0 END,
              CASE WHEN pos = 3 THEN (g % 700) / 100000.0 END, CASE WHEN pos = 3 THEN (g % 300) / 100000.0 END, CASE WHEN pos = 3 THEN t + interval '150 ms' END
         FROM (SELECT g, g % 5 AS pos, gen_random_uuid() AS id,
                      ('00000000-0000-4000-8000-' || lpad(to_hex(g / 5), 12, '0'))::uuid AS trace,
                      to_timestamp($3::float8 + (g::float8 / $4::float8) * $5::float8) AS t
                 FROM generate_series($6::bigint, $7::bigint) AS g) AS s`,
      [tenantId, sessionId, DAY0 / 1000, rows, days * 86_400, from, Math.min(rows, from + chunk) - 1],
    );
  }
}

const mib = (bytes: number) => (bytes / 1024 ** 2).toFixed(0);

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-export-'));
  const s3Dir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-s3-'));
  const s3 = await startS3rver(s3Dir);
  const config = loadConfig({}, {
    AGENT_PLATFORM_DATA_DIR: dataDir,
    PORT: '0',
    AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    AGENT_PLATFORM_INGEST_THREADS: '0',
    AGENT_PLATFORM_ROLES: 'api,worker',
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

    for (const rows of SIZES) {
      const project = await deps.db.prisma.tracingProject.create({ data: { id: crypto.randomUUID(), workspaceId: workspace.id, name: `bench-${rows}-${Date.now()}` } });
      process.stdout.write(`${rows} rows: inserting … `);
      const insertStart = performance.now();
      await insertRuns(deps.db.pool, workspace.id, project.id, rows, DAYS);
      await deps.db.pool.query('VACUUM ANALYZE trace_runs');
      console.log(`${((performance.now() - insertStart) / 1000).toFixed(1)} s; exporting …`);

      global.gc?.();
      let peakRss = process.memoryUsage().rss;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
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
      clearInterval(sampler);
      const runs = await deps.db.prisma.bulkExportRun.findMany({ where: { bulkExportId: created.id } });
      const written = runs.reduce((sum, run) => sum + ((run.metadata as any).result?.rows_written ?? 0), 0);
      const files = runs.reduce((sum, run) => sum + ((run.metadata as any).result?.exported_files?.length ?? 0), 0);
      if (finished !== 'Completed' || written !== rows) throw new Error(`export ${finished}: ${written} of ${rows} rows written`);

      const { encodeRate, readRate, convertRate } = await pureEncodeRate(deps, workspace.id, project.id, Math.min(rows, ENCODE_SAMPLE));
      const endToEnd = rows / seconds;
      table.push([String(rows), String(runs.length), String(files), seconds.toFixed(1), endToEnd.toFixed(0), encodeRate.toFixed(0), (endToEnd / encodeRate).toFixed(2), mib(peakRss)]);
      console.log(`  ${endToEnd.toFixed(0)} rows/s end to end, peak RSS ${mib(peakRss)} MiB, pure encode ${encodeRate.toFixed(0)} rows/s`);
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
  console.log('\n| rows | runs (days) | files | seconds | rows/s end to end | parquet-wasm encode rows/s | ratio | peak RSS MiB |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of table) console.log(`| ${row.join(' | ')} |`);
  console.log(`\nTargets: ratio ≥ 0.6, peak RSS ≤ 600 MiB and flat as rows grow. Machine: ${(await import('node:os')).cpus().length} cores, load ${(await import('node:os')).loadavg()[0]!.toFixed(1)}.`);
}

/** Waits for the export to finish, woken by its progress events. */
async function waitForExport(deps: import('../src/services/context.js').Deps, exportId: string): Promise<string> {
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
 * export's query and converted to parquet-wasm record batches before the clock starts, encoded one
 * batch per file. Batches are kept only for `sampleRows` rows, so the sample bounds this step's memory.
 */
async function pureEncodeRate(
  deps: import('../src/services/context.js').Deps,
  tenantId: string,
  sessionId: string,
  sampleRows: number,
): Promise<{ encodeRate: number; readRate: number; convertRate: number }> {
  const limits = deps.config.exports;
  const exportRow = { exportFields: [] as string[] } as unknown as Parameters<typeof exportFieldsOf>[0];
  const columns = exportColumns(exportFieldsOf(exportRow), 'v2_beta');
  const scope = { tenantId, sessionId, start: new Date(DAY0), end: new Date(DAY0 + DAYS * 86_400_000), filter: null };
  const batches: parquet.Table[] = [];
  let cursor: { start_time: string; id: string } | null = null;
  let read = 0;
  let readSeconds = 0;
  let convertSeconds = 0;
  while (read < sampleRows) {
    let clock = performance.now();
    const size = Math.min(limits.batchRows, sampleRows - read);
    const { batch, rows, last } = recordBatchFromCopy(columns, await copyRunBatch(deps.db.pool, scope, columns, cursor, size), size);
    readSeconds += (performance.now() - clock) / 1000;
    if (!rows) break;
    cursor = last;
    read += rows;
    clock = performance.now();
    const wasmBatches = toWasmBatches(batch);
    convertSeconds += (performance.now() - clock) / 1000;
    batches.push(parquet.Table.fromIPCStream(concatIpc(wasmBatches)));
  }
  const start = performance.now();
  let bytes = 0;
  // writeParquet consumes (frees) each table.
  for (const table of batches) bytes += parquet.writeParquet(table, writerProperties('zstandard', limits.batchRows)).byteLength;
  const seconds = (performance.now() - start) / 1000;
  if (bytes === 0) throw new Error('nothing encoded');
  return { encodeRate: read / seconds, readRate: read / readSeconds, convertRate: read / convertSeconds };
}

/** parquet-wasm record batches → one IPC stream buffer (a wasm Table), outside the timed section. */
function concatIpc(batches: parquet.RecordBatch[]): Uint8Array {
  // Each batch of one conversion shares the schema; one batch per conversion at these sizes.
  if (batches.length !== 1) throw new Error(`expected one record batch, got ${batches.length}`);
  return batches[0]!.intoIPCStream();
}

await main();
