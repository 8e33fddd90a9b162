// Loaded into bench:export's worker process (`node --import`): samples the process's memory every
// 50 ms and, at each new peak RSS, writes the breakdown (V8 heap, external, ArrayBuffers, and
// parquet-wasm's linear memory, which grows and never shrinks) to BENCH_MEMORY_PROBE_FILE, so the
// bench can say what the exporting process held at its peak. Bench only: nothing of the platform.
import { writeFileSync } from 'node:fs';
import * as parquet from 'parquet-wasm';

const file = process.env.BENCH_MEMORY_PROBE_FILE;
let peak = 0;
if (file) {
  setInterval(() => {
    const memory = process.memoryUsage();
    if (memory.rss <= peak) return;
    peak = memory.rss;
    writeFileSync(file, JSON.stringify({ ...memory, wasm: parquet.wasmMemory().buffer.byteLength }));
  }, 50).unref();
}
