// The platform's calls on a deployment's resources, at the deployment's agent server: the operations
// the platform's GraphQL schema exposes (assistants, threads, runs, crons, store items), each the
// service function the REST route calls too, and the access it needs. The platform POSTs them to
// AGENT_CALL_PATH signed as the caller (deployments/agent-operations.ts); answerPlatformCall runs them.
import { AppError } from '../../../errors.js';
import { type DeploymentAccess, PLATFORM_CALL_ACCESS, type PlatformCall } from '../../../contracts/gateway-protocol.js';
import { getAssistant, listAssistants, listAssistantVersions } from '../assistants/assistants.service.js';
import { countCrons, createCron, deleteCron, getCron, searchCrons, updateCron } from '../crons/crons.service.js';
import { streamRun } from '../runs/run-follow.service.js';
import { getRun, listRunsOfThreads } from '../runs/run-reads.service.js';
import { startRun } from '../runs/runs.service.js';
import { deleteItem, getItem, listNamespaces, putItem, searchItems } from '../store/store.service.js';
import { getThread, getThreadState, listThreads, startThread } from '../threads/threads.service.js';
import type { AgentServerContext } from './deployment-scope.js';

/** Each platform call's service function (its access: PLATFORM_CALL_ACCESS, the gateway's contract). */
const AGENT_OPERATIONS = {
  getAssistant,
  listAssistants,
  listAssistantVersions,
  getThread,
  getThreadState,
  listThreads,
  startThread,
  getRun,
  listRunsOfThreads,
  startRun,
  getCron,
  searchCrons,
  countCrons,
  createCron,
  updateCron,
  deleteCron,
  getItem,
  searchItems,
  listNamespaces,
  putItem,
  deleteItem,
} as const satisfies Record<PlatformCall, (ctx: AgentServerContext, ...args: never[]) => Promise<unknown>>;

export type Operation<K extends PlatformCall> = (typeof AGENT_OPERATIONS)[K];
export type OperationArgs<K extends PlatformCall> = Parameters<Operation<K>> extends [AgentServerContext, ...infer Rest] ? Rest : never;
/** An event of a run's stream, as the platform's `streamRun` call sends it. */
export type RunStreamEvent = ReturnType<typeof streamRun> extends AsyncIterable<infer E> ? E : never;

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
  const run = AGENT_OPERATIONS[op as PlatformCall];
  if (PLATFORM_CALL_ACCESS[op as PlatformCall] === 'write' && callerAccess !== 'write') throw AppError.forbidden('This API key may only read this deployment.');
  write.json({ result: (await (run as (ctx: AgentServerContext, ...args: unknown[]) => Promise<unknown>)(ctx, ...args)) ?? null });
}
