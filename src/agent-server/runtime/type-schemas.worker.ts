// Reads schemas from TypeScript types in a worker thread (through thread-entry.mjs): the
// type-checker is synchronous and may take seconds, which neither runs nor requests should wait on.
import { parentPort, workerData } from 'node:worker_threads';
import { type GraphSpec, readTypeSchemas } from './type-schemas.js';

parentPort!.postMessage(readTypeSchemas((workerData as { specs: GraphSpec[] }).specs));
