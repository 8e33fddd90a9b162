// What the project needs from outside npm comes from Debian's packages, installed by the project's
// own set-up where it can (root on a Debian-like system): fast when already there (one stat), and
// never a hard failure: without root or apt, it says what to install and what is missing meanwhile.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

function run(command, args) {
  const result = spawnSync(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal}):\n${output}`);
  }
}

let updated = false;

/**
 * Makes sure `path` exists, installing Debian's `pkg` for `purpose` when it does not; `without`
 * says what happens when it cannot be installed. Returns whether `path` exists afterwards.
 */
export function ensureDebianPackage({ who, path, pkg, purpose, without }) {
  if (existsSync(path)) return true;
  const install = `sudo apt-get install -y --no-install-recommends ${pkg}`;
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get')) {
    console.warn(`${who}: ${path} not found and this is not a Debian-like system; ${without}. Install ${pkg} with your system's package manager.`);
    return false;
  }
  if (process.getuid?.() !== 0) {
    console.warn(`${who}: ${path} not found and not running as root; ${without}.\n  Install it with: ${install}`);
    return false;
  }
  console.log(`${who}: installing Debian's ${pkg} ${purpose} (apt-get, one time)…`);
  try {
    if (!updated) run('apt-get', ['update', '-qq']);
    updated = true;
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', pkg]);
    return true;
  } catch (error) {
    console.warn(`${who}: could not install ${pkg}; ${without}.\n${error.message}`);
    return false;
  }
}

/** bubblewrap, which sandboxes deployed code (src/platform/launcher/sandbox.ts). */
export const ensureBubblewrap = (who) =>
  ensureDebianPackage({
    who,
    path: '/usr/bin/bwrap',
    pkg: 'bubblewrap',
    purpose: 'to sandbox deployed code',
    without: 'deployments are refused until it is installed (or AGENT_PLATFORM_ALLOW_UNSANDBOXED=true)',
  });

/**
 * slirp4netns and iproute2's `ip`, which give deployed code a network of its own
 * (src/platform/launcher/sandbox-network.ts); without them it shares the host's, as builds say.
 */
export const ensureSandboxNetwork = (who) => {
  const without = "deployed code shares the host's network (its loopback services included) until they are installed";
  const slirp = ensureDebianPackage({ who, path: '/usr/bin/slirp4netns', pkg: 'slirp4netns', purpose: 'to give deployed code a network of its own', without });
  const ip = existsSync('/sbin/ip') || ensureDebianPackage({ who, path: '/usr/sbin/ip', pkg: 'iproute2', purpose: "to set deployed code's routes", without });
  return slirp && ip;
};
