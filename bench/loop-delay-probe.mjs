// Preloaded into a bench's server (NODE_OPTIONS=--import …/loop-delay-probe.mjs, BENCH_LOOP_FILE=<path>):
// appends each thread's event-loop delay over the last second (its largest and its 99th percentile, ms)
// to the file as a JSON line, so a bench can tell a thread that could not run (busy, or starved of a
// core) from one that was waiting on something else. The main thread is the api; a worker, the runtime.
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, threadId } from 'node:worker_threads';

const file = process.env.BENCH_LOOP_FILE;
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  setInterval(() => {
    const ms = (ns) => Math.round(ns / 1e6);
    appendFileSync(file, `${JSON.stringify({ t: Date.now(), pid: process.pid, thread: isMainThread ? 'main' : `worker ${threadId}`, max: ms(histogram.max), p99: ms(histogram.percentile(99)) })}\n`);
    histogram.reset();
  }, 1000).unref();
}
