// The agent-server operations the platform's GraphQL schema exposes on a deployment's resources
// (assistants, threads, runs, crons, store items), called where the deployment's data is: in this
// process for a local deployment (its rows are in the platform's database), and through the
// deployment's own agent server otherwise, signed by the gateway as the caller, which runs the same
// service function on its own database. One service function per operation either way.
import { AppError, type ErrorCode } from '../../errors.js';
import { getAssistant, listAssistants, listAssistantVersions } from '../assistants/assistants.service.js';
import type { Deps, ServiceContext } from '../context.js';
import { countCrons, createCron, deleteCron, getCron, searchCrons, updateCron } from '../crons/crons.service.js';
import { getRun, listRunsOfThreads, startRun, streamRun } from '../runs/runs.service.js';
import { deleteItem, getItem, listNamespaces, putItem, searchItems } from '../store/store.service.js';
import { getThread, getThreadState, listThreads, startThread } from '../threads/threads.service.js';
import type { AgentServerContext } from '../agent-server/deployment-scope.js';
import { authenticateApiKey } from '../tenancy/tenancy.service.js';
import { authorizeDeploymentCaller, declaresCustomAuth, servedByOwnAgentServer } from './deployments.service.js';
import { agentContext } from '../agent-server/served-deployment.js';
import { agentServerAddresses } from './agent-server-addresses.js';
import { AGENT_CALL_PATH, type DeploymentAccess, type GatewayIdentity, gatewayIdentityHeaders } from '../../gateway-protocol.js';

/** Each operation and the access it needs (a viewer of the deployment's workspace may only read). */
const AGENT_OPERATIONS = {
  getAssistant: { access: 'read', run: getAssistant },
  listAssistants: { access: 'read', run: listAssistants },
  listAssistantVersions: { access: 'read', run: listAssistantVersions },
  getThread: { access: 'read', run: getThread },
  getThreadState: { access: 'read', run: getThreadState },
  listThreads: { access: 'read', run: listThreads },
  startThread: { access: 'write', run: startThread },
  getRun: { access: 'read', run: getRun },
  listRunsOfThreads: { access: 'read', run: listRunsOfThreads },
  startRun: { access: 'write', run: startRun },
  getCron: { access: 'read', run: getCron },
  searchCrons: { access: 'read', run: searchCrons },
  countCrons: { access: 'read', run: countCrons },
  createCron: { access: 'write', run: createCron },
  updateCron: { access: 'write', run: updateCron },
  deleteCron: { access: 'write', run: deleteCron },
  getItem: { access: 'read', run: getItem },
  searchItems: { access: 'read', run: searchItems },
  listNamespaces: { access: 'read', run: listNamespaces },
  putItem: { access: 'write', run: putItem },
  deleteItem: { access: 'write', run: deleteItem },
} as const satisfies Record<string, { access: DeploymentAccess; run: (ctx: AgentServerContext, ...args: never[]) => Promise<unknown> }>;

export type AgentOperation = keyof typeof AGENT_OPERATIONS;
type Operation<K extends AgentOperation> = (typeof AGENT_OPERATIONS)[K]['run'];
type OperationArgs<K extends AgentOperation> = Parameters<Operation<K>> extends [AgentServerContext, ...infer Rest] ? Rest : never;


/** An ISO-8601 timestamp as JSON writes a Date: read back as a Date (the services' values hold Dates). */
const JSON_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;
const reviveDates = (_key: string, value: unknown) => (typeof value === 'string' && JSON_DATE.test(value) ? new Date(value) : value);

// A call the agent server takes longer than this to answer is stuck (graph reads included).
const CALL_TIMEOUT_MS = 60_000;

// While a deployment's agent server restarts (it died, or its worker moved), callers wait this long
// for it rather than fail at once.
const RESTART_WAIT_MS = 15_000;

/** A deployment's agent server, and the headers that sign the caller for it. */
type AgentServerRoute = { url: string; headers: Record<string, string> };

/**
 * Where a caller's request to a deployment's own agent server goes, for the gateway and the
 * platform's calls alike: the caller authorised for `access` (NOT_FOUND, FORBIDDEN, as agentContext
 * answers), the deployment's agent server (waited for up to RESTART_WAIT_MS while one restarts;
 * undefined when `abandoned()` says the caller left meanwhile) and the identity headers signed for
 * it for `request` (`path` as forwarded, with its query). UNAVAILABLE when no server comes.
 */
async function routeToAgentServer(
  ctx: ServiceContext,
  deploymentId: string,
  access: DeploymentAccess,
  request: { method: string; path: string },
  abandoned: () => boolean = () => false,
): Promise<AgentServerRoute | undefined> {
  const granted = await authorizeDeploymentCaller(ctx, deploymentId, access);
  const viewer = ctx.viewer;
  const caller = viewer.kind === 'api-key' ? { userId: viewer.userId, apiKeyId: viewer.apiKeyId } : { userId: 'system', apiKeyId: 'system' };
  return signedRoute(ctx, deploymentId, request, { ...caller, access: granted }, abandoned);
}

/** The deployment's agent server (waiting while it restarts) and the headers that sign `caller` for it. */
async function signedRoute(
  deps: Deps,
  deploymentId: string,
  request: { method: string; path: string },
  caller: Omit<GatewayIdentity, 'expires'>,
  abandoned: () => boolean,
): Promise<AgentServerRoute | undefined> {
  for (let fresh = false, deadline = Date.now() + RESTART_WAIT_MS; ; fresh = true, await new Promise((resolve) => setTimeout(resolve, 200))) {
    const [server] = await agentServerAddresses(deps, deploymentId, { fresh });
    if (server) return { url: server.url, headers: gatewayIdentityHeaders(server.signer, server.runtimeId, request, caller) };
    if (abandoned()) return undefined;
    if (Date.now() > deadline) throw new AppError('UNAVAILABLE', 'The deployment has no running agent server.');
  }
}

/**
 * Where the gateway forwards a request to a deployment's own agent server, and as whom. A platform
 * key (`apiKey`) is authenticated and authorised as routeToAgentServer does (UNAUTHENTICATED without
 * a valid one, NOT_FOUND, FORBIDDEN). At a deployment that declares custom auth, only the studio's
 * requests (`x-auth-scheme: langsmith`) that carry a key are the platform user's; every other request
 * is its end user's: forwarded without a platform identity (signed all the same, so its agent server
 * still refuses what did not come through the gateway) for the deployment's own `authenticate`
 * handler to decide, which also answers a studio request without a key.
 */
export async function routeGatewayRequest(
  deps: Deps,
  deploymentId: string,
  request: { apiKey: string | undefined; authScheme: string | undefined; access: DeploymentAccess; method: string; path: string },
  abandoned: () => boolean = () => false,
): Promise<AgentServerRoute | undefined> {
  const forwarded = { method: request.method, path: request.path };
  const studio = request.authScheme?.toLowerCase() === 'langsmith' && !!request.apiKey;
  if (!studio && (await declaresCustomAuth(deps, deploymentId))) {
    // What the end user may do is the deployment's handlers' to decide, not a workspace role's.
    return signedRoute(deps, deploymentId, forwarded, { userId: null, apiKeyId: null, access: 'write' }, abandoned);
  }
  const viewer = await authenticateApiKey(deps, request.apiKey, undefined);
  return routeToAgentServer({ ...deps, viewer }, deploymentId, request.access, forwarded, abandoned);
}

/** POSTs a call to the deployment's agent server as the caller; its response, or the AppError it answered. */
async function postCall(ctx: ServiceContext, deploymentId: string, access: DeploymentAccess, body: unknown, signal?: AbortSignal): Promise<Response> {
  const route = await routeToAgentServer(ctx, deploymentId, access, { method: 'POST', path: AGENT_CALL_PATH }, () => signal?.aborted ?? false);
  if (!route) throw new AppError('UNAVAILABLE', 'The call was abandoned.');
  const response = await fetch(new URL(AGENT_CALL_PATH, route.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...route.headers },
    body: JSON.stringify(body),
    signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]) : AbortSignal.timeout(CALL_TIMEOUT_MS),
  }).catch((error: unknown) => {
    if (signal?.aborted) throw error;
    ctx.logger.warn({ err: error, deploymentId }, "a deployment's agent server did not answer a platform call");
    throw new AppError('UNAVAILABLE', "The deployment's agent server did not answer.");
  });
  if (response.ok) return response;
  const failure = (await response.json().catch(() => undefined)) as { error?: { code: ErrorCode; message: string; details?: never } } | undefined;
  if (failure?.error) throw new AppError(failure.error.code, failure.error.message, failure.error.details);
  throw new AppError('UNAVAILABLE', `The deployment's agent server answered ${response.status}.`);
}

/** Runs `op` on the deployment's resources as `ctx.viewer`, wherever they are (see the top of this file). */
export async function callAgentServer<K extends AgentOperation>(
  ctx: ServiceContext,
  deploymentId: string,
  op: K,
  ...args: OperationArgs<K>
): Promise<Awaited<ReturnType<Operation<K>>>> {
  const { access, run } = AGENT_OPERATIONS[op];
  const call = run as unknown as (ctx: AgentServerContext, ...args: OperationArgs<K>) => Promise<Awaited<ReturnType<Operation<K>>>>;
  if (!(await servedByOwnAgentServer(ctx, deploymentId))) return call(await agentContext(ctx, deploymentId, { access }), ...args);
  const response = await postCall(ctx, deploymentId, access, { op, args });
  return JSON.parse(await response.text(), reviveDates).result;
}

/**
 * A run's stream events, as streamRun yields them, wherever the deployment's data is: the agent
 * server answers `streamRun` with one JSON event per line, live until the run ends.
 */
export async function* streamRunOf(
  ctx: ServiceContext,
  deploymentId: string,
  runId: string,
  options: { afterSeq?: number; modes?: string[]; signal?: AbortSignal },
): AsyncGenerator<Awaited<ReturnType<typeof streamRun>> extends AsyncIterable<infer E> ? E : never> {
  if (!(await servedByOwnAgentServer(ctx, deploymentId))) {
    yield* streamRun(await agentContext(ctx, deploymentId), runId, options);
    return;
  }
  const response = await postCall(ctx, deploymentId, 'read', { op: 'streamRun', args: [runId, { afterSeq: options.afterSeq, modes: options.modes }] }, options.signal);
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line) yield JSON.parse(line);
    }
  }
}

/**
 * The agent server's end: runs a platform call on its own context, for a caller whose access the
 * gateway signed. Streams `streamRun` as one JSON event per line.
 */
export async function answerPlatformCall(
  ctx: AgentServerContext,
  callerAccess: DeploymentAccess,
  body: unknown,
  write: { json(value: unknown): void; line(text: string): boolean | Promise<void>; end(): void; signal: AbortSignal },
): Promise<void> {
  const { op, args } = (body ?? {}) as { op?: unknown; args?: unknown };
  if (!Array.isArray(args)) throw AppError.badRequest('A platform call needs `op` and `args`.');
  if (op === 'streamRun') {
    const [runId, options] = args as [string, { afterSeq?: number; modes?: string[] }];
    for await (const event of streamRun(ctx, String(runId), { ...options, signal: write.signal })) await write.line(JSON.stringify(event));
    return write.end();
  }
  if (typeof op !== 'string' || !Object.hasOwn(AGENT_OPERATIONS, op)) throw AppError.notFound(`No platform call ${String(op)}`);
  const { access, run } = AGENT_OPERATIONS[op as AgentOperation];
  if (access === 'write' && callerAccess !== 'write') throw AppError.forbidden('This API key may only read this deployment.');
  write.json({ result: (await (run as (ctx: AgentServerContext, ...args: unknown[]) => Promise<unknown>)(ctx, ...args)) ?? null });
}
