// Both ends of the identity the platform's gateway passes to a deployment's own agent server: the
// gateway (rest/deployments-gateway.ts) signs who it let through with the key derived for the runtime
// it forwards to, and the agent server checks it. A request that did not come through the gateway
// (deployed code calling its own port, another process on the machine) carries no valid signature.
import type { Request } from 'express';
import { AppError } from '../../errors.js';
import type { Deps } from '../../services/context.js';
import type { SecretBox } from '../../crypto.js';
import {
  GATEWAY_IDENTITY_HEADER,
  GATEWAY_SIGNATURE_HEADER,
  type GatewayIdentity,
  signedGatewayRequest,
} from '../../services/deployments/runtime-protocol.js';

// Long enough to reach the runtime, too short to replay.
const IDENTITY_TTL_MS = 60_000;

/** The identity headers of a request the gateway forwards to runtime `runtimeId` (`path`: as forwarded, with its query). */
export function gatewayIdentityHeaders(
  signer: SecretBox,
  runtimeId: string,
  request: { method: string; path: string },
  caller: Omit<GatewayIdentity, 'expires'>,
): Record<string, string> {
  const identity = Buffer.from(JSON.stringify({ ...caller, expires: Date.now() + IDENTITY_TTL_MS } satisfies GatewayIdentity)).toString('base64url');
  return {
    [GATEWAY_IDENTITY_HEADER]: identity,
    [GATEWAY_SIGNATURE_HEADER]: signer.sign(signedGatewayRequest(runtimeId, request.method, request.path, identity)),
  };
}

/** The caller the gateway signed for; UNAUTHENTICATED when the signature is missing, wrong or expired. */
export function verifiedGatewayIdentity(deps: Pick<Deps, 'secrets'>, runtimeId: string, req: Request): GatewayIdentity {
  const identity = req.get(GATEWAY_IDENTITY_HEADER);
  const signature = req.get(GATEWAY_SIGNATURE_HEADER);
  if (!identity || !signature || !deps.secrets.verify(signedGatewayRequest(runtimeId, req.method, req.originalUrl, identity), signature)) {
    throw AppError.unauthenticated('This agent server answers only requests through the platform (/deployments/<id>).');
  }
  const parsed = JSON.parse(Buffer.from(identity, 'base64url').toString('utf8')) as GatewayIdentity;
  if (!(parsed.expires > Date.now())) throw AppError.unauthenticated('The request’s identity has expired.');
  return parsed;
}
