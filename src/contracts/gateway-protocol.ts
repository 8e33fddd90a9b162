// The contract between the platform's gateway (/deployments/<id>/…) and a deployment's own agent
// server: which requests only read, who the gateway let through (signed headers), and where the
// platform's calls go. Both trees import it; it imports neither. Its rules are the API's, not either
// side's code: a route added later is a write until it is listed here.
import type { SecretBox } from '../crypto.js';

/**
 * What a caller does at a deployment's agent server: `read` (GET routes, searches, counts, history,
 * joining or streaming an existing run) or `write` (everything else).
 */
export type DeploymentAccess = 'read' | 'write';

/** Where a deployment's agent server answers the platform's calls (POST, JSON `{op, args}`). */
export const AGENT_CALL_PATH = '/internal/platform-calls';

/**
 * The platform's calls (its GraphQL types of a deployment's resources) and the access each needs: a
 * viewer of the deployment's workspace makes only the reads. `streamRun` (a run's events) reads too.
 */
export const PLATFORM_CALL_ACCESS = {
  getAssistant: 'read',
  listAssistants: 'read',
  listAssistantVersions: 'read',
  getThread: 'read',
  getThreadState: 'read',
  listThreads: 'read',
  startThread: 'write',
  getRun: 'read',
  listRunsOfThreads: 'read',
  startRun: 'write',
  getCron: 'read',
  searchCrons: 'read',
  countCrons: 'read',
  createCron: 'write',
  updateCron: 'write',
  deleteCron: 'write',
  getItem: 'read',
  searchItems: 'read',
  listNamespaces: 'read',
  putItem: 'write',
  deleteItem: 'write',
} as const satisfies Record<string, DeploymentAccess>;

export type PlatformCall = keyof typeof PLATFORM_CALL_ACCESS;

// ─── Which requests only read, as the platform's roles see them: a workspace viewer may make these and no other ───

/** Thread-stream commands that change the thread (start a run): a viewer may send every other one. */
const WRITING_COMMANDS = new Set(['run.start', 'input.respond']);

/** Whether a thread-stream command changes the thread (starts a run). */
export const commandWrites = (method: unknown): boolean => typeof method === 'string' && WRITING_COMMANDS.has(method);

/** POST routes that read: searches, counts, version lists, history, a state at a checkpoint, store reads, UI bundles. */
const READING_POSTS = [
  /^\/(assistants|threads|runs\/crons)\/(search|count)\/?$/,
  /^\/assistants\/[^/]+\/versions\/?$/,
  /^\/threads\/[^/]+\/(history|state\/checkpoint|stream\/events)\/?$/,
  /^\/store\/(items\/search|namespaces)\/?$/,
  /^\/ui\/[^/]+\/?$/,
  // The platform's calls: each checks its own operation's access (see AGENT_CALL_PATH).
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
export function requestAccess(req: { method: string; path: string; body?: unknown }): DeploymentAccess {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return 'read';
  if (req.method !== 'POST') return 'write';
  if (READING_POSTS.some((pattern) => pattern.test(req.path))) return 'read';
  // Thread-stream commands read, except those that start a run.
  if (/^\/threads\/[^/]+\/commands\/?$/.test(req.path)) return commandWrites((req.body as { method?: unknown } | null)?.method) ? 'write' : 'read';
  if (/^\/mcp\/?$/.test(req.path)) return jsonRpcReads('mcp', req.body) ? 'read' : 'write';
  if (/^\/a2a\/[^/]+\/?$/.test(req.path)) return jsonRpcReads('a2a', req.body) ? 'read' : 'write';
  return 'write';
}

// ─── Who the gateway let through ───

/**
 * Set by the gateway on every forwarded request (a caller's own value is replaced): the deployment's
 * url as the caller reached it, which the generative UI's HTML links the bundle's files at.
 */
export const RUNTIME_DEPLOYMENT_URL_HEADER = 'x-agent-platform-deployment-url';

/** Who the platform's gateway let through, as the deployment's agent server receives it (signed). */
export type GatewayIdentity = {
  /**
   * The platform user whose key made the request, and the key; both null for an end user of a
   * deployment that declares custom auth (no platform key), whom the deployment's own `authenticate`
   * handler identifies. The signature still says the request came through the gateway.
   */
  userId: string | null;
  apiKeyId: string | null;
  /** What the caller's role in the deployment's workspace allows: `write` includes reading (an end user: what custom auth allows). */
  access: DeploymentAccess;
  /** Until when (epoch ms) the signature holds: long enough to arrive, too short to replay. */
  expires: number;
};

/** The caller's identity (base64url JSON of a GatewayIdentity), set by the gateway on every forwarded request. */
export const GATEWAY_IDENTITY_HEADER = 'x-agent-platform-identity';
/** The MAC of signedGatewayRequest, with the key derived for the runtime the request is forwarded to. */
export const GATEWAY_SIGNATURE_HEADER = 'x-agent-platform-signature';

/**
 * What the gateway's MAC covers: the runtime it is meant for, method, path (with its query) and the
 * identity. Not the body, which streams; a deployment that forges a signature with its own key only
 * ever reaches itself.
 */
export const signedGatewayRequest = (runtimeId: string, method: string, path: string, identity: string) => `${runtimeId}\ngateway\n${method}\n${path}\n${identity}`;

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
