// A2A (protocol 0.3) over JSON-RPC 2.0 at POST /a2a/{assistant_id}, and each assistant's agent card at
// GET /.well-known/agent-card.json?assistant_id=…. Errors are JSON-RPC error objects with a 4xx
// status (a client that reads only the status still sees the failure), including bodies that are
// not JSON or not JSON-RPC.
import { type Request, Router } from 'express';
import { AppError, isAppError } from '../../errors.js';
import { JsonRpcRequest } from '../services/a2a/a2a.schemas.js';
import { agentCard, cancelTask, getTask, sendMessage, streamMessage, TASK_NOT_CANCELABLE, TASK_NOT_FOUND } from '../services/a2a/a2a.service.js';
import { openSse } from './sse.js';
import { INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, RpcError, sendRpcError, toRpcError } from '../../http/json-rpc-errors.js';

// A2A's own codes for tasks.
const TASK_NOT_FOUND_CODE = -32001;
const TASK_NOT_CANCELABLE_CODE = -32002;

/** An error of an A2A method as JSON-RPC's: A2A's task errors have codes of their own. */
function toA2aError(error: unknown): RpcError | undefined {
  if (isAppError(error) && error.code === 'NOT_FOUND' && error.message === TASK_NOT_FOUND) return new RpcError(TASK_NOT_FOUND_CODE, error.message, 404);
  if (isAppError(error) && error.code === 'CONFLICT' && error.message === TASK_NOT_CANCELABLE) return new RpcError(TASK_NOT_CANCELABLE_CODE, error.message, 409);
  return toRpcError(error);
}

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
          const sse = openSse(res);
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
      const rpc = toA2aError(error);
      if (!rpc || res.headersSent) throw error;
      sendRpcError(res, id, rpc);
    }
  });

  return router;
}
