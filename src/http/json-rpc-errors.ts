// JSON-RPC 2.0's errors (A2A and MCP speak it): an error object with a 4xx status, so a client that
// reads only the status still sees the failure. Ground: the agent server's A2A and MCP routes answer
// in it, and so does the platform's gateway for what it refuses there.
import type { ErrorRequestHandler, Response } from 'express';
import { isAppError } from '../errors.js';
import { afterRefusedBody } from './errors.js';

export type RpcId = string | number | null;

// JSON-RPC's codes.
const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

/** A JSON-RPC error with the HTTP status it is sent with. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly status: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export function toRpcError(error: unknown): RpcError | undefined {
  if (error instanceof RpcError) return error;
  if (!isAppError(error)) return undefined;
  switch (error.code) {
    case 'VALIDATION_FAILED':
    case 'BAD_REQUEST':
      return new RpcError(INVALID_PARAMS, error.message, 400, error.details);
    case 'NOT_FOUND':
      return new RpcError(INVALID_PARAMS, error.message, 404);
    case 'CONFLICT':
      return new RpcError(INVALID_REQUEST, error.message, 409);
    case 'PAYLOAD_TOO_LARGE':
      return new RpcError(INVALID_REQUEST, error.message, 413);
    case 'UNAUTHENTICATED':
      return new RpcError(INVALID_REQUEST, error.message, 401);
    case 'FORBIDDEN':
      return new RpcError(INVALID_REQUEST, error.message, 403);
    default:
      return new RpcError(INTERNAL_ERROR, error.message, 503);
  }
}

export const sendRpcError = (res: Response, id: RpcId, error: RpcError) =>
  res.status(error.status).json({ jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data ? { data: error.data } : {}) } });

/**
 * Errors of JSON-RPC requests (A2A, MCP) that never reached their route (a body that is not JSON,
 * too large or too deep, a missing key) in JSON-RPC's shape; the rest go on to the agent server's
 * plain-text handler.
 */
export const jsonRpcErrorHandler: ErrorRequestHandler = (error, _req, res, next) => {
  if (res.headersSent) return next(error);
  const { type, status } = (error ?? {}) as { type?: string; status?: number };
  if (type === 'entity.parse.failed') return sendRpcError(res, null, new RpcError(PARSE_ERROR, 'Parse error: the body is not valid JSON.', 400));
  const rpc = type === 'entity.too.large' || status === 413 ? new RpcError(INVALID_REQUEST, 'Request body is too large.', 413) : toRpcError(error);
  if (!rpc) return next(error);
  // A refused body (the parser's, or the gateway's PAYLOAD_TOO_LARGE) is answered once the client has sent it.
  if (rpc.status === 413) return afterRefusedBody(res, () => sendRpcError(res, null, rpc));
  sendRpcError(res, null, rpc);
};
