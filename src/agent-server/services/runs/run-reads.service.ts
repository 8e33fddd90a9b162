// Reading runs: one run, a thread's runs, the newest runs of many threads, the deployment a run
// belongs to, and the checks every run operation makes first (the run's thread exists here and, under
// custom auth, the caller's handler lets them see it).
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';
import { parseInput } from '../../../validate.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { type AuthFilter, type AuthorizedContext, authorize, matchesFilter } from '../custom-auth/custom-auth.js';
import { threadNotFound } from '../threads/threads.service.js';
import { selectThreadMetadata } from '../threads/threads.store.js';
import { openJson, openJsonKeys } from '../encryption/at-rest.js';
import { RUN_KWARGS, RUN_KWARGS_SEALED, RunListQuery } from './runs.schemas.js';
import * as store from './runs.store.js';
import type { RunRow } from './runs.store.js';
import type { Run } from '../../../contracts/agent-server-api.js';

/** A run row as the API returns it (its JSON opened, when encrypted at rest). */
export const toRun = async (ctx: Pick<AgentServerContext, 'config'>, row: RunRow): Promise<Run> => ({
  runId: row.id,
  threadId: row.thread_id,
  assistantId: row.assistant_id,
  status: row.status,
  metadata: await openJson(ctx.config, { model: 'run', field: 'metadata' }, row.metadata ?? {}),
  kwargs: await openJsonKeys(ctx.config, RUN_KWARGS, row.kwargs, RUN_KWARGS_SEALED),
  multitaskStrategy: row.multitask_strategy,
  output: await openJson(ctx.config, { model: 'run', field: 'output' }, row.output),
  attempt: row.attempt,
  // Recorded with the cancellation; a run that ended otherwise before it took effect was not cancelled.
  cancelReason: row.status === 'interrupted' ? row.cancel_reason : null,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export const RUN_NOT_FOUND = 'Run not found';

/** A run of this deployment by id (undefined for an unknown or malformed id). */
export async function findRunRow(ctx: AgentServerContext, runId: string): Promise<RunRow | undefined> {
  if (!isUuid(runId)) return undefined;
  return store.selectRun(ctx.db, runId, ctx.deployment.deploymentId);
}

/**
 * NOT_FOUND unless the deployment has the thread and (under custom auth) the caller's handler of
 * `threads:<action>` lets them see it; FORBIDDEN when the handler refuses.
 */
export async function assertThread(ctx: AuthorizedContext, threadId: string, action?: 'read' | 'search'): Promise<void> {
  if (!isUuid(threadId)) throw AppError.notFound(threadNotFound(threadId));
  const filter = action ? await authorize(ctx, 'threads', action, { thread_id: threadId }) : undefined;
  const metadata = await openJson(ctx.config, { model: 'thread', field: 'metadata' }, await selectThreadMetadata(ctx.db, threadId, ctx.deployment.deploymentId));
  if (!metadata || !matchesFilter(metadata, filter)) throw AppError.notFound(threadNotFound(threadId));
}

/** Whether the caller's filter lets them see these runs: judged by each run's thread (see selectRunsOwnerMetadata). */
export async function visibleRunIds(ctx: AuthorizedContext, runIds: string[], filter: AuthFilter | undefined): Promise<string[]> {
  if (!filter || !runIds.length) return runIds;
  const owners = await store.selectRunsOwnerMetadata(ctx.db, runIds);
  const visible: string[] = [];
  for (const runId of runIds) if (matchesFilter(await openJson(ctx.config, { model: 'thread', field: 'metadata' }, owners.get(runId)), filter)) visible.push(runId);
  return visible;
}

/**
 * One run; `threadId` null for stateless runs. NOT_FOUND unless it exists in this deployment (on that
 * thread) and, under custom auth, its thread passes the caller's filter for `threads:<action>`.
 */
export async function getRun(ctx: AuthorizedContext, threadId: string | null, runId: string, action: 'read' | 'update' | 'delete' = 'read'): Promise<Run> {
  const filter = ctx.auth ? await authorize(ctx, 'threads', action, { thread_id: threadId, run_id: runId }) : undefined;
  const row = await findRunRow(ctx, runId);
  if (!row || (threadId !== null && row.thread_id !== threadId.toLowerCase())) throw AppError.notFound(RUN_NOT_FOUND);
  // A read names the thread the filter hides, a change the run, in the reference server's words.
  if (filter && !(await visibleRunIds(ctx, [row.id], filter)).length) throw AppError.notFound(threadId && action === 'read' ? threadNotFound(threadId) : RUN_NOT_FOUND);
  return await toRun(ctx, row);
}

/** A thread's runs, newest first, optionally by status. */
export async function listRuns(ctx: AuthorizedContext, threadId: string, input: unknown): Promise<Run[]> {
  const query = parseInput(RunListQuery, input, 'query');
  await assertThread(ctx, threadId, 'search');
  return Promise.all((await store.selectThreadRuns(ctx.db, threadId, query)).map((row) => toRun(ctx, row)));
}

/**
 * The newest runs of each of the deployment's threads, a list per thread in the order given, in one
 * statement (a GraphQL dataloader's batch); threads of other deployments get none.
 */
export async function listRunsOfThreads(ctx: AgentServerContext, threadIds: readonly string[], input: unknown): Promise<Run[][]> {
  const query = parseInput(RunListQuery.pick({ limit: true }), input, 'query');
  const rows = await store.selectRunsOfThreads(ctx.db, ctx.deployment.deploymentId, threadIds.filter(isUuid), query.limit);
  return Promise.all(threadIds.map((threadId) => Promise.all(rows.filter((row) => row.thread_id === threadId.toLowerCase()).map((row) => toRun(ctx, row)))));
}
