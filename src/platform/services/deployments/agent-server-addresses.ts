// Where the gateway and the platform's calls reach a deployment's own agent server: the servers its
// launchers recorded in the platform's deployment_runtimes, and the key that signs for each.
import type { SecretBox } from '../../../crypto.js';
import type { Deps } from '../../../context.js';
import { listDeploymentRuntimes } from './deployments.store.js';

/** Where the gateway forwards a deployment's requests: its newest answering agent server, and the key that signs for it. */
export type AgentServerAddress = { runtimeId: string; url: string; signer: SecretBox; active: boolean };

// The gateway looks a deployment's agent servers up on every request: a list read in the last second
// is reused (a deploy or a restart changes it; a server that stopped answering is read again at once).
const ADDRESS_TTL_MS = 1000;
const recentAddresses = new Map<string, { addresses: AgentServerAddress[]; readAt: number }>();

/**
 * The deployment's agent servers, the active revision's first; empty when none runs. `fresh`: read
 * now (after one did not answer, or while waiting for one to start).
 */
export async function agentServerAddresses(deps: Pick<Deps, 'db' | 'secrets'>, deploymentId: string, options: { fresh?: boolean } = {}): Promise<AgentServerAddress[]> {
  const cached = recentAddresses.get(deploymentId);
  if (!options.fresh && cached && Date.now() - cached.readAt < ADDRESS_TTL_MS) return cached.addresses;
  const addresses = (await listDeploymentRuntimes(deps.db, deploymentId)).map((runtime) => ({
    runtimeId: runtime.id,
    url: runtime.url,
    signer: runtime.key_id ? deps.secrets.derive(runtime.key_id).box : deps.secrets,
    active: runtime.active,
  }));
  if (addresses.length) recentAddresses.set(deploymentId, { addresses, readAt: Date.now() });
  else recentAddresses.delete(deploymentId);
  return addresses;
}

const turns = new Map<string, number>();

/**
 * The agent server a request goes to: the active revision's servers (a deployment's replicas) in
 * turn, so requests and streams spread over them; before the active revision runs (a first deploy),
 * the newest there is. Undefined when none runs.
 */
export function pickAgentServer(deploymentId: string, addresses: AgentServerAddress[]): AgentServerAddress | undefined {
  const serving = addresses.filter((address) => address.active);
  if (serving.length <= 1) return serving[0] ?? addresses[0];
  const turn = turns.get(deploymentId) ?? 0;
  turns.set(deploymentId, turn + 1);
  return serving[turn % serving.length];
}
