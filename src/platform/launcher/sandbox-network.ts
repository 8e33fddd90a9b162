// A deployment's network: a namespace of its own (bubblewrap's --unshare-net) whose only way out is a
// user-mode network stack (Debian's slirp4netns) that opens the deployment's outbound connections
// from the host as ordinary sockets: the internet is reachable, the host's own services are not. Inside
// the namespace:
//   - 127.0.0.1 is the namespace's own loopback: nothing of the host listens there;
//   - the host's loopback is not mapped (slirp4netns --disable-host-loopback: its gateway address
//     refuses connections);
//   - link-local (169.254.0.0/16, cloud instance metadata), private and shared ranges are `prohibit`
//     routes (connect fails with EACCES), added by the platform before the deployment's code starts,
//     in a namespace whose owner the sandbox's process is not (it dropped every capability): it can
//     read its routes, never change them;
//   - its name server is slirp4netns's, which forwards to the host's resolver.
// What the deployment must reach on the platform's side comes in as sockets the platform hands over
// (its agent server's listening socket, connections to the platform's ingest API) or a socket file
// (its database's Unix socket), never as a network address. Made as root (the platform enters the
// namespace bubblewrap made); a platform not run as root leaves deployed code on the host's network,
// and says so.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { SandboxConfig } from '../../config.js';

/** slirp4netns's network inside the namespace: its gateway (the host, loopback refused) and name server. */
const SLIRP_CIDR = '10.0.2.0/24';
const SLIRP_GATEWAY = '10.0.2.2';
export const SANDBOX_NAME_SERVER = '10.0.2.3';

/**
 * Destinations refused inside a deployment's namespace unless the operator allows them: "this
 * network" and the private, shared (carrier-grade NAT), link-local, benchmarking, multicast and reserved
 * ranges of IPv4. IPv6 has no route at all (slirp4netns offers none).
 */
export const REFUSED_NETWORKS = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.168.0.0/16', '198.18.0.0/15', '224.0.0.0/4', '240.0.0.0/4',
];

export type NetworkConfig = SandboxConfig['network'];

/** Whether deployments get a network of their own here, and if not why. */
export type NetworkStatus = { isolated: true; how: string } | { isolated: false; why: string };

/** The programs isolation needs, where this machine has them. */
function programs(): { slirp: string; nsenter: string; ip: string } | undefined {
  const folders = [...new Set([...(process.env.PATH ?? '').split(':'), '/usr/bin', '/usr/sbin', '/bin', '/sbin'].filter((dir) => dir.startsWith('/')))];
  const find = (name: string) => folders.map((dir) => join(dir, name)).find((path) => existsSync(path));
  const slirp = find('slirp4netns');
  const nsenter = find('nsenter');
  const ip = find('ip');
  return slirp && nsenter && ip ? { slirp, nsenter, ip } : undefined;
}

export function probeNetwork(config: NetworkConfig): NetworkStatus {
  if (config.mode === 'host') return { isolated: false, why: "AGENT_PLATFORM_SANDBOX_NETWORK=host: deployed code shares the host's network, its loopback services included" };
  if (!programs()) return { isolated: false, why: 'slirp4netns, nsenter or ip is missing (Debian: apt-get install slirp4netns iproute2): deployed code shares the host\'s network, its loopback services included' };
  // Rootless, slirp4netns needs /dev/net/tun open to the platform's user and joins bubblewrap's user
  // namespace: not proven on a machine of this project's, so not claimed.
  if (process.getuid?.() !== 0) return { isolated: false, why: "the platform does not run as root, and a network of its own per sandbox is made (and tested) only as root: deployed code shares the host's network, its loopback services included" };
  return { isolated: true, how: `a network of its own (slirp4netns); loopback, link-local and private ranges refused${config.allowed.length ? ` but ${config.allowed.join(', ')}` : ''}` };
}

/** The `ip -batch` lines that shape a deployment's routes: refused ranges, then the allowed ones through slirp4netns. */
function routeCommands(allowed: string[]): string[] {
  return [
    ...REFUSED_NETWORKS.map((range) => `route add prohibit ${range}`),
    ...allowed.filter((range) => range !== SLIRP_CIDR).map((range) => `route add ${range.includes('/') ? range : `${range}/32`} via ${SLIRP_GATEWAY} dev tap0`),
  ];
}

/** Whether an allowed range names the host's loopback, which slirp4netns then maps at its gateway address. */
const allowsHostLoopback = (allowed: string[]) => allowed.some((range) => range.startsWith('127.'));

/** How long a sandbox's network may take to set up before the sandbox is ended. */
const SETUP_TIMEOUT_MS = 30_000;

/**
 * Resolves once the namespace of `pid` has its loopback address up (its local table routes 127.0.0.1),
 * read from /proc; rejects after SETUP_TIMEOUT_MS or when the process is gone.
 */
async function loopbackReady(pid: number): Promise<void> {
  for (const deadline = Date.now() + SETUP_TIMEOUT_MS; ; await new Promise((resolve) => setTimeout(resolve, 2))) {
    let table: string;
    try {
      table = readFileSync(`/proc/${pid}/net/fib_trie`, 'utf8');
    } catch {
      throw new Error('the sandbox ended while its network was set up');
    }
    if (/127\.0\.0\.1\n\s+\/32 host LOCAL/.test(table)) return;
    if (Date.now() > deadline) throw new Error(`its loopback was not up within ${SETUP_TIMEOUT_MS / 1000} s`);
  }
}

/** Reads bubblewrap's --info-fd JSON (its sandbox's process id); rejects if it closes first. */
async function sandboxPid(info: Readable): Promise<number> {
  let text = '';
  for await (const chunk of info) {
    text += String(chunk);
    try {
      const pid = (JSON.parse(text) as { 'child-pid'?: number })['child-pid'];
      if (Number.isInteger(pid)) return pid!;
    } catch {
      // not whole yet
    }
  }
  throw new Error('the sandbox ended before it said which process it is');
}

/** Runs a program to its end; rejects with its output when it fails. */
function runToEnd(file: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'] });
    let errors = '';
    child.stderr!.on('data', (chunk: Buffer) => (errors += String(chunk)));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} ${args.join(' ')} failed (${code}): ${errors.trim()}`))));
    if (input !== undefined) child.stdin!.end(input);
  });
}

/**
 * Gives a sandbox started with `--unshare-net --info-fd --block-fd` its network: reads which process
 * it is, starts its slirp4netns, sets its routes once that is ready, then lets its command start. The
 * slirp4netns process ends with the sandbox (and with this process: it reads the end of a pipe only
 * this process holds). Rejects, the sandbox killed, when any step fails.
 */
export async function connectSandboxNetwork(sandbox: ChildProcess, fds: { info: number; block: number }, config: NetworkConfig): Promise<void> {
  const tools = programs()!;
  // A sandbox that dies meanwhile resets these pipes: that is its exit, not this process's error.
  for (const fd of [fds.info, fds.block]) sandbox.stdio[fd]?.on('error', () => undefined);
  const pid = await sandboxPid(sandbox.stdio[fds.info] as Readable);
  // bubblewrap's own process sets up the namespace's loopback after it said which process it is:
  // anything else done to the namespace before that (slirp4netns brings `lo` up too) makes it fail.
  await loopbackReady(pid);
  const namespace = `/proc/${pid}/ns/net`;
  const slirp = spawn(
    tools.slirp,
    [
      '--configure', '--mtu=65520', '--enable-sandbox', '--enable-seccomp',
      ...(allowsHostLoopback(config.allowed) ? [] : ['--disable-host-loopback']),
      '--ready-fd=3', '--exit-fd=4', '--netns-type=path', namespace, 'tap0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
  );
  for (const stream of slirp.stdio) stream?.on('error', () => undefined);
  const stop = () => slirp.kill('SIGKILL');
  sandbox.once('exit', stop);
  let slirpErrors = '';
  slirp.stderr!.on('data', (chunk: Buffer) => (slirpErrors = (slirpErrors + String(chunk)).slice(-2000)));
  const ready = new Promise<void>((resolve, reject) => {
    (slirp.stdio[3] as Readable).once('data', () => resolve());
    slirp.once('error', reject);
    slirp.once('exit', (code) => reject(new Error(`slirp4netns exited (${code}): ${slirpErrors.trim()}`)));
  });
  // Its routes once slirp4netns has configured tap0: set while it does, `ip` failed now and then
  // ("RTNETLINK answers: File exists" on the second route: 4 of 180 sandboxes started 6 at a time).
  const routes = ready.then(() => runToEnd(tools.nsenter, [`--target=${pid}`, '--net', '--', tools.ip, '-batch', '-'], `${routeCommands(config.allowed).join('\n')}\n`));
  let timer: NodeJS.Timeout | undefined;
  const tooLong = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`not ready within ${SETUP_TIMEOUT_MS / 1000} s: ${slirpErrors.trim()}`)), SETUP_TIMEOUT_MS)));
  try {
    await Promise.race([Promise.all([ready, routes]), tooLong]);
  } catch (error) {
    stop();
    sandbox.kill('SIGKILL');
    throw new Error(`could not give the sandbox its network: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
  (sandbox.stdio[fds.block] as Writable).end('1');
}
