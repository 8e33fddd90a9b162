// The API side of the request/reply channel to a deployment's runtime (see runtime-protocol.ts): finds
// the deployment's live runtimes in the database and asks the newest one that answers.
import { AppError } from '../../../errors.js';
import type { AgentServerContext } from './deployment-scope.js';
import { listRuntimes } from './served-deployment.store.js';
import { currentEncryptionContext } from '../encryption/at-rest.js';
import { type GraphReply, type GraphRequest, RUNTIME_REQUEST_PATH, RUNTIME_SIGNATURE_HEADER, signedMessage } from './runtime-protocol.js';

// Graph reads are quick; a runtime that takes longer is stuck or gone.
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Sends a graph request to the deployment's runtime and returns its result. The runtime's AppErrors
 * come back as themselves; UNAVAILABLE when no runtime of the deployment answers.
 */
export async function askRuntime(ctx: AgentServerContext, request: GraphRequest): Promise<unknown> {
  // What the runtime seals for the request (a state update's checkpoint) is sealed in its encryption context.
  const body = JSON.stringify({ ...request, encryptionContext: currentEncryptionContext() });
  for (const runtime of await listRuntimes(ctx.db, ctx.deployment.deploymentId)) {
    let response: Response;
    try {
      response = await fetch(new URL(RUNTIME_REQUEST_PATH, runtime.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', [RUNTIME_SIGNATURE_HEADER]: ctx.secrets.sign(signedMessage(runtime.id, body)) },
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
