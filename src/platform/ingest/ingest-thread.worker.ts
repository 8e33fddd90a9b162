// The body of an ingest thread (see ingest-threads.ts): ingests the requests posted to it, on its
// own database connections, and answers each with its outcome.
import { parentPort, workerData } from 'node:worker_threads';
import { isAppError } from '../../errors.js';
import { createLogger } from '../../logger.js';
import { configInThread, createDeps } from '../../wiring.js';
import { decodeAndIngest, type IngestJob, type IngestReply, type IngestThreadData } from './ingest-threads.js';

const data = workerData as IngestThreadData;
const port = parentPort!;
const config = configInThread(data.config);
const logger = createLogger(config).child({ thread: 'ingest' });
// An ingest thread only writes: no LISTEN connection, and no threads of its own.
const { deps } = await createDeps(config, logger, {
  databaseUrl: data.databaseUrl,
  applicationName: 'agent-platform-ingest',
  listen: false,
});

port.on('message', (job: IngestJob) => {
  void decodeAndIngest(deps, job.who, job.request).then(
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
