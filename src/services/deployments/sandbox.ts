// Deployed code runs in a sandbox: a revision's dependency install, its graph import check and its
// runtime. The sandbox is made by bubblewrap (Debian's `bubblewrap`, Flatpak's sandbox), which builds
// a mount namespace from nothing: the sandboxed process sees /usr and a few files of /etc, Node, the
// platform's runtime code and packages (read-only), its revision's checkout, a private /tmp, and the
// writable folders of its own deployment; never the platform's data directory (its secret key, the
// database superuser's password), another deployment's files or another process (its own PID
// namespace and /proc; IPC and UTS namespaces too). When the platform runs as root, each deployment's
// sandbox also runs as an OS user of its own (AGENT_PLATFORM_SANDBOX_UID_BASE + the deployment's
// number), which owns that deployment's files alone. The network is shared: the runtime reaches its
// database and serves its graph requests on loopback, and graphs reach their model providers.
// Memory and CPU are bounded by cgroups where this process may write them (cgroup v1 here, or v2
// with a delegated subtree); elsewhere the limits are reported as not enforced.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SandboxConfig } from '../../config.js';
import { makeTraversable } from '../../database/traversable.js';

/** What this machine can do for deployed code, found once per process (probeSandbox). */
export type SandboxStatus =
  | { enabled: true; tool: 'bubblewrap'; version: string; perDeploymentUser: boolean; limits: { enforced: boolean; how: string } }
  | { enabled: false; reason: string; allowUnsandboxed: boolean };

/** The platform's own checkout: its runtime code and packages are bound read-only into sandboxes. */
const PLATFORM_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PLATFORM_PARTS = ['src', 'node_modules', 'package.json', 'tsconfig.json', 'prisma/migrations'].map((part) => join(PLATFORM_ROOT, part));
/** What of /etc a Node program, npm and git need: name resolution, trust anchors, users, time zone. */
const ETC_FILES = ['/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf', '/etc/host.conf', '/etc/gai.conf', '/etc/localtime', '/etc/ssl/certs', '/etc/ca-certificates', '/etc/alternatives', '/etc/ld.so.cache'];
/** /usr-merged systems make these links into /usr; older ones have them as folders. */
const ROOT_SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Probes made in this process, by the settings they were made with. */
const probes = new Map<string, SandboxStatus>();

/**
 * Whether deployed code can be sandboxed here: bubblewrap is installed and can make its namespaces
 * (as the sandbox's OS user, when the platform runs as root). Tried once per process with a real
 * sandbox around `true`, so a kernel without user namespaces shows here, not in a customer's build.
 */
export function probeSandbox(config: SandboxConfig): SandboxStatus {
  const key = `${config.mode}:${config.allowUnsandboxed}:${config.uidBase}`;
  const known = probes.get(key);
  if (known) return known;
  const status = probeOnce(config);
  probes.set(key, status);
  return status;
}

function probeOnce(config: SandboxConfig): SandboxStatus {
  const disabled = (reason: string): SandboxStatus => ({ enabled: false, reason, allowUnsandboxed: config.allowUnsandboxed });
  if (config.mode === 'none') return disabled('AGENT_PLATFORM_SANDBOX=none');
  const bwrap = bubblewrapPath();
  if (!bwrap) return disabled('bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)');
  const version = spawnSync(bwrap, ['--version'], { encoding: 'utf8' }).stdout.trim().replace(/^bubblewrap\s*/, '');
  const asRoot = process.getuid?.() === 0;
  const trial = spawnSync(bwrap, [...bubblewrapArgs({ readOnly: [], writable: [], cwd: '/' }), '--', 'true'], {
    encoding: 'utf8',
    timeout: 10_000,
    ...(asRoot ? { uid: config.uidBase, gid: config.uidBase } : {}),
  });
  if (trial.status !== 0) {
    const why = (trial.stderr || trial.error?.message || `exit ${trial.status ?? trial.signal}`).trim();
    return disabled(`bubblewrap cannot make a sandbox here: ${why} (it needs unprivileged user namespaces: sysctl user.max_user_namespaces > 0, and kernel.unprivileged_userns_clone=1 where that exists)`);
  }
  return { enabled: true, tool: 'bubblewrap', version, perDeploymentUser: asRoot, limits: cgroupSupport() };
}

/** A short line for logs and /info. */
export function describeSandbox(status: SandboxStatus): string {
  if (!status.enabled) {
    return `deployed code is NOT sandboxed: ${status.reason}. ${status.allowUnsandboxed ? 'AGENT_PLATFORM_ALLOW_UNSANDBOXED=true: deploying anyway, with the reach of the platform\'s OS user' : 'Deployments are refused until it is, or until AGENT_PLATFORM_ALLOW_UNSANDBOXED=true'}`;
  }
  return `deployed code runs in a bubblewrap ${status.version} sandbox${status.perDeploymentUser ? ', as an OS user per deployment' : ''}; memory and CPU limits ${status.limits.enforced ? `enforced (${status.limits.how})` : `not enforced (${status.limits.how})`}`;
}

/** Throws (a message for the revision's build log) when deployed code may not run: no sandbox, and the operator did not allow that. */
function assertDeployable(status: SandboxStatus): void {
  if (!status.enabled && !status.allowUnsandboxed) {
    throw new Error(`This installation cannot sandbox deployed code (${status.reason}); the operator must install bubblewrap or set AGENT_PLATFORM_ALLOW_UNSANDBOXED=true.`);
  }
}

/** A deployment's own folders: `home` (HOME, npm's cache) and `cache` (V8's compile cache), owned by its sandbox user. */
export type DeploymentFiles = { root: string; home: string; cache: string; uid?: number };

/** Where a deployment's own folders are: `<data dir>/deployments/<id>/`. */
const deploymentDirectory = (dataDir: string, deploymentId: string) => resolve(dataDir, 'deployments', deploymentId);

/**
 * Makes the deployment's folders (mode 0700, owned by its sandbox user when the platform is root) and
 * returns them. Idempotent.
 */
export function deploymentFiles(dataDir: string, deployment: { id: string; sandbox_id: number }, status: SandboxStatus, config: SandboxConfig): DeploymentFiles {
  const root = deploymentDirectory(dataDir, deployment.id);
  const files: DeploymentFiles = { root, home: join(root, 'home'), cache: join(root, 'cache'), uid: sandboxUid(deployment, status, config) };
  for (const dir of [root, files.home, files.cache]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    if (files.uid !== undefined) chownSync(dir, files.uid, files.uid);
  }
  return files;
}

/** The deployments with folders on this machine (their ids). */
export const deploymentsOnDisk = (dataDir: string): string[] => (existsSync(resolve(dataDir, 'deployments')) ? readdirSync(resolve(dataDir, 'deployments')) : []);

/**
 * Removes what a deleted deployment had on this machine: its folders and its cgroups. Returns whether
 * anything was left to remove. Throws while something still writes there (a build finishing): the
 * caller tries again later.
 */
export async function removeDeploymentFiles(dataDir: string, deploymentId: string): Promise<boolean> {
  const root = deploymentDirectory(dataDir, deploymentId);
  const cgroups = cgroupDirs(deploymentId).filter(existsSync);
  if (!existsSync(root) && cgroups.length === 0) return false;
  await rm(root, { recursive: true, force: true });
  for (const dir of cgroups) rmdirSync(dir);
  return true;
}

/** The OS user a deployment's sandbox runs as: its own when the platform is root and sandboxes are on. */
function sandboxUid(deployment: { sandbox_id: number }, status: SandboxStatus, config: SandboxConfig): number | undefined {
  return status.enabled && status.perDeploymentUser ? config.uidBase + deployment.sandbox_id : undefined;
}

/**
 * What a sandbox may see besides the system: read-only and writable paths (bound at the same place),
 * writable folders bound elsewhere (`at`: its own folder at the place a tool expects one), and where it starts.
 */
export type SandboxMounts = { readOnly: string[]; writable: string[]; at?: Array<{ path: string; to: string }>; cwd: string };

/** How to start a command in a deployment's sandbox: a `spawn`'s file, arguments and OS user. */
export type SandboxedCommand = { file: string; args: string[]; uid?: number; gid?: number };

/**
 * A deployment's sandbox (or, where none can be made and the operator allowed it, the bare command):
 * `wrap` turns a command into one that runs inside it, in the deployment's cgroup when limits are
 * enforced. Node (this process's) and the platform's runtime code are always readable inside.
 */
export function deploymentSandbox(
  status: SandboxStatus,
  config: SandboxConfig,
  files: DeploymentFiles,
  deployment: { id: string; resourceSpec?: unknown },
  logger: { warn(obj: object, msg: string): void },
) {
  return {
    wrap(command: string, args: string[], mounts: SandboxMounts): SandboxedCommand {
      assertDeployable(status);
      if (!status.enabled) return { file: command, args };
      const readOnly = [nodeInstallation(), ...PLATFORM_PARTS.filter(existsSync), ...mounts.readOnly];
      const writable = [files.home, files.cache, ...mounts.writable];
      // bubblewrap opens the mounts as the sandbox's user: the parents it does not own must let it pass.
      if (files.uid !== undefined) for (const path of [...readOnly, ...mounts.writable, files.root]) makeTraversable(dirname(path), logger);
      const sandboxed = [...bubblewrapArgs({ readOnly, writable, at: mounts.at, cwd: mounts.cwd }), '--', command, ...args];
      const procs = status.limits.enforced ? deploymentCgroup(deployment.id, limitsOf(config, deployment.resourceSpec), files.uid) : [];
      const user = files.uid === undefined ? {} : { uid: files.uid, gid: files.uid };
      if (procs.length === 0) return { file: bubblewrapPath()!, args: sandboxed, ...user };
      // The shell joins the deployment's cgroups, then becomes bubblewrap: everything it starts is counted there.
      return { file: '/bin/sh', args: ['-c', JOIN_CGROUPS, 'agent-platform-sandbox', ...procs, '--', bubblewrapPath()!, ...sandboxed], ...user };
    },
    /** Removes the deployment's cgroups once nothing runs in them. */
    release(): void {
      for (const dir of cgroupDirs(deployment.id)) {
        try {
          rmdirSync(dir);
        } catch {
          // Still in use (another revision's runtime) or never made.
        }
      }
    },
  };
}

type DeploymentSandbox = ReturnType<typeof deploymentSandbox>;

/**
 * The environment a sandboxed command needs on top of its own: HOME and npm's cache in the
 * deployment's own folder (never the operator's cache, which another deployment could poison), /tmp
 * (the sandbox's private one) and this Node first on PATH (npm's `env node` finds it).
 */
export function sandboxEnvironment(status: SandboxStatus, files: DeploymentFiles): Record<string, string> {
  const nodeBin = dirname(realpathSync(process.execPath));
  const path = [nodeBin, ...(process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':').filter((dir) => dir && dir !== nodeBin)].join(':');
  return status.enabled
    ? { HOME: files.home, npm_config_cache: join(files.home, '.npm'), TMPDIR: '/tmp', PATH: path }
    : { HOME: files.home, npm_config_cache: join(files.home, '.npm'), PATH: path };
}

/** bubblewrap's arguments for a sandbox seeing the system, `readOnly` and `writable`, starting in `cwd`. */
function bubblewrapArgs(mounts: SandboxMounts): string[] {
  const args = [
    '--die-with-parent', // the launcher going away takes the sandbox with it
    '--new-session', // no controlling terminal to push keystrokes into
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
    '--hostname', 'sandbox',
    '--cap-drop', 'ALL',
    '--ro-bind', '/usr', '/usr',
  ];
  for (const dir of ROOT_SYSTEM_DIRS) {
    if (!existsSync(dir)) continue;
    if (lstatSync(dir).isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  for (const file of ETC_FILES) args.push('--ro-bind-try', file, file);
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  for (const path of mounts.readOnly) args.push('--ro-bind', path, path);
  for (const path of mounts.writable) args.push('--bind', path, path);
  for (const { path, to } of mounts.at ?? []) args.push('--bind', path, to);
  args.push('--chdir', mounts.cwd);
  return args;
}

function bubblewrapPath(): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = join(dir || '.', 'bwrap');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** The folder of this Node installation (bin/node and its siblings), bound read-only into sandboxes. */
function nodeInstallation(): string {
  return dirname(dirname(realpathSync(process.execPath)));
}

// ---- cgroups ------------------------------------------------------------------------------------

const JOIN_CGROUPS = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
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
 * create → DEPLOYED, the runtime's start being several threads busy at once.
 */
type Limits = { memoryBytes: number; shareCpus: number; capCpus?: number };

/** The deployment's `resource_spec` (`memory_mb`, `cpu`) over the installation's defaults. */
function limitsOf(config: SandboxConfig, resourceSpec: unknown): Limits {
  const spec = (resourceSpec && typeof resourceSpec === 'object' ? resourceSpec : {}) as { memory_mb?: unknown; cpu?: unknown };
  const memoryMb = Number(spec.memory_mb);
  const cpus = Number(spec.cpu);
  const asked = Number.isFinite(cpus) && cpus >= 0.05 ? cpus : undefined;
  return {
    memoryBytes: Number.isFinite(memoryMb) && memoryMb >= 64 ? Math.floor(memoryMb * 1024 * 1024) : config.memoryBytes,
    shareCpus: asked ?? config.cpus,
    ...(asked !== undefined ? { capCpus: asked } : {}),
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

/** The parent folders under which deployments' cgroups are made: v1 memory and cpu, or v2. */
function cgroupParents(): { version: 1 | 2; memory: string; cpu: string } | undefined {
  const own = ownCgroups();
  if (existsSync(join(CGROUP_ROOT, 'memory', 'memory.limit_in_bytes')) && own.has('memory') && own.has('cpu')) {
    return { version: 1, memory: join(CGROUP_ROOT, 'memory', own.get('memory')!, 'agent-platform'), cpu: join(CGROUP_ROOT, 'cpu', own.get('cpu')!, 'agent-platform') };
  }
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers')) && own.has('')) {
    const dir = join(CGROUP_ROOT, own.get('')!, 'agent-platform');
    return { version: 2, memory: dir, cpu: dir };
  }
  return undefined;
}

function cgroupDirs(deploymentId: string): string[] {
  const parents = cgroupParents();
  if (!parents) return [];
  return [...new Set([join(parents.memory, deploymentId), join(parents.cpu, deploymentId)])];
}

/** Whether deployments' cgroups can be made here, and how (tried with a throwaway cgroup). */
function cgroupSupport(): { enforced: boolean; how: string } {
  const parents = cgroupParents();
  if (!parents) return { enforced: false, how: 'no cgroup memory and cpu controllers found' };
  const probe = `probe-${process.pid}`;
  try {
    const made = deploymentCgroup(probe, { memoryBytes: 256 * 1024 ** 2, shareCpus: 1, capCpus: 1 }, undefined);
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
function deploymentCgroup(deploymentId: string, limits: Limits, uid: number | undefined): string[] {
  const parents = cgroupParents();
  if (!parents) return [];
  if (parents.version === 1) {
    const memory = join(parents.memory, deploymentId);
    const cpu = join(parents.cpu, deploymentId);
    mkdirSync(memory, { recursive: true });
    mkdirSync(cpu, { recursive: true });
    writeFileSync(join(parents.cpu, 'cpu.shares'), String(DEPLOYMENTS_CPUS * 1024));
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    writeFileSync(join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
    writeFileSync(join(cpu, 'cpu.cfs_quota_us'), limits.capCpus === undefined ? '-1' : String(Math.max(1000, Math.round(limits.capCpus * CPU_PERIOD_US))));
    writeFileSync(join(cpu, 'cpu.shares'), String(Math.max(2, Math.round(limits.shareCpus * 1024))));
    const procs = [join(memory, 'cgroup.procs'), join(cpu, 'cgroup.procs')];
    if (uid !== undefined) for (const file of procs) chownSync(file, uid, uid);
    return procs;
  }
  // v2: the parent must enable the controllers for its children (a delegated subtree).
  mkdirSync(parents.memory, { recursive: true });
  const enabled = readFileSync(join(parents.memory, 'cgroup.subtree_control'), 'utf8');
  if (!/\bmemory\b/.test(enabled) || !/\bcpu\b/.test(enabled)) writeFileSync(join(parents.memory, 'cgroup.subtree_control'), '+memory +cpu');
  writeFileSync(join(parents.memory, 'cpu.weight'), String(Math.min(10_000, DEPLOYMENTS_CPUS * 100)));
  const dir = join(parents.memory, deploymentId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes));
  writeFileSync(join(dir, 'cpu.max'), `${limits.capCpus === undefined ? 'max' : Math.max(1000, Math.round(limits.capCpus * CPU_PERIOD_US))} ${CPU_PERIOD_US}`);
  writeFileSync(join(dir, 'cpu.weight'), String(Math.min(10_000, Math.max(1, Math.round(limits.shareCpus * 100)))));
  const procs = join(dir, 'cgroup.procs');
  if (uid !== undefined) chownSync(procs, uid, uid);
  return [procs];
}


/** A deployment's sandbox with everything its commands need: what this machine can do, its folders, its environment. */
export type PreparedSandbox = { status: SandboxStatus; files: DeploymentFiles; sandbox: DeploymentSandbox; env: Record<string, string> };

/**
 * Prepares the sandbox of a deployment (its folders made and owned, its limits from
 * `source_config.resource_spec`). Throws when deployed code may not run here (assertDeployable).
 */
export function sandboxFor(
  deps: { config: { dataDir: string; sandbox: SandboxConfig }; logger: { warn(obj: object, msg: string): void } },
  deployment: { id: string; sandbox_id: number; source_config: Record<string, unknown> },
): PreparedSandbox {
  const status = probeSandbox(deps.config.sandbox);
  assertDeployable(status);
  const files = deploymentFiles(deps.config.dataDir, deployment, status, deps.config.sandbox);
  const sandbox = deploymentSandbox(status, deps.config.sandbox, files, { id: deployment.id, resourceSpec: deployment.source_config.resource_spec }, deps.logger);
  return { status, files, sandbox, env: sandboxEnvironment(status, files) };
}
