// Preloaded into a bench's server (NODE_OPTIONS=--import …/memory-probe.mjs, BENCH_MEMORY_FILE=<path>):
// appends the main thread's process.memoryUsage() to the file as a JSON line every second, so a bench
// can tell heap the server holds from native memory (socket buffers, malloc arenas) by reading it back.
// Every BENCH_MEMORY_GC_SECONDS (10 by default; 0: never) the sample is taken after a full garbage
// collection (`gc: true`): what the server holds, not garbage it has not collected yet.
import { appendFileSync } from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import { isMainThread } from 'node:worker_threads';

const file = process.env.BENCH_MEMORY_FILE;
const gcEvery = Number(process.env.BENCH_MEMORY_GC_SECONDS ?? 10);
if (file && isMainThread) {
  let collect;
  if (gcEvery > 0) {
    v8.setFlagsFromString('--expose-gc');
    collect = vm.runInNewContext('gc');
  }
  let tick = 0;
  const sample = () => {
    const gc = collect !== undefined && ++tick % gcEvery === 0;
    if (gc) collect();
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    appendFileSync(file, `${JSON.stringify({ t: Date.now(), pid: process.pid, gc, rss, heapUsed, heapTotal, external, arrayBuffers })}\n`);
  };
  setInterval(sample, 1000).unref();
}
