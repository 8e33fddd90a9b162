// Executing one export run (one UTC day): trace runs by keyset cursor in batches → Arrow → Parquet →
// S3 multipart, rolling to a new file at the configured size and checkpointing after each file, so a
// retried or taken-over run resumes where the last file ended and never writes a row twice.
import type { Deps } from '../../../context.js';
import { destinationConfig, destinationCredentials } from './destinations.service.js';
import { exportFieldsOf } from './exports.service.js';
import type { DestinationConfigValue, FormatVersion } from './exports.schemas.js';
import * as store from './exports.store.js';
import { copyRunBatch, runBatchBoundary } from '../traces/trace-run-export.store.js';
import { DecodeArena, recordBatchFromCopy } from './copy-decode.js';
import { type ExportColumn, exportColumns } from './export-columns.js';
import { ParquetStreamWriter } from './parquet.js';
import { destinationClient, destinationRoot, MultipartObject, storageErrorReason } from './s3.js';

/** The folder of one day of an export: the spec's Hive layout for v2_beta, `runs/<date>` for v1. */
function exportDirectory(config: DestinationConfigValue, row: Pick<store.BulkExport, 'id' | 'workspaceId' | 'sessionId' | 'formatVersion'>, day: Date): string {
  const [year, month, date] = day.toISOString().slice(0, 10).split('-') as [string, string, string];
  const partition = (row.formatVersion as FormatVersion) === 'v2_beta' ? `year=${year}/month=${month}/day=${date}` : `${year}-${month}-${date}`;
  return [destinationRoot(config), `export_id=${row.id}`, `tenant_id=${row.workspaceId}`, `session_id=${row.sessionId}`, 'runs', partition]
    .filter(Boolean)
    .join('/');
}

/** The run is no longer ours: cancelled, timed out, or taken over by another worker. */
class LostLease extends Error {}
class RunTimedOut extends Error {}

/** A failure worth retrying later (pg-boss retries the job after the configured delay). */
class RetryableExportError extends Error {}

/**
 * Executes run `runId` as job `jobId` (its lease owner). Completes, fails (storage errors, a deleted
 * destination, retries exhausted) or returns quietly when the run is not ours to execute; throws
 * RetryableExportError after recording errors.retry_<n> when the run should be retried.
 * Publishes exports.progress after each file and status change.
 */
export async function executeExportRun(deps: Deps, runId: string, jobId: string): Promise<void> {
  const limits = deps.config.exports;
  const run = await store.leaseRun(deps.db, runId, jobId, limits.leaseSeconds);
  if (!run) return;
  const exportRow = run.export;
  const progress = () => deps.events.publish('exports.progress', { exportId: exportRow.id, runId }, exportRow.id);
  /** Ends the run (Failed: not retried, and the export fails) and settles the export. */
  const end = async (status: 'Completed' | 'Failed', message?: string) => {
    await store.finishRun(deps.db.pool, runId, jobId, status, message);
    await store.settleExport(deps.db.pool, exportRow.id);
    await progress();
  };
  const fail = (message: string) => end('Failed', message);

  if (exportRow.createdAt.getTime() + limits.exportTimeoutSeconds * 1000 < Date.now()) {
    await store.timeOutExports(deps.db.pool, limits.exportTimeoutSeconds);
    await progress();
    return;
  }
  if (!run.destination) return fail('Destination was deleted');

  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), limits.runTimeoutSeconds * 1000);
  // Between batches the loop heartbeats itself; this covers a slow upload or a slow query.
  const heartbeat = setInterval(() => void store.heartbeatRun(deps.db.pool, runId, jobId).catch(() => undefined), (limits.leaseSeconds * 1000) / 3);
  try {
    await writeRunFiles(deps, run, jobId, timeout.signal, progress);
    await end('Completed');
  } catch (error) {
    if (error instanceof LostLease) return;
    const reason = storageErrorReason(error);
    // Storage and destination errors are not retried: the bucket will not come back by itself.
    if (reason) return fail(`${reason}: ${(error as Error).message}`);
    const message = error instanceof RunTimedOut ? `Run timed out after ${limits.runTimeoutSeconds} s` : (error as Error).message || String(error);
    if (run.retryNumber >= limits.retries) return fail(message);
    const retries = await store.recordRunRetry(deps.db.pool, runId, jobId, message);
    await progress();
    if (retries !== undefined) throw new RetryableExportError(message);
  } finally {
    clearTimeout(timer);
    clearInterval(heartbeat);
  }
}

async function writeRunFiles(deps: Deps, run: store.RunToExecute, owner: string, signal: AbortSignal, progress: () => Promise<void>) {
  const limits = deps.config.exports;
  const exportRow = run.export;
  const config = destinationConfig(run.destination!);
  const client = destinationClient(config, destinationCredentials(deps, run.destination!), limits.s3TimeoutSeconds);
  const columns = exportColumns(exportFieldsOf(exportRow), exportRow.formatVersion as FormatVersion);
  const directory = exportDirectory(config, exportRow, run.startTime);
  const checkpoint = store.runResult(run);
  let result: store.RunResult = checkpoint ?? { rows_written: 0, exported_files: [], export_path: directory, latest_cursor: null };
  let cursor = result.latest_cursor;
  const scope = { tenantId: exportRow.workspaceId, sessionId: exportRow.sessionId, start: run.startTime, end: run.endTime, filter: exportRow.filter };
  let writer: ParquetStreamWriter | undefined;

  const closeFile = async () => {
    const file = writer!;
    writer = undefined;
    await file.finish();
    result = {
      rows_written: result.rows_written + file.rows,
      exported_files: [...result.exported_files, file.key],
      export_path: directory,
      latest_cursor: cursor,
    };
    if (!(await store.checkpointRun(deps.db.pool, run.id, owner, result))) throw new LostLease();
    await progress();
  };

  const batches = readAhead(deps, scope, columns, cursor);
  // The batch's columns live here until the writer took them (parquet-wasm copies them at once).
  const arena = new DecodeArena();
  try {
    for (;;) {
      if (signal.aborted) throw new RunTimedOut();
      const copy = await batches.next();
      // Once per batch: stop here when the run was cancelled, timed out or taken over.
      if (!(await store.heartbeatRun(deps.db.pool, run.id, owner))) throw new LostLease();
      if (!copy) break;
      arena.reset();
      const { batch, rows, last } = recordBatchFromCopy(columns, copy, limits.batchRows, arena);
      batches.recycle(copy);
      if (rows === 0) continue;
      // File names are the run and the file's index: a retry rewrites an unfinished file under the
      // same name rather than leaving a partial duplicate beside it.
      writer ??= new ParquetStreamWriter(
        new MultipartObject(client, config.bucket_name, `${directory}/${run.id}_${result.exported_files.length}.parquet`, limits.partSizeBytes),
        { compression: exportRow.compression as never, rowGroupRows: limits.batchRows },
      );
      await writer.write(batch);
      cursor = last;
      if (writer.bytes >= limits.fileSizeBytes) await closeFile();
    }
    if (writer) await closeFile();
    else if (!checkpoint) {
      if (!(await store.checkpointRun(deps.db.pool, run.id, owner, result))) throw new LostLease();
    }
  } catch (error) {
    await writer?.abort();
    throw error;
  } finally {
    client.destroy();
  }
}

/** Rows of a run's first batch, before its bytes per row are known: small, so a run of huge rows starts small. */
const FIRST_BATCH_ROWS = 500;

/**
 * Rows of the next batch: as many as fit in `batchBytes` of COPY output at the bytes per row seen so
 * far, at most `batchRows` (also the Parquet row group size). So a run's memory is bounded by bytes:
 * rows of 100 kB each make batches of 40 rows, not of 5000 (500 MB).
 */
export function nextBatchRows(limits: { batchRows: number; batchBytes: number }, seen: { rows: number; bytes: number }): number {
  if (seen.rows === 0) return Math.min(limits.batchRows, FIRST_BATCH_ROWS);
  return Math.max(1, Math.min(limits.batchRows, Math.floor(limits.batchBytes / (seen.bytes / seen.rows))));
}

/**
 * The run's batches after `cursor`, in order, read ahead: while the caller encodes and uploads one,
 * up to `readConnections` more are read at once, each over its own connection (PostgreSQL producing
 * the rows is the slow stage). Each batch is planned as a key range ending at runBatchBoundary, so the
 * ranges read at once meet exactly: no row missed or read twice; its row count is nextBatchRows, so a
 * run holds about (readConnections + 1) × batchBytes of COPY output however fast it reads. A batch is
 * its binary COPY bytes, in one of a few buffers the caller hands back (recycle) once decoded: fresh
 * multi-megabyte buffers per batch cost more to first touch than the copies into them.
 */
function readAhead(deps: Deps, scope: Parameters<typeof copyRunBatch>[1], columns: ExportColumn[], cursor: store.RunResult['latest_cursor']) {
  const limits = deps.config.exports;
  const inFlight: Promise<Buffer>[] = [];
  const spare: Buffer[] = [];
  /** Full batches read so far: their rows and COPY bytes. */
  const seen = { rows: 0, bytes: 0 };
  let from = cursor;
  let planned = false;
  let filling: Promise<void> | undefined;
  const fill = async () => {
    while (!planned && inFlight.length < limits.readConnections) {
      // Until the first batch arrived, one read at a time: its size sets the next ones'.
      if (seen.rows === 0 && inFlight.length > 0) await inFlight[0]!.catch(() => undefined);
      const rows = nextBatchRows(limits, seen);
      const upTo = await runBatchBoundary(deps.db.pool, scope, from, rows);
      const after = from;
      const read = copyRunBatch(deps.db.pool, scope, columns, after, upTo, spare.pop());
      // Only a full batch (upTo found) has a known row count; the last one is not counted.
      if (upTo) {
        void read.then(
          (copy) => {
            seen.rows += rows;
            seen.bytes += copy.byteLength;
          },
          () => undefined,
        );
      }
      // A failed read is reported when its turn comes, or dropped with the run.
      read.catch(() => undefined);
      inFlight.push(read);
      if (upTo) from = upTo;
      else planned = true;
    }
  };
  return {
    /** The next batch's COPY bytes, or null after the last. */
    async next(): Promise<Buffer | null> {
      await (filling ?? fill());
      const batch = inFlight.shift();
      if (!batch) return null;
      filling = fill();
      filling.catch(() => undefined);
      return batch;
    },
    /** Takes back the buffer of a batch the caller is done with, for a later read. */
    recycle(copy: Buffer) {
      spare.push(Buffer.from(copy.buffer, copy.byteOffset, copy.buffer.byteLength - copy.byteOffset));
    },
  };
}
