// The agent-server operations the platform's GraphQL schema exposes on a deployment's resources
// (assistants, threads, runs, crons, store items), called where the deployment's data is: at the
// deployment's own agent server, signed by the gateway as the caller, which runs the service function
// on its own database (agent-server/services/served-deployment/platform-calls.ts). One service
// function per operation.
import { AppError, type ErrorCode } from '../../../errors.js';
import type { Deps, ServiceContext } from '../../../context.js';
// Types only: what each call takes and returns is the agent server's (its API's resources).
import type { Operation, OperationArgs, RunStreamEvent } from '../../../agent-server/services/served-deployment/platform-calls.js';
import { authenticateApiKey } from '../tenancy/authentication.service.js';
import { authorizeDeploymentCaller, declaresCustomAuth, takesPlatformKeys } from './deployments.service.js';
import { findDeploymentUsage, listLocalDeploymentIds } from './deployments.store.js';
import { agentServerAddresses, pickAgentServer } from './agent-server-addresses.js';
import { AGENT_CALL_PATH, type DeploymentAccess, type GatewayIdentity, gatewayIdentityHeaders, PLATFORM_CALL_ACCESS, type PlatformCall } from '../../../contracts/gateway-protocol.js';

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
    const server = pickAgentServer(deploymentId, await agentServerAddresses(deps, deploymentId, { fresh }));
    if (server) return { url: server.url, headers: gatewayIdentityHeaders(server.signer, server.runtimeId, request, caller) };
    if (abandoned()) return undefined;
    // Stopped for outgrowing its limits: no server comes until it fits again, and the caller is told why.
    if (!fresh) await assertWithinLimits(deps, deploymentId);
    if (Date.now() > deadline) throw new AppError('UNAVAILABLE', 'The deployment has no running agent server.');
  }
}

/** UNAVAILABLE, saying why, for a deployment stopped because its files or database outgrew their limits. */
export async function assertWithinLimits(deps: Deps, deploymentId: string): Promise<void> {
  const found = await findDeploymentUsage(deps.db, deploymentId);
  if (found?.status !== 'OVER_LIMIT') return;
  const megabytes = (bytes: number | undefined) => `${((bytes ?? 0) / 1024 / 1024).toFixed(1)} MB`;
  const usage = found.usage;
  throw new AppError(
    'UNAVAILABLE',
    `The deployment is stopped: it outgrew its disk limits (files ${megabytes(usage?.filesBytes)} of ${megabytes(usage?.filesLimitBytes)}, database ${megabytes(usage?.databaseBytes)} of ${megabytes(usage?.databaseLimitBytes)}). Raise them (source_config.resource_spec disk_mb, database_mb) to start it again.`,
  );
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
    // At a deployment whose config takes platform keys beside its own auth
    // (auth.allow_langsmith_api_keys), a key that may use it is signed for as its user; any other
    // request is its end user's, for its `authenticate` handler to decide.
    const platformUser = request.apiKey && (await takesPlatformKeys(deps, deploymentId)) ? await routeWithPlatformKey(deps, deploymentId, request, forwarded, abandoned) : undefined;
    if (platformUser) return platformUser;
    // What the end user may do is the deployment's handlers' to decide, not a workspace role's.
    return signedRoute(deps, deploymentId, forwarded, { userId: null, apiKeyId: null, access: 'write' }, abandoned);
  }
  const viewer = await authenticateApiKey(deps, request.apiKey, undefined);
  return routeToAgentServer({ ...deps, viewer }, deploymentId, request.access, forwarded, abandoned);
}

/** The route of a request whose platform key may use the deployment, as that key's user; undefined for a key that may not (it goes on as an end user's). */
async function routeWithPlatformKey(
  deps: Deps,
  deploymentId: string,
  request: { apiKey: string | undefined; access: DeploymentAccess },
  forwarded: { method: string; path: string },
  abandoned: () => boolean,
): Promise<AgentServerRoute | undefined> {
  try {
    const viewer = await authenticateApiKey(deps, request.apiKey, undefined);
    return await routeToAgentServer({ ...deps, viewer }, deploymentId, request.access, forwarded, abandoned);
  } catch (error) {
    if (error instanceof AppError && ['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND'].includes(error.code)) return undefined;
    throw error;
  }
}

/**
 * Where the gateway forwards a browser's CORS preflight to a deployment's own agent server, whose
 * `http.cors` answers it: a preflight carries no credentials (browsers send none), so it is signed as
 * an end user who may only read, which the agent server's policy answers before it asks who is calling.
 */
export async function routePreflight(
  deps: Deps,
  deploymentId: string,
  request: { method: string; path: string },
  abandoned: () => boolean = () => false,
): Promise<AgentServerRoute | undefined> {
  return signedRoute(deps, deploymentId, request, { userId: null, apiKeyId: null, access: 'read' }, abandoned);
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
  }).catch(async (error: unknown) => {
    if (signal?.aborted) throw error;
    // Its server may have been stopped since it was routed to, for outgrowing its limits: say so.
    await assertWithinLimits(ctx, deploymentId);
    ctx.logger.warn({ err: error, deploymentId }, "a deployment's agent server did not answer a platform call");
    throw new AppError('UNAVAILABLE', "The deployment's agent server did not answer.");
  });
  if (response.ok) return response;
  const failure = (await response.json().catch(() => undefined)) as { error?: { code: ErrorCode; message: string; details?: never } } | undefined;
  if (failure?.error) throw new AppError(failure.error.code, failure.error.message, failure.error.details);
  throw new AppError('UNAVAILABLE', `The deployment's agent server answered ${response.status}.`);
}

/** Runs `op` on the deployment's resources as `ctx.viewer`, wherever they are (see the top of this file). */
export async function callAgentServer<K extends PlatformCall>(
  ctx: ServiceContext,
  deploymentId: string,
  op: K,
  ...args: OperationArgs<K>
): Promise<Awaited<ReturnType<Operation<K>>>> {
  const response = await postCall(ctx, deploymentId, PLATFORM_CALL_ACCESS[op], { op, args });
  return JSON.parse(await response.text(), reviveDates).result;
}

/**
 * The deployment of a run named by id alone (GraphQL `run(id)`): the running local deployment that has
 * it, of those the viewer may read (`serve`'s caller: its own), asked in turn. A control-plane
 * deployment's runs are named with their `deploymentId`; NOT_FOUND when no local deployment has the run.
 */
export async function deploymentOfRun(ctx: ServiceContext, runId: string): Promise<string> {
  const viewer = ctx.viewer;
  if (viewer.kind === 'trace-writer') throw AppError.notFound('Run not found');
  const candidates = viewer.kind === 'local' ? [viewer.deploymentId] : await listLocalDeploymentIds(ctx.db, viewer.kind === 'api-key' ? viewer.organizationId : undefined);
  for (const deploymentId of candidates) {
    // One whose agent server does not run now is not waited for.
    if (!(await agentServerAddresses(ctx, deploymentId)).length) continue;
    try {
      await callAgentServer(ctx, deploymentId, 'getRun', null, runId);
      return deploymentId;
    } catch (error) {
      // Not this one's (or not the viewer's to read, or not running): the next.
      if (!(error instanceof AppError)) throw error;
    }
  }
  throw AppError.notFound('Run not found');
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
): AsyncGenerator<RunStreamEvent> {
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
