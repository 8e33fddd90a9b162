// Entry of an ingest thread (see ingest-threads.ts). Worker threads do not inherit the main thread's
// module hooks, so the TypeScript loader is registered here too.
import { register } from 'tsx/esm/api';

register();
await import('./ingest-thread.worker.ts');
