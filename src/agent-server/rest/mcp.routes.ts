// MCP at /mcp over Streamable HTTP, through the official SDK's server in stateless mode: each POST is
// one JSON-RPC exchange with a server and transport of its own (no session to keep between api
// processes), answered as JSON. Tools are the deployment's assistants (services/mcp).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { type Request, type Response, Router } from 'express';
import { isAppError } from '../../errors.js';
import type { AgentServerContext } from '../services/served-deployment/deployment-scope.js';
import { callAgentTool, listAgentTools } from '../services/mcp/mcp.service.js';
import { serializeJson } from '../../serialize.js';

/** AppErrors become MCP errors the client can show; anything else propagates (the SDK masks it as an internal error). */
async function asMcp<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!isAppError(error)) throw error;
    const code = error.code === 'NOT_FOUND' || error.code === 'VALIDATION_FAILED' || error.code === 'BAD_REQUEST' ? ErrorCode.InvalidParams : ErrorCode.InternalError;
    throw new McpError(code, error.message);
  }
}

function mcpServer(ctx: AgentServerContext, signal: AbortSignal): Server {
  const server = new Server({ name: 'agent-platform', version: '0.1.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () =>
    asMcp(async () => ({
      tools: (await listAgentTools(ctx)).map(({ name, description, inputSchema }) => ({ name, description, inputSchema })),
    })),
  );
  server.setRequestHandler(CallToolRequestSchema, (request) =>
    asMcp(async () => {
      const { output, failed } = await callAgentTool(ctx, request.params.name, request.params.arguments, signal);
      return { content: [{ type: 'text' as const, text: serializeJson(output) }], isError: failed };
    }),
  );
  return server;
}

// Stateless mode has no stream to resume and no session to end: only POST is served.
const methodNotAllowed = (_req: Request, res: Response) => {
  res.status(405).set('Allow', 'POST').json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: use POST (stateless MCP server).' }, id: null });
};

export function mcpRouter(): Router {
  const router = Router();
  router.post('/mcp', async (req, res) => {
    const closed = new AbortController();
    res.on('close', () => closed.abort());
    const server = mcpServer(req.agent, closed.signal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  router.get('/mcp', methodNotAllowed);
  router.delete('/mcp', methodNotAllowed);
  return router;
}
