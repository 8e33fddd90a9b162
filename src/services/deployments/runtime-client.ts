// The API side of the request/reply channel to a deployment's runtime (see runtime-protocol.ts): finds
// the deployment's live runtimes in the database and asks the newest one that answers.
import type { SecretBox } from '../../crypto.js';
import { AppError } from '../../errors.js';
import type { Deps } from '../context.js';
import type { AgentServerContext } from './deployment-scope.js';
import { listDeploymentRuntimes } from './deployments.store.js';
import { type GraphReply, type GraphRequest, RUNTIME_REQUEST_PATH, RUNTIME_SIGNATURE_HEADER, signedMessage } from './runtime-protocol.js';

// Graph reads are quick; a runtime that takes longer is stuck or gone.
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Sends a graph request to the deployment's runtime and returns its result. The runtime's AppErrors
 * come back as themselves; UNAVAILABLE when no runtime of the deployment answers.
 */
export async function askRuntime(ctx: AgentServerContext, request: GraphRequest): Promise<unknown> {
  const body = JSON.stringify(request);
  for (const runtime of await listDeploymentRuntimes(ctx.db, ctx.deployment.deploymentId)) {
    // A runtime that does not hold the installation's key verifies with a key derived for it (launcher).
    const signer = runtime.key_id ? ctx.secrets.derive(runtime.key_id).box : ctx.secrets;
    let response: Response;
    try {
      response = await fetch(new URL(RUNTIME_REQUEST_PATH, runtime.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', [RUNTIME_SIGNATURE_HEADER]: signer.sign(signedMessage(runtime.id, body)) },
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      // Its process is gone (its row stays until the recovery sweep): try an older one.
      ctx.logger.warn({ err: error, runtimeId: runtime.id }, 'a deployment runtime did not answer');
      continue;
    }
    const reply = (await response.json().catch(() => undefined)) as GraphReply | undefined;
    if (reply && 'result' in reply) return reply.result;
    if (reply && 'error' in reply) throw new AppError(reply.error.code, reply.error.message, reply.error.details);
    throw new Error(`The deployment's runtime answered ${response.status} without a result`);
  }
  throw new AppError('UNAVAILABLE', 'The deployment has no running runtime.');
}

/** Where the gateway forwards a deployment's requests: its newest answering agent server, and the key that signs for it. */
export type AgentServerAddress = { runtimeId: string; url: string; signer: SecretBox };

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
  }));
  if (addresses.length) recentAddresses.set(deploymentId, { addresses, readAt: Date.now() });
  else recentAddresses.delete(deploymentId);
  return addresses;
}
