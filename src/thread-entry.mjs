// Entry of the platform's worker threads (runtime-thread.ts, ingest-threads.ts, graph-registry.ts's
// reading of TypeScript types): worker threads do not inherit the main thread's module hooks, so the
// TypeScript loader is registered here, then the thread's body (workerData.body, a file URL) is loaded.
import { writeFileSync } from 'node:fs';
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

// The OS thread is named after its body (`ap-runtime`, `ap-ingest`; Linux keeps 15 characters), so
// `top -H` and bench:runs tell the runtime and ingest threads from V8's helpers, which all inherit the
// name `node`. Best effort: only Linux has /proc/thread-self.
try {
  const body = new URL(workerData.body).pathname.split('/').pop().replace(/(-thread)?\.worker\.[jt]s$/, '');
  writeFileSync('/proc/thread-self/comm', `ap-${body}`.slice(0, 15));
} catch {
  // not Linux, or /proc not mounted: the thread keeps its inherited name
}
register();
await import(workerData.body);
