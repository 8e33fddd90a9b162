// The body of an ingest thread (see ingest-threads.ts): ingests the requests posted to it, on its
// own database connections, and answers each with its outcome.
import { parentPort, workerData } from 'node:worker_threads';
import { connectDatabase } from '../db.js';
import { isAppError } from '../errors.js';
import { createLogger } from '../logger.js';
import { ingestRequest } from '../services/traces/ingest.service.js';
import type { IngestJob, IngestReply, IngestThreadData } from './ingest-threads.js';

const data = workerData as IngestThreadData;
const port = parentPort!;
const logger = createLogger(data.config).child({ thread: 'ingest' });
const db = connectDatabase(data.databaseUrl, { poolSize: data.config.dbPoolSize, applicationName: 'agent-platform-ingest' });
const deps = { db, config: data.config };

port.on('message', (job: IngestJob) => {
  void ingestRequest(deps, job.who, job.request).then(
    (result) => port.postMessage({ id: job.id, result } satisfies IngestReply),
    (error: unknown) => {
      if (isAppError(error)) {
        port.postMessage({ id: job.id, error: { code: error.code, message: error.message, details: error.details } } satisfies IngestReply);
      } else {
        logger.error({ err: error }, 'ingestion failed');
        port.postMessage({ id: job.id, unexpected: (error as Error).message } satisfies IngestReply);
      }
    },
  );
});
