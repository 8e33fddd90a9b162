// CPU time and I/O bytes of a `serve` process and its PostgreSQL, read from /proc (Linux), so the
// benches can say what a run costs each part in CPU µs and bytes: counts that hardly depend on the
// machine's load, unlike latencies. The serve process is split by thread: its main thread (HTTP, the
// api and worker roles), the runtime thread and the ingest threads (named `ap-runtime`, `ap-ingest` by
// thread-entry.mjs), and the rest (V8's GC and compiler helpers, libuv's thread pool).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const CPU_PARTS = ['api thread (HTTP, api + worker roles)', 'runtime thread', 'ingest threads', 'V8 / libuv helper threads', 'PostgreSQL (all backends)'] as const;
export type CpuPart = (typeof CPU_PARTS)[number];
// Processes the serve process started other than its PostgreSQL: a deployed revision's agent server
// (the sandbox's bubblewrap and the runtime child under it), split by thread like the serve process.
export const CHILD_PARTS = ['deployed agent server: main thread', 'deployed agent server: runtime thread', 'deployed agent server: other threads'] as const;
export type ChildPart = (typeof CHILD_PARTS)[number];
// Time a thread was runnable but waited for a core (/proc schedstat): where a process is starved
// (its cgroup's CPU share, the machine's other load) rather than busy.
export const WAIT_PARTS = ['api thread', 'runtime thread', 'deployed agent server: main thread'] as const;
export type WaitPart = (typeof WAIT_PARTS)[number];
export type ProcessSample = {
  cpuSeconds: Record<CpuPart, number>;
  childCpuSeconds: Record<ChildPart, number>;
  waitSeconds: Record<WaitPart, number>;
  /** Of PostgreSQL's CPU, what the backends of deployments' databases (agent_deployment_<id>) used. */
  deploymentDatabaseSeconds: number;
  readBytes: number;
  writtenBytes: number;
};

const ticksPerSecond = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** utime + stime of a /proc stat file, in seconds (fields after the parenthesised name, which may hold spaces). */
function cpuSecondsOf(statPath: string): number {
  try {
    const fields = readFileSync(statPath, 'utf8').split(') ')[1]!.split(' ');
    // fields[0] is the state (stat field 3): utime and stime are stat fields 14 and 15.
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return 0; // the thread or process ended meanwhile
  }
}

/** Seconds the thread waited on a run queue (the second field of schedstat, in ns). */
function waitSecondsOf(schedstatPath: string): number {
  try {
    return Number(readFileSync(schedstatPath, 'utf8').split(' ')[1]) / 1e9;
  } catch {
    return 0;
  }
}

function parentOf(pid: string): number | undefined {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * One reading: `pid` the serve process, `postgresDir` the data folder of its PostgreSQL (postmaster.pid
 * names the postmaster; its children are the backends and background processes). Backends that exited
 * since the last reading take their CPU time with them: the pools keep theirs open during a bench.
 */
export function sampleProcesses(pid: number, postgresDir: string): ProcessSample {
  const cpuSeconds = Object.fromEntries(CPU_PARTS.map((part) => [part, 0])) as Record<CpuPart, number>;
  const waitSeconds = Object.fromEntries(WAIT_PARTS.map((part) => [part, 0])) as Record<WaitPart, number>;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let name = '';
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const part: CpuPart =
      Number(tid) === pid ? CPU_PARTS[0] : name.startsWith('ap-runtime') ? CPU_PARTS[1] : name.startsWith('ap-ingest') ? CPU_PARTS[2] : CPU_PARTS[3];
    cpuSeconds[part] += cpuSecondsOf(`/proc/${pid}/task/${tid}/stat`);
    if (part === CPU_PARTS[0] || part === CPU_PARTS[1]) waitSeconds[part === CPU_PARTS[0] ? WAIT_PARTS[0] : WAIT_PARTS[1]] += waitSecondsOf(`/proc/${pid}/task/${tid}/schedstat`);
  }
  const postmaster = Number(readFileSync(join(postgresDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  cpuSeconds[CPU_PARTS[4]] += cpuSecondsOf(`/proc/${postmaster}/stat`);
  let deploymentDatabaseSeconds = 0;
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const parent = parentOf(entry);
    if (parent === postmaster) {
      const seconds = cpuSecondsOf(`/proc/${entry}/stat`);
      cpuSeconds[CPU_PARTS[4]] += seconds;
      if (backendDatabase(entry)?.startsWith('agent_deployment_')) deploymentDatabaseSeconds += seconds;
    }
    else if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const childCpuSeconds = Object.fromEntries(CHILD_PARTS.map((part) => [part, 0])) as Record<ChildPart, number>;
  const descendants = [...(children.get(pid) ?? [])].filter((child) => child !== postmaster);
  for (let child = descendants.pop(); child !== undefined; child = descendants.pop()) {
    descendants.push(...(children.get(child) ?? []));
    for (const tid of safeReaddir(`/proc/${child}/task`)) {
      let name = '';
      try {
        name = readFileSync(`/proc/${child}/task/${tid}/comm`, 'utf8').trim();
      } catch {
        continue;
      }
      const part: ChildPart = Number(tid) === child ? CHILD_PARTS[0] : name.startsWith('ap-runtime') ? CHILD_PARTS[1] : CHILD_PARTS[2];
      childCpuSeconds[part] += cpuSecondsOf(`/proc/${child}/task/${tid}/stat`);
      // The agent server's main thread: the node process's (bubblewrap's own processes sleep).
      if (part === CHILD_PARTS[0] && name.startsWith('node')) waitSeconds[WAIT_PARTS[2]] += waitSecondsOf(`/proc/${child}/task/${tid}/schedstat`);
    }
  }
  // rchar/wchar: every read and write system call of the process (sockets: HTTP and the PostgreSQL
  // wire; pipes; files), whether or not it reached a disk.
  const io = Object.fromEntries(readFileSync(`/proc/${pid}/io`, 'utf8').trim().split('\n').map((line) => line.split(': ') as [string, string]));
  return { cpuSeconds, childCpuSeconds, waitSeconds, deploymentDatabaseSeconds, readBytes: Number(io.rchar), writtenBytes: Number(io.wchar) };
}

/** A PostgreSQL backend's database, from its title (`postgres: <user> <database> <client> <state>`). */
function backendDatabase(pid: string): string | undefined {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return title.startsWith('postgres: ') ? title.split(' ')[2] : undefined;
  } catch {
    return undefined;
  }
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return []; // the process ended meanwhile
  }
}

/** Per run between two readings: CPU µs by part, and bytes the serve process read and wrote. */
export function perRun(before: ProcessSample, after: ProcessSample, runs: number) {
  const cpuMicroseconds = Object.fromEntries(CPU_PARTS.map((part) => [part, ((after.cpuSeconds[part] - before.cpuSeconds[part]) * 1e6) / runs])) as Record<CpuPart, number>;
  const childCpuMicroseconds = Object.fromEntries(
    CHILD_PARTS.map((part) => [part, ((after.childCpuSeconds[part] - before.childCpuSeconds[part]) * 1e6) / runs]),
  ) as Record<ChildPart, number>;
  const waitMicroseconds = Object.fromEntries(WAIT_PARTS.map((part) => [part, ((after.waitSeconds[part] - before.waitSeconds[part]) * 1e6) / runs])) as Record<WaitPart, number>;
  return {
    cpuMicroseconds,
    childCpuMicroseconds,
    waitMicroseconds,
    deploymentDatabaseMicroseconds: ((after.deploymentDatabaseSeconds - before.deploymentDatabaseSeconds) * 1e6) / runs,
    serveReadBytes: (after.readBytes - before.readBytes) / runs,
    serveWrittenBytes: (after.writtenBytes - before.writtenBytes) / runs,
  };
}
export type PerRun = ReturnType<typeof perRun>;

/**
 * CPU seconds of each process of a PostgreSQL (the postmaster and its children), by pid: over a window,
 * a backend that connected meanwhile counts whole and one that exited is missing from the later reading.
 */
export function postgresCpuByPid(postgresDir: string): Map<number, number> {
  const postmaster = Number(readFileSync(join(postgresDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const seconds = new Map([[postmaster, cpuSecondsOf(`/proc/${postmaster}/stat`)]]);
  for (const entry of readdirSync('/proc')) {
    if (/^\d+$/.test(entry) && parentOf(entry) === postmaster) seconds.set(Number(entry), cpuSecondsOf(`/proc/${entry}/stat`));
  }
  return seconds;
}

/**
 * CPU seconds of a process's children that ended and were waited for (cutime + cstime): short-lived
 * commands it runs (`du` measuring a deployment's files, git), which no reading of live processes sees.
 */
export function reapedChildrenCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // cutime and cstime are stat fields 16 and 17.
    return (Number(fields[13]) + Number(fields[14])) / ticksPerSecond;
  } catch {
    return 0;
  }
}
