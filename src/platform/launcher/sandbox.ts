// Deployed code runs in a sandbox: a revision's dependency install, its graph import check and its
// agent server. The sandbox is made by bubblewrap (Debian's `bubblewrap`, Flatpak's sandbox), which builds
// a mount namespace from nothing: the sandboxed process sees /usr and a few files of /etc, Node, the
// platform's runtime code and packages (read-only), its revision's checkout, a private /tmp, and the
// writable folders of its own deployment; never the platform's data directory (its secret key, the
// database superuser's password), another deployment's files or another process (its own PID
// namespace and /proc; IPC and UTS namespaces too). When the platform runs as root, each deployment's
// sandbox also runs as an OS user of its own (AGENT_PLATFORM_SANDBOX_UID_BASE + the deployment's
// number), which owns that deployment's files alone. Its network is a namespace of its own where one
// can be made (sandbox-network.ts); memory, CPU and processes are bounded by its cgroups
// (sandbox-cgroups.ts).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, readlinkSync, realpathSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SandboxConfig } from '../../config.js';
import { makeTraversable } from '../../database/traversable.js';
import { cgroupDirs, cgroupSupport, deploymentCgroup, JOIN_CGROUPS, limitsOf } from './sandbox-cgroups.js';
import { connectSandboxNetwork, type NetworkStatus, probeNetwork, SANDBOX_NAME_SERVER } from './sandbox-network.js';

/** What this machine can do for deployed code, found once per process (probeSandbox). */
export type SandboxStatus =
  | { enabled: true; tool: 'bubblewrap'; version: string; perDeploymentUser: boolean; limits: { enforced: boolean; how: string }; network: NetworkStatus }
  | { enabled: false; reason: string; allowUnsandboxed: boolean };

/**
 * The platform's own checkout: its code (the agent server's among it, its migrations included) and
 * packages are bound read-only into sandboxes; the platform's migrations, in prisma/, are not.
 */
const PLATFORM_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PLATFORM_PARTS = ['src', 'node_modules', 'package.json', 'tsconfig.json'].map((part) => join(PLATFORM_ROOT, part));
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
  const key = `${config.mode}:${config.allowUnsandboxed}:${config.uidBase}:${config.network.mode}`;
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
  return { enabled: true, tool: 'bubblewrap', version, perDeploymentUser: asRoot, limits: cgroupSupport(), network: probeNetwork(config.network) };
}

/** A short line for logs and /info. */
export function describeSandbox(status: SandboxStatus): string {
  if (!status.enabled) {
    return `deployed code is NOT sandboxed: ${status.reason}. ${status.allowUnsandboxed ? 'AGENT_PLATFORM_ALLOW_UNSANDBOXED=true: deploying anyway, with the reach of the platform\'s OS user' : 'Deployments are refused until it is, or until AGENT_PLATFORM_ALLOW_UNSANDBOXED=true'}`;
  }
  const limits = status.limits.enforced ? `enforced (${status.limits.how})` : `not enforced (${status.limits.how})`;
  const network = status.network.isolated ? `in ${status.network.how}` : `NOT in a network of its own: ${status.network.why}`;
  return `deployed code runs in a bubblewrap ${status.version} sandbox${status.perDeploymentUser ? ', as an OS user per deployment' : ''}; memory, CPU and process limits ${limits}; ${network}`;
}

/** Throws (a message for the revision's build log) when deployed code may not run: no sandbox, and the operator did not allow that. */
function assertDeployable(status: SandboxStatus): void {
  if (!status.enabled && !status.allowUnsandboxed) {
    throw new Error(`This installation cannot sandbox deployed code (${status.reason}); the operator must install bubblewrap or set AGENT_PLATFORM_ALLOW_UNSANDBOXED=true.`);
  }
}

/**
 * A deployment's own folders: `home` (HOME, npm's cache) and `cache` (V8's and tsx's compile caches),
 * owned by its sandbox user, inside `root`, which stays the platform's.
 */
export type DeploymentFiles = { root: string; home: string; cache: string; uid?: number };

/** Where a deployment's own folders are: `<data dir>/deployments/<id>/`. */
const deploymentDirectory = (dataDir: string, deploymentId: string) => resolve(dataDir, 'deployments', deploymentId);

/**
 * Makes the deployment's folders and returns them. Idempotent. The deployment may write inside `home`
 * and `cache` (owned by its sandbox user when the platform is root), never in `root`, which the
 * platform owns: so `home` and `cache` are the folders the platform made, never a link the deployment
 * put in their place that the platform, as root, would follow (an earlier version let the deployment
 * own `root`; such a link is removed here and the folder made again).
 */
export function deploymentFiles(
  dataDir: string,
  deployment: { id: string; sandbox_id: number },
  status: SandboxStatus,
  config: SandboxConfig,
  logger: { warn(obj: object, msg: string): void },
): DeploymentFiles {
  const root = deploymentDirectory(dataDir, deployment.id);
  const files: DeploymentFiles = { root, home: join(root, 'home'), cache: join(root, 'cache'), uid: sandboxUid(deployment, status, config) };
  // The folder of every deployment's is made traversable, not listable, from the start: its sandbox
  // users pass through it by name, and nothing needs opening (and saying so) afterwards.
  mkdirSync(dirname(root), { recursive: true, mode: 0o711 });
  mkdirSync(root, { recursive: true, mode: 0o700 });
  // Its user reaches its folders by name (git, du and bubblewrap run as that user) through every parent.
  if (files.uid !== undefined) makeTraversable(dirname(root), logger);
  if (process.getuid?.() === 0) lchownSync(root, 0, 0);
  // Its sandbox user passes through to its two folders (bubblewrap opens them as that user) and may list nothing here.
  chmodSync(root, files.uid === undefined ? 0o700 : 0o711);
  for (const dir of [files.home, files.cache]) {
    const found = lstatSync(dir, { throwIfNoEntry: false });
    // Removes a link (never what it points at) or a file; nothing of the deployment can make one again here.
    if (found && !found.isDirectory()) rmSync(dir, { force: true });
    if (!found?.isDirectory()) mkdirSync(dir, { mode: 0o700 });
    if (files.uid !== undefined) lchownSync(dir, files.uid, files.uid);
    chmodSync(dir, 0o700);
  }
  // The name server its network has (sandbox-network.ts), in place of the host's.
  writeFileOfPlatform(join(root, 'resolv.conf'), `nameserver ${SANDBOX_NAME_SERVER}\n`);
  return files;
}

/**
 * Writes a file of the platform's, readable by all, into a folder of the platform's that a deployment
 * once owned (`root`, before this version): whatever the deployment left at that name then (a link
 * to a file of the host's) is removed, never followed, and the file is made new (O_EXCL).
 */
export function writeFileOfPlatform(path: string, content: string): void {
  rmSync(path, { force: true });
  writeFileSync(path, content, { flag: 'wx', mode: 0o644 });
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
  for (const dir of cgroups) {
    try {
      rmdirSync(dir);
    } catch (error) {
      // Removed meanwhile by its runtime's own release: gone is what was asked.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return true;
}

/** The OS user a deployment's sandbox runs as: its own when the platform is root and sandboxes are on. */
function sandboxUid(deployment: { sandbox_id: number }, status: SandboxStatus, config: SandboxConfig): number | undefined {
  return status.enabled && status.perDeploymentUser ? config.uidBase + deployment.sandbox_id : undefined;
}

/**
 * What a sandbox may see besides the system: read-only and writable paths (bound at the same place),
 * symbolic links made inside it (`links`: one of its own folders at the place a tool expects one; the
 * link is read inside the sandbox, so whatever the deployment put there resolves within its own view,
 * never on the host), where it starts, and whether it reaches the internet (`network: 'none'`: only
 * a loopback of its own).
 */
export type SandboxMounts = { readOnly: string[]; writable: string[]; links?: Array<{ target: string; at: string }>; cwd: string; network?: 'internet' | 'none' };

/** How a sandboxed process is started: its environment, and its stdio beyond what the sandbox adds. */
export type SandboxSpawnOptions = { env: NodeJS.ProcessEnv; stdio?: Array<'ignore' | 'pipe' | 'ipc'> };

/**
 * A deployment's sandbox (or, where none can be made and the operator allowed it, none): `spawn`
 * starts a command inside it, in the deployment's cgroups when limits are enforced and in a network
 * of its own when that can be made (sandbox-network.ts: the command starts once it is connected; a
 * failure to connect it kills the process and is its `error`). Node (this process's) and the
 * platform's code (the agent server's among it) are always readable inside.
 */
export function deploymentSandbox(
  status: SandboxStatus,
  config: SandboxConfig,
  files: DeploymentFiles,
  deployment: { id: string; resourceSpec?: unknown },
  logger: { warn(obj: object, msg: string): void },
) {
  const spawnIn = (command: string, args: string[], mounts: SandboxMounts, options: SandboxSpawnOptions): ChildProcess => {
    assertDeployable(status);
    const stdio: Array<'ignore' | 'pipe' | 'ipc'> = [...(options.stdio ?? ['ignore', 'pipe', 'pipe'])];
    if (!status.enabled) return spawn(command, args, { cwd: mounts.cwd, env: options.env, stdio });
    const readOnly = [nodeInstallation(), ...PLATFORM_PARTS.filter(existsSync), ...mounts.readOnly];
    const writable = [files.home, files.cache, ...mounts.writable];
    // bubblewrap opens the mounts as the sandbox's user: the parents it does not own must let it pass.
    if (files.uid !== undefined) for (const path of [...readOnly, ...mounts.writable, files.root]) makeTraversable(dirname(path), logger);
    // A network of its own: none at all, or the internet through slirp4netns once the sandbox says which process it is.
    const connected = mounts.network !== 'none' && status.network.isolated;
    const fds = { info: stdio.length, block: stdio.length + 1 };
    if (connected) stdio.push('pipe', 'pipe');
    const network = mounts.network === 'none' || status.network.isolated ? ['--unshare-net'] : [];
    if (connected) network.push('--info-fd', String(fds.info), '--block-fd', String(fds.block));
    const resolvConf = connected ? join(files.root, 'resolv.conf') : undefined;
    const sandboxed = [...bubblewrapArgs({ readOnly, writable, links: mounts.links, cwd: mounts.cwd }, { network, resolvConf }), '--', command, ...args];
    const procs = status.limits.enforced ? deploymentCgroup(deployment.id, limitsOf(config, deployment.resourceSpec), files.uid) : [];
    const user = files.uid === undefined ? {} : { uid: files.uid, gid: files.uid };
    // The shell joins the deployment's cgroups, then becomes bubblewrap: everything it starts is counted there.
    const [file, fileArgs] = procs.length === 0 ? [bubblewrapPath()!, sandboxed] : ['/bin/sh', ['-c', JOIN_CGROUPS, 'agent-platform-sandbox', ...procs, '--', bubblewrapPath()!, ...sandboxed]];
    // A session of its own: a terminal's Ctrl-C reaches the platform's process group, not the sandbox,
    // which the platform stops itself as it shuts down (and which --die-with-parent ends if it dies).
    const child = spawn(file, fileArgs, { cwd: mounts.cwd, env: options.env, stdio, detached: true, ...user });
    if (connected) void connectSandboxNetwork(child, fds, config.network).catch((error: unknown) => child.emit('error', error));
    return child;
  };
  return {
    spawn: spawnIn,
    /**
     * Runs a command in the sandbox to its end (SIGKILL after `timeoutMs`); resolves with its output,
     * rejects with the last 4 KB of it (or why it could not start) when it fails. `onOutput` sees its
     * output as it comes.
     */
    run(command: string, args: string[], mounts: SandboxMounts, options: SandboxSpawnOptions & { timeoutMs: number; label: string; onOutput?(text: string): void }): Promise<string> {
      return new Promise((resolvePromise, reject) => {
        const child = spawnIn(command, args, mounts, { env: options.env });
        let output = '';
        const keep = (chunk: Buffer) => {
          const text = chunk.toString('utf8');
          options.onOutput?.(text);
          output = (output + text).slice(-16 * 1024 * 1024);
        };
        child.stdout!.on('data', keep);
        child.stderr!.on('data', keep);
        const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
        let failed: Error | undefined;
        child.once('error', (error) => (failed = error));
        child.once('close', (code, signal) => {
          clearTimeout(timer);
          const text = output.trim();
          if (failed) reject(new Error(`${options.label} failed: ${failed.message}`));
          // Its output went to `onOutput` as it came (a build log): the error says only how it ended.
          else if (code !== 0 && options.onOutput) reject(new Error(`${options.label} failed (${signal ?? `exit ${code}`}): its output is above`));
          else if (code !== 0) reject(new Error(`${options.label} failed: ${(text || `exit ${signal ?? code}`).slice(-4096)}`));
          else resolvePromise(text);
        });
      });
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

/**
 * bubblewrap's arguments for a sandbox seeing the system, `readOnly` and `writable`, starting in
 * `cwd`; `network` its network options (none: the host's), and `resolvConf` the name servers it uses
 * there (the host's, else).
 */
function bubblewrapArgs(mounts: SandboxMounts, options: { network: string[]; resolvConf?: string } = { network: [] }): string[] {
  const args = [
    '--die-with-parent', // the launcher going away takes the sandbox with it
    '--new-session', // no controlling terminal to push keystrokes into
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
    ...options.network,
    '--hostname', 'sandbox',
    '--cap-drop', 'ALL',
    '--ro-bind', '/usr', '/usr',
  ];
  for (const dir of ROOT_SYSTEM_DIRS) {
    if (!existsSync(dir)) continue;
    if (lstatSync(dir).isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  for (const file of ETC_FILES) {
    if (file === '/etc/resolv.conf' && options.resolvConf) args.push('--ro-bind', options.resolvConf, file);
    else args.push('--ro-bind-try', file, file);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  for (const path of mounts.readOnly) args.push('--ro-bind', path, path);
  for (const path of mounts.writable) args.push('--bind', path, path);
  for (const { target, at } of mounts.links ?? []) args.push('--symlink', target, at);
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
  const files = deploymentFiles(deps.config.dataDir, deployment, status, deps.config.sandbox, deps.logger);
  const sandbox = deploymentSandbox(status, deps.config.sandbox, files, { id: deployment.id, resourceSpec: deployment.source_config.resource_spec }, deps.logger);
  return { status, files, sandbox, env: sandboxEnvironment(status, files) };
}
