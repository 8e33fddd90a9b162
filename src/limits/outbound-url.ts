// Where the server may send requests on a user's behalf (run webhooks): not to itself, its
// neighbours or the cloud metadata service (SSRF), unless the operator allows private targets
// (AGENT_PLATFORM_WEBHOOK_ALLOW_PRIVATE, for webhooks that are meant to stay on the local network).
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const nonPublic = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  nonPublic.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::ffff:0:0', 96], // IPv4-mapped: checked as IPv4 below
  ['64:ff9b::', 96], // NAT64
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  nonPublic.addSubnet(network, prefix, 'ipv6');
}

/** Whether an IP address (v4 or v6 literal) is loopback, link-local, private or otherwise not public. */
function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return nonPublic.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return nonPublic.check(mapped[1]!, 'ipv4');
  return nonPublic.check(address, 'ipv6');
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '').toLowerCase();

/**
 * Why `url` may not be called without resolving its name (a literal non-public address or a
 * localhost name), or undefined. For input validation: cheap and offline.
 */
export function literalTargetProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL';
  }
  const host = hostOf(parsed);
  if (host === 'localhost' || host.endsWith('.localhost')) return 'points at this machine (localhost)';
  if (isIP(host) && isNonPublicAddress(host)) return `points at a loopback, link-local or private address (${host})`;
  return undefined;
}

/** Why `url` may not be called once its name is resolved (any address non-public), or undefined. */
export async function resolvedTargetProblem(url: string): Promise<string | undefined> {
  const literal = literalTargetProblem(url);
  if (literal) return literal;
  const host = hostOf(new URL(url));
  if (isIP(host)) return undefined;
  try {
    const addresses = await lookup(host, { all: true });
    const blocked = addresses.find((entry) => isNonPublicAddress(entry.address));
    return blocked ? `resolves to a loopback, link-local or private address (${blocked.address})` : undefined;
  } catch {
    return 'could not be resolved';
  }
}
