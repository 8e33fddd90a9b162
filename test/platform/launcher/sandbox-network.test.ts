// Sandboxes started together each get their own network, refused ranges included: builds and agent
// servers of several deployments start at once (a test file's deployments, a worker's restarts).
// Setting routes while slirp4netns was still configuring its interface failed one sandbox in ~45.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { connectSandboxNetwork, probeNetwork, REFUSED_NETWORKS } from '../../../src/platform/launcher/sandbox-network.js';

const NETWORK = { mode: 'isolated', allowed: [] } as const;
const isolated = probeNetwork(NETWORK as never).isolated;

/** A bubblewrap sandbox in a network of its own that prints its routes once connected. */
async function routesOfNewSandbox(): Promise<string> {
  const child = spawn(
    '/usr/bin/bwrap',
    ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-net', '--unshare-pid', '--die-with-parent', '--info-fd', '3', '--block-fd', '4', '--', '/usr/sbin/ip', 'route', 'show'],
    { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const connected = connectSandboxNetwork(child, { info: 3, block: 4 }, NETWORK as never);
  const [code] = await Promise.all([exited, connected]);
  expect(code).toBe(0);
  return output;
}

describe.skipIf(!isolated)('a sandbox network', () => {
  it('is set up for every sandbox of many started at once, with every refused range and a default route', async () => {
    const routes = await Promise.all(Array.from({ length: 24 }, routesOfNewSandbox));
    for (const table of routes) {
      for (const range of REFUSED_NETWORKS) expect(table).toContain(`prohibit ${range}`);
      expect(table).toMatch(/^default via 10\.0\.2\.2 dev tap0/m);
    }
  });
});
