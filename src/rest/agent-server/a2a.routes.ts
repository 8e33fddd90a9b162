// A2A (protocol 0.3) over JSON-RPC 2.0 at POST /a2a/{assistant_id}, and each assistant's agent card at
// GET /.well-known/agent-card.json?assistant_id=…. Errors are JSON-RPC error objects with a 4xx
// status (a client that reads only the status still sees the failure), including bodies that are
// not JSON or not JSON-RPC.
import { type ErrorRequestHandler, type Request, type Response, Router } from 'express';
import { AppError, isAppError } from '../../errors.js';
import { JsonRpcRequest } from '../../services/a2a/a2a.schemas.js';
import { agentCard, cancelTask, getTask, sendMessage, streamMessage, TASK_NOT_CANCELABLE, TASK_NOT_FOUND } from '../../services/a2a/a2a.service.js';
import { openSse } from './sse.js';
import { afterRefusedBody } from '../middleware/errors.js';

type RpcId = string | number | null;

// JSON-RPC's codes, and A2A's own for tasks.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const TASK_NOT_FOUND_CODE = -32001;
const TASK_NOT_CANCELABLE_CODE = -32002;

/** A JSON-RPC error with the HTTP status it is sent with. */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly status: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

function toRpcError(error: unknown): RpcError | undefined {
  if (error instanceof RpcError) return error;
  if (!isAppError(error)) return undefined;
  switch (error.code) {
    case 'VALIDATION_FAILED':
    case 'BAD_REQUEST':
      return new RpcError(INVALID_PARAMS, error.message, 400, error.details);
    case 'NOT_FOUND':
      return error.message === TASK_NOT_FOUND ? new RpcError(TASK_NOT_FOUND_CODE, error.message, 404) : new RpcError(INVALID_PARAMS, error.message, 404);
    case 'CONFLICT':
      return new RpcError(error.message === TASK_NOT_CANCELABLE ? TASK_NOT_CANCELABLE_CODE : INVALID_REQUEST, error.message, 409);
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

const sendRpcError = (res: Response, id: RpcId, error: RpcError) =>
  res.status(error.status).json({ jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data ? { data: error.data } : {}) } });

/**
 * The agent server's url as the client reached it (the card names absolute urls): `urlOf` says it
 * where that is not this server's own (a deployed agent server, reached through the gateway).
 */
const baseUrl = (req: Request, urlOf?: (req: Request) => string | undefined) => urlOf?.(req) ?? `${req.protocol}://${req.get('host')}${req.baseUrl}`;

export function a2aRouter(options: { urlOf?: (req: Request) => string | undefined } = {}): Router {
  const router = Router();

  router.get('/.well-known/agent-card.json', async (req, res) => {
    const assistantId = req.query.assistant_id;
    if (typeof assistantId !== 'string' || !assistantId) {
      throw new AppError('VALIDATION_FAILED', 'Name the agent: ?assistant_id=<assistant id or graph name>.', [
        { loc: ['query', 'assistant_id'], msg: 'Field required', type: 'missing' },
      ]);
    }
    res.json(await agentCard(req.agent, assistantId, baseUrl(req, options.urlOf)));
  });

  router.post('/a2a/:assistantId', async (req, res) => {
    const envelope = JsonRpcRequest.safeParse(req.body);
    if (!envelope.success) {
      const id = typeof req.body?.id === 'string' || typeof req.body?.id === 'number' ? req.body.id : null;
      const issues = envelope.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');
      return sendRpcError(res, id, new RpcError(INVALID_REQUEST, `Not a JSON-RPC 2.0 request: ${issues}`, 400));
    }
    const { id = null, method, params } = envelope.data;
    const ctx = req.agent;
    const { assistantId } = req.params;
    try {
      switch (method) {
        case 'message/send': {
          const closed = new AbortController();
          res.on('close', () => {
            if (!res.writableFinished) closed.abort();
          });
          const task = await sendMessage(ctx, assistantId, params, closed.signal);
          if (!closed.signal.aborted) res.json({ jsonrpc: '2.0', id, result: task });
          return;
        }
        case 'message/stream': {
          // Validation and lookup happen before the stream opens, so their errors still answer as JSON with a 4xx.
          const closed = new AbortController();
          res.on('close', () => {
            if (!res.writableFinished) closed.abort();
          });
          const events = await streamMessage(ctx, assistantId, params, closed.signal);
          const sse = openSse(req, res);
          try {
            for await (const result of events) await sse.write({ event: 'message', data: JSON.stringify({ jsonrpc: '2.0', id, result }) });
          } catch (error) {
            const rpc = toRpcError(error) ?? new RpcError(INTERNAL_ERROR, 'Internal error.', 500);
            if (!rpc.data) ctx.logger.warn({ err: error }, 'a2a stream failed');
            await sse.write({ event: 'message', data: JSON.stringify({ jsonrpc: '2.0', id, error: { code: rpc.code, message: rpc.message } }) });
          } finally {
            sse.end();
          }
          return;
        }
        case 'tasks/get':
          res.json({ jsonrpc: '2.0', id, result: await getTask(ctx, assistantId, params) });
          return;
        case 'tasks/cancel':
          res.json({ jsonrpc: '2.0', id, result: await cancelTask(ctx, assistantId, params) });
          return;
        default:
          throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method} (this agent answers message/send, message/stream, tasks/get and tasks/cancel)`, 404);
      }
    } catch (error) {
      const rpc = toRpcError(error);
      if (!rpc || res.headersSent) throw error;
      sendRpcError(res, id, rpc);
    }
  });

  return router;
}

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
