// `npm run bench`: the benches one after another, each in a process of its own, and ONE table of
// their figures: each figure, its floor or reference measured in the same run, and the ratio. Every
// bench it runs writes its figures with `--json <file>` as { name: { value, unit, floor?, reference? } };
// this command gathers them into one JSON summary, so a before/after comparison is one command.
//
//   npm run bench                               runs, ingest (a few minutes)
//   npm run bench -- --quick                    shorter runs of each (about a minute of measuring)
//   npm run bench -- --reference                also the reference server (`langgraph-cli dev`), installed
//                                               here from bench/reference/package-lock.json (npm ci)
//   npm run bench -- --only ingest              some of the benches (comma-separated: runs, ingest)
//   npm run bench -- --json after.json          where the summary goes (default bench/results/bench-<time>.json)
//   npm run bench -- --compare before.json after.json
//                                               the before/after table of two summaries (runs nothing)
//
// It asserts nothing about time. The machine's load average is printed and stored with the figures:
// on a shared machine, compare runs taken under similar load, or better, counts that do not depend on
// it (statements, bytes, CPU per unit of work).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { installReference } from './processes.js';

export type Figure = { value: number; unit: string; floor?: number; reference?: number };
export type Figures = Record<string, Figure>;
type Summary = { meta: { date: string; commit: string | null; quick: boolean; machine: string; loadAverage: { before: number[]; after: number[] } }; figures: Figures };

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..');

type Bench = { name: string; file: string; args: (quick: boolean) => string[]; env: (quick: boolean, reference: boolean) => Record<string, string> };

const BENCHES: Bench[] = [
  {
    // The agent server against LangGraph in process (the floor) and, with --reference, the reference server.
    name: 'runs',
    file: 'runs.bench.ts',
    args: () => [],
    env: (quick, reference) => ({
      ...(quick ? { BENCH_SAMPLES: '60', BENCH_SECONDS: '4' } : {}),
      ...(reference ? {} : { BENCH_SKIP_REFERENCE: '1' }),
    }),
  },
  {
    // Trace ingestion against a raw multi-row insert of the same rows into the same table.
    name: 'ingest',
    file: 'ingest.bench.ts',
    args: (quick) => (quick ? ['--requests', '200', '--profile-requests', '30'] : []),
    env: () => ({}),
  },
];

async function main() {
  const { values: args, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      reference: { type: 'boolean', default: false },
      only: { type: 'string' },
      json: { type: 'string' },
      compare: { type: 'boolean', default: false },
    },
  });
  if (args.compare) {
    if (positionals.length !== 2) throw new Error('usage: npm run bench -- --compare before.json after.json');
    printComparison(readSummary(positionals[0]!), readSummary(positionals[1]!));
    return;
  }
  const only = args.only?.split(',').map((name) => name.trim());
  const benches = BENCHES.filter((bench) => !only || only.includes(bench.name));
  if (only && benches.length !== only.length) throw new Error(`--only takes ${BENCHES.map((bench) => bench.name).join(', ')}`);
  if (args.reference && benches.some((bench) => bench.name === 'runs')) installReference();

  const loadBefore = loadavg();
  const figures: Figures = {};
  const scratch = mkdtempSync(join(tmpdir(), 'bench-all-'));
  try {
    for (const bench of benches) {
      const out = join(scratch, `${bench.name}.json`);
      console.log(`── ${bench.name} (bench/${bench.file}${args.quick ? ', quick' : ''}) ──`);
      const code = await run(join(here, bench.file), [...bench.args(args.quick), '--json', out], bench.env(args.quick, args.reference));
      if (existsSync(out)) Object.assign(figures, JSON.parse(readFileSync(out, 'utf8')) as Figures);
      else console.log(`   bench/${bench.file} wrote no figures (exit ${code}): left out of the table`);
      if (code !== 0) process.exitCode = 1;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const summary: Summary = {
    meta: {
      date: new Date().toISOString(),
      commit: gitCommit(),
      quick: args.quick,
      machine: `${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}`,
      loadAverage: { before: loadBefore, after: loadavg() },
    },
    figures,
  };
  const file = args.json ?? join(root, 'bench/results', `bench-${summary.meta.date.replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
  console.log('');
  printSummary(summary);
  console.log(`\nsummary written to ${file} (compare two with: npm run bench -- --compare before.json after.json)`);
}

/** Runs a bench in its own process, its output passed through; resolves with its exit code. */
function run(file: string, args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

function gitCommit(): string | null {
  const result = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : null;
}

function readSummary(file: string): Summary {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as Summary | Figures;
  // A bench's own --json file (figures only) compares too.
  return 'figures' in parsed && 'meta' in parsed ? (parsed as Summary) : { meta: { date: '', commit: null, quick: false, machine: '', loadAverage: { before: [], after: [] } }, figures: parsed as Figures };
}

// ───────────────────────────── tables ─────────────────────────────

const number = (value: number) => (Math.abs(value) >= 100 ? Math.round(value).toLocaleString('en-US') : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2));
const withUnit = (value: number | undefined, unit: string) => (value === undefined ? '' : `${number(value)} ${unit}`);
/** The figure against its floor (or, lacking one, its reference): for a rate, the share of it reached; for a time, how many times it. */
const ratio = (figure: Figure) => {
  const base = figure.floor ?? figure.reference;
  return base === undefined || base === 0 ? '' : `${(figure.value / base).toFixed(2)}×`;
};
const loads = (values: number[]) => values.map((n) => n.toFixed(1)).join(' ');

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`;
  return [line(header), `|${widths.map((width, i) => (i === 0 ? `${'-'.repeat(width + 1)}|` : `${'-'.repeat(width + 1)}:|`)).join('')}`, ...rows.map(line)];
}

function printSummary(summary: Summary) {
  const rows = Object.entries(summary.figures).map(([name, figure]) => [
    name,
    withUnit(figure.value, figure.unit),
    figure.floor !== undefined ? `floor ${withUnit(figure.floor, figure.unit)}` : figure.reference !== undefined ? `reference ${withUnit(figure.reference, figure.unit)}` : '',
    ratio(figure),
  ]);
  for (const line of table(['figure', 'value', 'floor / reference (same run)', 'ratio'], rows)) console.log(line);
  const { meta } = summary;
  console.log(`${meta.machine}; commit ${meta.commit ?? '?'}${meta.quick ? '; --quick' : ''}; load average before ${loads(meta.loadAverage.before)}, after ${loads(meta.loadAverage.after)}`);
}

function printComparison(before: Summary, after: Summary) {
  const names = [...new Set([...Object.keys(before.figures), ...Object.keys(after.figures)])];
  const rows = names.map((name) => {
    const a = before.figures[name];
    const b = after.figures[name];
    const unit = (b ?? a)!.unit;
    return [
      name,
      a ? withUnit(a.value, unit) : '—',
      b ? withUnit(b.value, unit) : '—',
      a && b && a.value !== 0 ? `${(b.value / a.value).toFixed(2)}×` : '',
      a ? ratio(a) : '',
      b ? ratio(b) : '',
    ];
  });
  for (const line of table(['figure', 'before', 'after', 'after ÷ before', 'before ÷ floor/ref', 'after ÷ floor/ref'], rows)) console.log(line);
  for (const [label, summary] of [['before', before], ['after', after]] as const) {
    const { meta } = summary;
    if (meta.date) console.log(`${label}: ${meta.date}, commit ${meta.commit ?? '?'}${meta.quick ? ', --quick' : ''}, load average ${loads(meta.loadAverage.before)} → ${loads(meta.loadAverage.after)}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
