// Bulk export test support: s3rver on loopback (port 0, its own directory), fixture traces written
// through the real ingest path, waiting on export progress events, and reading exported Parquet back
// with DuckDB after downloading it from the bucket.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { v7 as uuid7 } from 'uuid';
import { afterAll, beforeAll } from 'vitest';
import { databaseUrl } from './helpers.js';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';
import type { BulkExport, BulkExportRun } from '../../src/platform/services/exports/exports.store.js';
import type { Deps } from '../../src/context.js';

export type ExportWithRuns = BulkExport & { runs: BulkExportRun[] };
import { ingestRunBatch } from '../../src/platform/ingest/ingest.service.js';

/**
 * Export test files take turns: their workers dispatch and execute export runs of the whole shared
 * test database, each with its file's shrunken limits and secret key, so two of them at once would
 * run each other's runs. A PostgreSQL advisory lock held for the file's duration serializes them.
 * Call first in the file, before its other hooks (after-hooks run in reverse order).
 */
export function takeTurnWithExportWorkers() {
  let holder: pg.Client | undefined;
  beforeAll(async () => {
    holder = new pg.Client({ connectionString: databaseUrl() });
    await holder.connect();
    await holder.query(`SELECT pg_advisory_lock(hashtext('agent-platform export test workers'))`);
  }, 900_000);
  afterAll(async () => {
    await holder?.end();
  });
}

export type S3Server = { endpoint: string; client: S3Client; createBucket(name: string): Promise<void>; stop(): Promise<void> };

/** s3rver on 127.0.0.1, a free port, a fresh directory; its default credentials are S3RVER/S3RVER. */
export async function startS3(): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), 's3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true });
  const address = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    endpoint,
    client,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async stop() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Every object key under `prefix`. */
export async function listKeys(client: S3Client, bucket: string, prefix = ''): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    keys.push(...(page.Contents ?? []).map((item) => item.Key!));
    token = page.NextContinuationToken;
  } while (token);
  return keys;
}

/** Downloads `keys` into a temporary folder (same relative paths) and opens DuckDB over it. */
export async function readParquet(client: S3Client, bucket: string, keys: string[]) {
  const folder = mkdtempSync(join(tmpdir(), 'export-read-'));
  for (const key of keys) {
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const file = join(folder, key);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, await object.Body!.transformToByteArray());
  }
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  return {
    folder,
    /** Rows of a query; `FILES` in the SQL stands for the downloaded files as one table. */
    async query(sql: string): Promise<Record<string, unknown>[]> {
      const files = keys.map((key) => `'${join(folder, key).replaceAll("'", "''")}'`).join(', ');
      const reader = await connection.runAndReadAll(sql.replaceAll('FILES', `read_parquet([${files}], hive_partitioning = false)`));
      return reader.getRowObjectsJS() as Record<string, unknown>[];
    },
    close() {
      connection.closeSync();
      instance.closeSync();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

const stamp = (iso: string, id: string) => `${iso.replace(/[-:.]/g, '').replace('Z', '')}000Z${id}`;

/**
 * Writes traces through the real ingest path into project `projectName`: for each day (UTC date →
 * number of runs), root runs with one child each (so counts are even), with varied values and nulls.
 */
export async function ingestFixtureTraces(deps: Deps, workspaceId: string, projectName: string, perDay: Record<string, number>) {
  const posts: Record<string, unknown>[] = [];
  let seed = 0;
  for (const [date, count] of Object.entries(perDay)) {
    for (let i = 0; i < count / 2; i++) {
      seed++;
      const rootId = uuid7();
      const childId = uuid7();
      const start = new Date(Date.parse(`${date}T00:00:00Z`) + ((i * 977_000) % 86_000_000) + 123);
      const rootStart = start.toISOString();
      const childStart = new Date(start.getTime() + 5).toISOString();
      const end = new Date(start.getTime() + 900).toISOString();
      posts.push({
        id: rootId,
        session_name: projectName,
        name: seed % 3 === 0 ? 'Agent "é"' : 'AgentExecutor',
        run_type: 'chain',
        start_time: rootStart,
        end_time: end,
        dotted_order: stamp(rootStart, rootId),
        // Incompressible text, so a few rows fill a Parquet page and files roll at a small size.
        inputs: { question: `question ${seed}`, nested: { n: seed, ok: true }, context: randomBytes(3000).toString('base64') },
        outputs: seed % 4 === 0 ? null : { answer: `answer ${seed}` },
        error: seed % 5 === 0 ? 'boom' : null,
        tags: seed % 2 === 0 ? ['a', `t${seed}`] : [],
        extra: { metadata: { user: `u${seed % 3}` } },
      });
      posts.push({
        id: childId,
        session_name: projectName,
        name: 'llm-call',
        run_type: 'llm',
        start_time: childStart,
        end_time: end,
        dotted_order: `${stamp(rootStart, rootId)}.${stamp(childStart, childId)}`,
        inputs: { prompt: `p${seed}` },
        outputs: { generations: [{ text: 'x' }], llm_output: { token_usage: { prompt_tokens: seed, completion_tokens: 2 * seed, total_tokens: 3 * seed } } },
        tags: ['llm'],
      });
    }
  }
  for (let from = 0; from < posts.length; from += 500) {
    await ingestRunBatch(deps, { workspaceId }, { post: posts.slice(from, from + 500) });
  }
  const project = await deps.db.prisma.tracingProject.findFirstOrThrow({ where: { workspaceId, name: projectName } });
  return { sessionId: project.id, runCount: posts.length };
}

const finished = (row: { status: string }) => ['Completed', 'Failed', 'Cancelled', 'TimedOut'].includes(row.status);

/** Resolves with the export (and its runs) once `done` holds, woken by exports.progress events (no polling). */
export async function waitForExport(deps: Deps, exportId: string, done: (row: ExportWithRuns) => boolean = finished, timeoutMs = 25_000 /* under vitest's 30 s test timeout, so the runs' state is reported */) {
  const stop = new AbortController();
  const changes = deps.events.subscribe('exports.progress', { key: exportId, signal: stop.signal });
  const timer = setTimeout(() => stop.abort(), timeoutMs);
  try {
    for (;;) {
      const row = await deps.db.prisma.bulkExport.findUniqueOrThrow({ where: { id: exportId }, include: { runs: { orderBy: { startTime: 'asc' } } } });
      if (done(row)) return row;
      const next = await changes.next();
      if (next.done) {
        const runs = row.runs.map((run) => ({ status: run.status, errors: run.errors, retries: run.retryNumber, lease: run.leaseOwner, updated: run.updatedAt }));
        throw new Error(`export ${exportId} still ${row.status} after ${timeoutMs} ms: ${JSON.stringify(runs)}`);
      }
    }
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
}
