// Preloaded into a bench's server (NODE_OPTIONS=--import …/memory-probe.mjs, BENCH_MEMORY_FILE=<path>):
// appends the main thread's process.memoryUsage() to the file as a JSON line every second, so a bench
// can tell heap the server holds from native memory (socket buffers, malloc arenas) by reading it back.
import { appendFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.BENCH_MEMORY_FILE;
if (file && isMainThread) {
  const sample = () => {
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    appendFileSync(file, `${JSON.stringify({ t: Date.now(), pid: process.pid, rss, heapUsed, heapTotal, external, arrayBuffers })}\n`);
  };
  setInterval(sample, 1000).unref();
}
