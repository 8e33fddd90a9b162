// A deployment's resource limits: memory, a CPU share (and a cap when asked), processes and threads,
// bounded by cgroups where this process may write them (cgroup v1 here, or v2 with a delegated
// subtree); elsewhere the limits are reported as not enforced. The sandbox's first process joins the
// deployment's cgroups (JOIN_CGROUPS) before it becomes bubblewrap (sandbox.ts).
import { chownSync, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { SandboxConfig } from '../../config.js';

/** A shell script that moves itself into the cgroups named before `--`, then runs what follows it. */
export const JOIN_CGROUPS = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
const CGROUP_ROOT = '/sys/fs/cgroup';
const CPU_PERIOD_US = 100_000;
/**
 * The weight of all deployments together (their parent group) against the platform's own threads and
 * the database's backends, each of which weighs one core: the machine's cores. At the default weight,
 * every deployment of the machine together weighed one thread of the platform's: a deployment's agent
 * server, one thread serving its API and running its graphs, waited for a core behind the platform's
 * gateway and its own database's backends. Each deployment's share divides this among deployments.
 */
const DEPLOYMENTS_CPUS = availableParallelism();

/**
 * A deployment's bounds: a memory limit; a CPU share (cores' worth of weight when cores are contended,
 * no cap when they are idle); and a hard CPU cap only when its `resource_spec` asks for one. A cap by
 * default would slow every start for nothing on an idle machine: a 1-core cap added about a second to
 * create → DEPLOYED, the agent server's start being several threads busy at once.
 */
type Limits = { memoryBytes: number; shareCpus: number; capCpus?: number; pids: number };

/** The deployment's `resource_spec` (`memory_mb`, `cpu`, `pids`) over the installation's defaults. */
export function limitsOf(config: SandboxConfig, resourceSpec: unknown): Limits {
  const spec = (resourceSpec && typeof resourceSpec === 'object' ? resourceSpec : {}) as { memory_mb?: unknown; cpu?: unknown; pids?: unknown };
  const memoryMb = Number(spec.memory_mb);
  const cpus = Number(spec.cpu);
  const pids = Number(spec.pids);
  const asked = Number.isFinite(cpus) && cpus >= 0.05 ? cpus : undefined;
  return {
    memoryBytes: Number.isFinite(memoryMb) && memoryMb >= 64 ? Math.floor(memoryMb * 1024 * 1024) : config.memoryBytes,
    shareCpus: asked ?? config.cpus,
    ...(asked !== undefined ? { capCpus: asked } : {}),
    pids: Number.isInteger(pids) && pids >= 32 ? pids : config.pids,
  };
}

/** This process's own cgroup in each hierarchy (v1: per controller; v2: the unified one, key ''). */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (path === undefined) continue;
    for (const controller of (controllers ?? '').split(',')) own.set(controller, path);
  }
  return own;
}

/** The parent folders under which deployments' cgroups are made: v1 memory, cpu and pids, or v2. */
function cgroupParents(): { version: 1 | 2; memory: string; cpu: string; pids: string } | undefined {
  const own = ownCgroups();
  if (existsSync(join(CGROUP_ROOT, 'memory', 'memory.limit_in_bytes')) && own.has('memory') && own.has('cpu') && own.has('pids')) {
    const parent = (controller: string) => join(CGROUP_ROOT, controller, own.get(controller)!, 'agent-platform');
    return { version: 1, memory: parent('memory'), cpu: parent('cpu'), pids: parent('pids') };
  }
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers')) && own.has('')) {
    const dir = join(CGROUP_ROOT, own.get('')!, 'agent-platform');
    return { version: 2, memory: dir, cpu: dir, pids: dir };
  }
  return undefined;
}

/** The deployment's cgroup folders (one per v1 controller, or its v2 group). */
export function cgroupDirs(deploymentId: string): string[] {
  const parents = cgroupParents();
  if (!parents) return [];
  return [...new Set([parents.memory, parents.cpu, parents.pids].map((parent) => join(parent, deploymentId)))];
}

/**
 * What a deployment's processes use now, from its cgroups: processes and threads, and memory (with
 * the page cache its files hold). Undefined where its cgroups are not made here.
 */
export function cgroupUsage(deploymentId: string): { pids?: number; memoryBytes?: number } {
  const parents = cgroupParents();
  if (!parents) return {};
  const read = (file: string) => {
    try {
      return Number(readFileSync(file, 'utf8').trim());
    } catch {
      return undefined;
    }
  };
  return parents.version === 1
    ? { pids: read(join(parents.pids, deploymentId, 'pids.current')), memoryBytes: read(join(parents.memory, deploymentId, 'memory.usage_in_bytes')) }
    : { pids: read(join(parents.pids, deploymentId, 'pids.current')), memoryBytes: read(join(parents.memory, deploymentId, 'memory.current')) };
}

/** Whether deployments' cgroups can be made here, and how (tried with a throwaway cgroup). */
export function cgroupSupport(): { enforced: boolean; how: string } {
  const parents = cgroupParents();
  if (!parents) return { enforced: false, how: 'no cgroup memory and cpu controllers found' };
  const probe = `probe-${process.pid}`;
  try {
    const made = deploymentCgroup(probe, { memoryBytes: 256 * 1024 ** 2, shareCpus: 1, capCpus: 1, pids: 64 }, undefined);
    for (const dir of cgroupDirs(probe)) rmdirSync(dir);
    return made.length ? { enforced: true, how: `cgroup v${parents.version}` } : { enforced: false, how: 'cgroups not writable' };
  } catch (error) {
    return { enforced: false, how: `cgroup v${parents.version} not writable by this process (${(error as Error).message.split('\n')[0]}); under systemd, run the platform in a unit with Delegate=yes` };
  }
}

/**
 * Makes (or updates) the deployment's cgroups with its limits; returns their `cgroup.procs` files,
 * which the sandbox's first process joins. That file alone is handed to the sandbox's user: it may
 * move its own processes in, not change its limits or leave.
 */
export function deploymentCgroup(deploymentId: string, limits: Limits, uid: number | undefined): string[] {
  const parents = cgroupParents();
  if (!parents) return [];
  if (parents.version === 1) {
    const memory = join(parents.memory, deploymentId);
    const cpu = join(parents.cpu, deploymentId);
    const pids = join(parents.pids, deploymentId);
    for (const dir of [memory, cpu, pids]) mkdirSync(dir, { recursive: true });
    // Processes and threads together: a fork bomb (or a leak) stops at it, not at the machine's limit.
    writeFileSync(join(pids, 'pids.max'), String(limits.pids));
    writeFileSync(join(parents.cpu, 'cpu.shares'), String(DEPLOYMENTS_CPUS * 1024));
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    writeFileSync(join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
    writeFileSync(join(cpu, 'cpu.cfs_quota_us'), limits.capCpus === undefined ? '-1' : String(Math.max(1000, Math.round(limits.capCpus * CPU_PERIOD_US))));
    writeFileSync(join(cpu, 'cpu.shares'), String(Math.max(2, Math.round(limits.shareCpus * 1024))));
    const procs = [join(memory, 'cgroup.procs'), join(cpu, 'cgroup.procs'), join(pids, 'cgroup.procs')];
    if (uid !== undefined) for (const file of procs) chownSync(file, uid, uid);
    return procs;
  }
  // v2: the parent must enable the controllers for its children (a delegated subtree).
  mkdirSync(parents.memory, { recursive: true });
  const enabled = readFileSync(join(parents.memory, 'cgroup.subtree_control'), 'utf8');
  if (!/\bmemory\b/.test(enabled) || !/\bcpu\b/.test(enabled) || !/\bpids\b/.test(enabled)) writeFileSync(join(parents.memory, 'cgroup.subtree_control'), '+memory +cpu +pids');
  writeFileSync(join(parents.memory, 'cpu.weight'), String(Math.min(10_000, DEPLOYMENTS_CPUS * 100)));
  const dir = join(parents.memory, deploymentId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes));
  writeFileSync(join(dir, 'pids.max'), String(limits.pids));
  writeFileSync(join(dir, 'cpu.max'), `${limits.capCpus === undefined ? 'max' : Math.max(1000, Math.round(limits.capCpus * CPU_PERIOD_US))} ${CPU_PERIOD_US}`);
  writeFileSync(join(dir, 'cpu.weight'), String(Math.min(10_000, Math.max(1, Math.round(limits.shareCpus * 100)))));
  const procs = join(dir, 'cgroup.procs');
  if (uid !== undefined) chownSync(procs, uid, uid);
  return [procs];
}
