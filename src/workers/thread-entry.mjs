// Entry of the platform's worker threads (runtime-thread.ts, ingest-threads.ts): worker threads do not
// inherit the main thread's module hooks, so the TypeScript loader is registered here, then the
// thread's body (workerData.body, a file URL) is loaded.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.body);
