// Where trace ingestion's CPU work (decompressing, parsing multipart and JSON, normalising runs,
// building the INSERT) runs: in worker threads when the process has them, so one busy ingest endpoint
// does not bound the whole API to a single core, else on the request's thread. The request thread
// reads the body, authenticates and hands the still-encoded bytes here (ingestEncoded); a thread
// decodes them (ingest-wire.ts), stores the runs through the ingest services on its own connections
// and answers with the outcome. Errors come back as the AppError they were (same status and details as
// inline), anything else as a 500.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Deps } from '../../context.js';
import type { ProcessDeps } from '../../wiring.js';
import { type AppError as AppErrorType, AppError } from '../../errors.js';
import { createGate } from '../../limits/concurrency.js';
import type { IngestRequest, Ingester, IngestResult, RunBatch } from './ingest-types.js';
import { decodeIngestRequest } from './ingest-wire.js';
import { ingestRunBatch } from './ingest.service.js';
import { ingestOtlpSpans } from './otlp-ingest.service.js';
import { ingestFeedback } from '../services/traces/feedback.service.js';

/** Ingests a request in one of the process's ingest threads when it has them, else here. */
export function ingestEncoded(deps: Pick<Deps, 'db' | 'config' | 'ingestThreads'>, who: Ingester, request: IngestRequest): Promise<IngestResult> {
  return deps.ingestThreads ? deps.ingestThreads.ingest(who, request) : decodeAndIngest(deps, who, request);
}

// One body at a time per thread: each may hold about three times the ingest limit while it is
// decoded and parsed (measured with npm run bench:bombs); the writes that follow still overlap.
const bodyParsing = createGate(1);

/** Decodes and parses an ingestion request here, then stores it (what an ingest thread does). */
export async function decodeAndIngest(deps: Pick<Deps, 'db' | 'config'>, who: Ingester, request: IngestRequest): Promise<IngestResult> {
  const guards = { zstdWindowBytes: deps.config.zstdWindowLimitBytes, jsonMaxDepth: deps.config.jsonMaxDepth };
  const decoded = await bodyParsing.run(() => decodeIngestRequest(request, deps.config.ingestBodyLimitBytes, guards));
  if ('traces' in decoded) return ingestOtlpSpans(deps, who, decoded.traces, { project: request.project, jsonMaxDepth: guards.jsonMaxDepth });
  // Not awaited here: this function's frame (the decoded batch in it) ends now, rather than holding
  // the parsed batch while its runs wait for their INSERT (ingestRunBatch keeps only the normalised runs).
  return storeDecoded(deps, who, decoded.batch);
}

function storeDecoded(deps: Pick<Deps, 'db' | 'config'>, who: Ingester, batch: RunBatch): Promise<IngestResult> {
  const feedback = batch.feedback;
  const stored = ingestRunBatch(deps, who, batch);
  // Feedback batched with runs is stored after them: it may be on a run of this very batch.
  if (!feedback?.length) return stored;
  return stored.then(async (result) => {
    const rejected = await ingestFeedback(deps, who, feedback);
    return rejected ? { ...result, rejected } : result;
  });
}

export type IngestThreadData = { config: Config; databaseUrl: string };
export type IngestJob = { id: number; who: Ingester; request: IngestRequest };
export type IngestReply =
  | { id: number; result: IngestResult }
  | { id: number; error: { code: AppErrorType['code']; message: string; details?: AppErrorType['details'] } }
  | { id: number; unexpected: string };

type Pending = { resolve: (result: IngestResult) => void; reject: (error: unknown) => void };
type Thread = { worker: Worker; pending: Map<number, Pending> };

class IngestThreads {
  private readonly threads: Thread[] = [];
  private nextId = 1;
  private stopping = false;

  constructor(
    private readonly data: IngestThreadData,
    private readonly size: number,
    private readonly logger: Logger,
  ) {}

  /** Ingests one request in the least busy thread (started on first use). */
  ingest(who: Ingester, request: IngestRequest): Promise<IngestResult> {
    while (this.threads.length < this.size) this.threads.push(this.spawn());
    const thread = this.threads.reduce((best, candidate) => (candidate.pending.size < best.pending.size ? candidate : best));
    const id = this.nextId++;
    return new Promise<IngestResult>((resolve, reject) => {
      thread.pending.set(id, { resolve, reject });
      thread.worker.postMessage({ id, who, request } satisfies IngestJob);
    });
  }

  /** Stops the threads once the requests in flight have their answers (at most `graceMs` later). */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    for (let waited = 0; waited < graceMs && this.threads.some((thread) => thread.pending.size); waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await Promise.all(this.threads.map((thread) => thread.worker.terminate()));
    this.threads.length = 0;
  }

  private spawn(): Thread {
    // Messages posted before the thread has loaded wait in its port.
    const worker = new Worker(new URL('../../thread-entry.mjs', import.meta.url), {
      workerData: { ...this.data, body: new URL('./ingest-thread.worker.ts', import.meta.url).href },
    });
    const thread: Thread = { worker, pending: new Map() };
    worker.on('message', (reply: IngestReply) => {
      const pending = thread.pending.get(reply.id);
      if (!pending) return;
      thread.pending.delete(reply.id);
      if ('result' in reply) pending.resolve(reply.result);
      else if ('error' in reply) pending.reject(new AppError(reply.error.code, reply.error.message, reply.error.details));
      else pending.reject(new Error(`ingest thread: ${reply.unexpected}`));
    });
    worker.on('error', (error) => this.logger.error({ err: error }, 'an ingest thread failed'));
    worker.on('exit', (code) => {
      for (const pending of thread.pending.values()) pending.reject(new Error(`ingest thread exited with code ${code}`));
      thread.pending.clear();
      if (this.stopping) return;
      // Replaced after a pause, so a thread that cannot start does not spin.
      this.logger.error({ code }, 'an ingest thread exited; replacing it');
      setTimeout(() => {
        if (this.stopping) return;
        const index = this.threads.indexOf(thread);
        if (index >= 0) this.threads[index] = this.spawn();
      }, 1000).unref();
    });
    return thread;
  }
}

/**
 * Hands a platform process's trace ingestion to worker threads when it runs the api role and the
 * configuration asks for threads (AGENT_PLATFORM_INGEST_THREADS); they stop with the process.
 */
export function startIngestThreads(wiring: ProcessDeps): void {
  const { deps } = wiring;
  if (!deps.config.roles.includes('api') || deps.config.ingestThreads <= 0) return;
  const threads = new IngestThreads({ config: deps.config, databaseUrl: deps.db.url }, deps.config.ingestThreads, deps.logger);
  deps.ingestThreads = threads;
  wiring.onStop(() => threads.stop());
}
