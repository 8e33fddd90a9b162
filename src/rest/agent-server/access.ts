// Which requests at a deployment's agent server only read, as the platform's roles see them: a
// workspace viewer may make these and no other. Unknown requests are writes, so a route added later
// is closed to viewers until it is listed here.
import type { Request } from 'express';
import type { DeploymentAccess } from '../../services/deployments/deployments.service.js';
import { commandWrites } from '../../services/runs/thread-stream.service.js';

/** POST routes that read: searches, counts, version lists, history, a state at a checkpoint, store reads, UI bundles. */
const READING_POSTS = [
  /^\/(assistants|threads|runs\/crons)\/(search|count)\/?$/,
  /^\/assistants\/[^/]+\/versions\/?$/,
  /^\/threads\/[^/]+\/(history|state\/checkpoint|stream\/events)\/?$/,
  /^\/store\/(items\/search|namespaces)\/?$/,
  /^\/ui\/[^/]+\/?$/,
  // The platform's calls: each checks its own operation's access (agent-operations.ts).
  /^\/internal\/platform-calls\/?$/,
];

/** JSON-RPC methods that read: listing MCP tools, getting an A2A task; calling a tool or sending a message writes. */
const READING_METHODS: Record<'mcp' | 'a2a', ReadonlySet<string>> = {
  mcp: new Set(['initialize', 'ping', 'tools/list', 'resources/list', 'prompts/list', 'notifications/initialized', 'notifications/cancelled']),
  a2a: new Set(['tasks/get', 'agent/getAuthenticatedExtendedCard']),
};

function jsonRpcReads(protocol: 'mcp' | 'a2a', body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.length > 0 && messages.every((message) => {
    const method = (message as { method?: unknown } | null)?.method;
    return typeof method === 'string' && READING_METHODS[protocol].has(method);
  });
}

/** Whether `req` (its path relative to the deployment's url, its body parsed) reads or writes. */
export function requestAccess(req: Pick<Request, 'method' | 'path' | 'body'>): DeploymentAccess {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return 'read';
  if (req.method !== 'POST') return 'write';
  if (READING_POSTS.some((pattern) => pattern.test(req.path))) return 'read';
  // Thread-stream commands read, except those that start a run.
  if (/^\/threads\/[^/]+\/commands\/?$/.test(req.path)) return commandWrites((req.body as { method?: unknown } | null)?.method) ? 'write' : 'read';
  if (/^\/mcp\/?$/.test(req.path)) return jsonRpcReads('mcp', req.body) ? 'read' : 'write';
  if (/^\/a2a\/[^/]+\/?$/.test(req.path)) return jsonRpcReads('a2a', req.body) ? 'read' : 'write';
  return 'write';
}
