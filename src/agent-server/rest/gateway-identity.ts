// The agent server's end of the identity the platform's gateway passes on: the gateway
// (platform/rest/deployments-gateway.ts, gatewayIdentityHeaders) signs who it let through with the key derived
// for the runtime it forwards to, and the agent server checks it here. A request that did not come through the gateway
// (deployed code calling its own port, another process on the machine) carries no valid signature.
import { once } from 'node:events';
import type { Request, RequestHandler } from 'express';
import { AppError, isAppError } from '../../errors.js';
import { answerPlatformCall } from '../services/served-deployment/platform-calls.js';
import { httpStatus } from '../../http/errors.js';
import type { Deps } from '../../context.js';
import { GATEWAY_IDENTITY_HEADER, GATEWAY_SIGNATURE_HEADER, type GatewayIdentity, signedGatewayRequest } from '../../contracts/gateway-protocol.js';

/**
 * The caller the gateway signed for; UNAUTHENTICATED when the signature is wrong or expired, or
 * missing where it is `required` (else undefined: a request that did not come through the gateway).
 */
export function gatewayIdentityOf(
  deps: Pick<Deps, 'secrets'>,
  runtimeId: string,
  req: Pick<Request, 'get' | 'method' | 'originalUrl'>,
  options: { required: boolean },
): GatewayIdentity | undefined {
  const identity = req.get(GATEWAY_IDENTITY_HEADER);
  const signature = req.get(GATEWAY_SIGNATURE_HEADER);
  if (!identity && !signature && !options.required) return undefined;
  if (!identity || !signature || !deps.secrets.verify(signedGatewayRequest(runtimeId, req.method, req.originalUrl, identity), signature)) {
    throw AppError.unauthenticated('This agent server answers only requests through the platform (/deployments/<id>).');
  }
  const parsed = JSON.parse(Buffer.from(identity, 'base64url').toString('utf8')) as GatewayIdentity;
  if (!(parsed.expires > Date.now())) throw AppError.unauthenticated('The request’s identity has expired.');
  return parsed;
}

/**
 * POST /internal/platform-calls at a deployment's own agent server: the platform's GraphQL calls on
 * its resources, as the caller the gateway signed for. Errors answer as `{error: {code, message}}`
 * (read back by the platform as the AppError they were); a run's events stream as JSON lines.
 */
export function platformCallRoute(deps: Pick<Deps, 'logger'>): RequestHandler {
  return async (req, res) => {
    // Set for a platform user the gateway signed for, never for a deployment's end user.
    if (!res.locals.callerAccess) throw AppError.unauthenticated('Only the platform makes these calls.');
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    try {
      await answerPlatformCall(req.agent, res.locals.callerAccess as 'read' | 'write', req.body, {
        json: (value) => void res.json(value),
        line: async (text) => {
          if (!res.headersSent) res.status(200).type('application/x-ndjson').flushHeaders();
          if (!res.write(`${text}\n`)) await once(res, 'drain', { signal: aborted.signal });
        },
        end: () => void res.end(),
        signal: aborted.signal,
      });
    } catch (error) {
      if (res.headersSent) return void res.destroy();
      const { status, message, details } = httpStatus(error, deps.logger);
      res.status(status).json({ error: { code: isAppError(error) ? error.code : 'UNAVAILABLE', message, details } });
    }
  };
}
