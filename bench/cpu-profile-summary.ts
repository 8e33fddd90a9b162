// Where a Node process's CPU went, from the `.cpuprofile` files `node --cpu-prof` writes (one per
// thread): self time summed by package (node_modules/<package>), by our own source file (src/…), by
// Node's internals (node:…) and by V8's own entries (GC, native), plus the costliest functions.
//
//   npx tsx bench/cpu-profile-summary.ts <dir with .cpuprofile files> [runs]
//
// bench:runs calls `summarizeProfiles` with the throughput window only (BENCH_CPU_PROF_DIR): profile
// timestamps and process.hrtime are the same monotonic clock on Linux.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

type ProfileNode = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };

function categoryOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? `V8 ${functionName}` : `native ${functionName || '(anonymous)'}`;
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [first, second] = url.slice(modules + '/node_modules/'.length).split('/');
    return first!.startsWith('@') ? `${first}/${second}` : first!;
  }
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  return url;
}

export type ProfileSummary = { thread: string; sampledMs: number; byCategory: [string, number][]; byFunction: [string, number][] };

/**
 * Summaries of every profile in `dir`, counting only samples inside [fromMicros, toMicros] (monotonic
 * µs; all when absent), idle samples left out. Each entry lists ms of self time.
 */
export function summarizeProfiles(dir: string, window?: { fromMicros: number; toMicros: number }): ProfileSummary[] {
  const summaries: ProfileSummary[] = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile')).sort()) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const categories = new Map<string, number>();
    const functions = new Map<string, number>();
    let at = profile.startTime;
    let total = 0;
    for (let i = 0; i < profile.samples.length; i++) {
      const delta = profile.timeDeltas[i] ?? 0;
      at += delta;
      if (window && (at < window.fromMicros || at > window.toMicros)) continue;
      const { functionName, url, lineNumber } = byId.get(profile.samples[i]!)!.callFrame;
      if (functionName === '(idle)') continue;
      const ms = delta / 1000;
      total += ms;
      const category = categoryOf(url, functionName);
      categories.set(category, (categories.get(category) ?? 0) + ms);
      const where = url ? `${category}:${lineNumber + 1}` : category;
      const name = `${functionName || '(anonymous)'} ${where}`;
      functions.set(name, (functions.get(name) ?? 0) + ms);
    }
    const top = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]).slice(0, 20);
    // File names: CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is the main thread.
    const threadId = file.split('.')[4];
    summaries.push({ thread: `${file} (thread ${threadId === '0' ? 'main' : threadId})`, sampledMs: total, byCategory: top(categories), byFunction: top(functions) });
  }
  return summaries;
}

/** Prints the summaries, in µs of CPU per run when `runs` is given. */
export function printSummaries(summaries: ProfileSummary[], runs?: number) {
  const unit = runs ? 'µs/run' : 'ms';
  const scale = (ms: number) => (runs ? (ms * 1000) / runs : ms);
  for (const summary of summaries) {
    if (summary.sampledMs < 1) continue;
    console.log(`\n${summary.thread}: ${scale(summary.sampledMs).toFixed(0)} ${unit} sampled (idle excluded)`);
    console.log('  self time by package / source file:');
    for (const [name, ms] of summary.byCategory) console.log(`    ${scale(ms).toFixed(1).padStart(8)} ${unit}  ${((ms / summary.sampledMs) * 100).toFixed(1).padStart(5)}%  ${name}`);
    console.log('  costliest functions (self time):');
    for (const [name, ms] of summary.byFunction.slice(0, 12)) console.log(`    ${scale(ms).toFixed(1).padStart(8)} ${unit}  ${((ms / summary.sampledMs) * 100).toFixed(1).padStart(5)}%  ${name}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir, runs] = process.argv.slice(2);
  if (!dir) throw new Error('usage: cpu-profile-summary.ts <dir> [runs]');
  printSummaries(summarizeProfiles(dir), runs ? Number(runs) : undefined);
}
