// Feedback on trace runs, as the langsmith SDK gives and reads it: create, read, update, delete and
// list, and presigned feedback tokens whose url records feedback of one key on one run without an API
// key. Feedback lives in the workspace of its run (another workspace's key finds none of it); each
// write recomputes the run's feedback_stats in its transaction.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { withTransaction } from '../../../db.js';
import { AppError } from '../../../errors.js';
import { isUuid, newId } from '../../../ids.js';
import type { z } from 'zod';
import type { Deps, ServiceContext } from '../../../context.js';
import type { FeedbackCreateBody, Ingester } from '../../../contracts/trace-wire.js';
import type { Feedback, Prisma } from '../../../generated/prisma/client.js';
import { parseInput } from '../../../validate.js';
import {
  deleteFeedbackRow,
  type FeedbackChange,
  type FeedbackRow,
  type FeedbackTarget,
  type FeedbackTokenRow,
  findFeedback,
  findFeedbackRecord,
  findFeedbackRecords,
  findFeedbackToken,
  insertFeedback,
  insertFeedbackToken,
  lockFeedbackTarget,
  refreshFeedbackStats,
  selectFeedback,
  selectFeedbackTokens,
  updateFeedbackRow,
} from './feedback.store.js';
import {
  FeedbackCreate,
  type FeedbackCreateInput,
  FeedbackList,
  type FeedbackListInput,
  FeedbackTokenCreate,
  type FeedbackTokenCreateInput,
  FeedbackUpdate,
  type FeedbackUpdateInput,
  FeedbackWithToken,
  type FeedbackWithTokenInput,
} from './traces.schemas.js';
import { traceWorkspace } from './workspace.js';

export type { FeedbackRow, FeedbackTokenRow } from './feedback.store.js';

const runNotFound = (runId: string) => AppError.notFound(`Run ${runId} not found.`);
const feedbackNotFound = (id: string) => AppError.notFound(`Feedback ${id} not found.`);

/** Who wrote feedback: the viewer's key and user, for an API key. */
const authorOf = (ctx: ServiceContext) =>
  ctx.viewer.kind === 'api-key' ? { apiKeyId: ctx.viewer.apiKeyId, userId: ctx.viewer.userId } : { apiKeyId: null, userId: null };

/**
 * Records feedback on a run of the viewer's trace workspace. Needs workspaces:write. Throws
 * VALIDATION_FAILED for bad input (a score that is no number or boolean, a key too long…), NOT_FOUND
 * for a run the workspace does not hold, CONFLICT for a feedback id already used in the workspace.
 */
export async function createFeedback(ctx: ServiceContext, input: FeedbackCreateInput): Promise<FeedbackRow> {
  const feedback = parseInput(FeedbackCreate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  return withTransaction(ctx.db, async (client) => {
    const target = await lockFeedbackTarget(client, workspaceId, feedback.runId);
    if (!target) throw runNotFound(feedback.runId);
    return storeFeedback(client, workspaceId, target, { ...feedbackFields(feedback), id: feedback.id ?? newId(), ...authorOf(ctx) });
  });
}

/**
 * Stores feedback batched with runs (the SDK's multipart `feedback.<id>` parts) for an ingester whose
 * workspaces:write was checked (ingest-as-viewer.ts); a deployment's trace key gives feedback only on
 * runs of its project. Ingestion does not fail for feedback: feedback on a run not stored, invalid, or
 * not the key's to give is left out and counted (`rejected`, with why); an id already stored is the
 * same feedback sent again.
 */
export async function ingestFeedback(deps: Pick<Deps, 'db'>, who: Ingester, bodies: FeedbackCreateBody[]): Promise<{ count: number; message: string } | undefined> {
  const problems: string[] = [];
  for (const [index, body] of bodies.entries()) {
    const parsed = FeedbackCreate.safeParse(snakeToCamel(body));
    if (!parsed.success) {
      problems.push(`feedback[${index}]: ${AppError.fromZod(parsed.error).message}`);
      continue;
    }
    const feedback = parsed.data;
    const id = feedback.id ?? newId();
    await withTransaction(deps.db, async (client) => {
      const target = await lockFeedbackTarget(client, who.workspaceId, feedback.runId);
      if (!target || (who.project !== undefined && target.projectName !== who.project)) {
        problems.push(`feedback ${id}: run ${feedback.runId} not found`);
        return;
      }
      // Writes of one run's feedback take turns (the lock), so a re-sent feedback finds itself here.
      const stored = await findFeedback(client, who.workspaceId, id);
      if (stored) {
        if (stored.runId !== target.id) problems.push(`feedback ${id}: the id is taken by feedback on another run`);
        return;
      }
      await storeFeedback(client, who.workspaceId, target, {
        ...feedbackFields(feedback),
        id,
        apiKeyId: who.apiKeyId ?? null,
        userId: who.userId ?? null,
      });
    }).catch((error: unknown) => {
      // Taken meanwhile by feedback on another run (whose lock this one did not wait for).
      if (error instanceof AppError && error.code === 'CONFLICT') problems.push(`feedback ${id}: the id is taken by feedback on another run`);
      else throw error;
    });
  }
  return problems.length ? { count: problems.length, message: problems.slice(0, 5).join('; ') } : undefined;
}

/** A snake_case wire body's top-level keys in camelCase, as the schemas read them. */
const snakeToCamel = (body: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(body).map(([key, value]) => [key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), value]));

/** The stored fields of a parsed create (its id, author and run aside). */
const feedbackFields = (feedback: z.output<typeof FeedbackCreate>) => ({
  key: feedback.key,
  score: feedback.score ?? null,
  value: feedback.value,
  comment: feedback.comment ?? null,
  correction: feedback.correction,
  feedbackSource: { type: feedback.feedbackSource?.type ?? 'api', metadata: feedback.feedbackSource?.metadata ?? {} },
  feedbackGroupId: feedback.feedbackGroupId ?? null,
  comparativeExperimentId: feedback.comparativeExperimentId ?? null,
});

async function storeFeedback(
  client: pg.PoolClient,
  workspaceId: string,
  target: FeedbackTarget,
  feedback: Omit<FeedbackRow, 'tenantId' | 'runId' | 'traceId' | 'sessionId' | 'createdAt' | 'modifiedAt'>,
): Promise<FeedbackRow> {
  const row = await insertFeedback(client, { ...feedback, tenantId: workspaceId, runId: target.id, traceId: target.traceId, sessionId: target.sessionId });
  if (!row) throw AppError.conflict(`Feedback ${feedback.id} already exists.`);
  await refreshFeedbackStats(client, workspaceId, target.id);
  return row;
}

/** One feedback of the viewer's trace workspace. Needs workspaces:read; NOT_FOUND otherwise. */
export async function getFeedback(ctx: ServiceContext, id: string): Promise<FeedbackRow> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const row = isUuid(id) ? await findFeedback(ctx.db.pool, workspaceId, id) : undefined;
  if (!row) throw feedbackNotFound(id);
  return row;
}

/**
 * One feedback of the viewer's trace workspace as a Prisma record (GraphQL: `selection` folds Pothos's
 * selection into the read). Needs workspaces:read; NOT_FOUND otherwise.
 */
export async function getFeedbackRecord(ctx: ServiceContext, id: string, selection: Prisma.FeedbackFindManyArgs = {}): Promise<Feedback> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const record = isUuid(id) ? await findFeedbackRecord(ctx.db, workspaceId, id, selection) : null;
  if (!record) throw feedbackNotFound(id);
  return record;
}

/**
 * Changes the fields given of a feedback (null clears one). Needs workspaces:write. Throws NOT_FOUND
 * for feedback the workspace does not hold, VALIDATION_FAILED for bad input.
 */
export async function updateFeedback(ctx: ServiceContext, id: string, input: FeedbackUpdateInput): Promise<FeedbackRow> {
  const change = parseInput(FeedbackUpdate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  return changeFeedback(ctx, workspaceId, id, async (client) => {
    const fields: FeedbackChange = { score: change.score, value: change.value, comment: change.comment, correction: change.correction };
    return updateFeedbackRow(client, workspaceId, id, fields);
  });
}

/** Deletes a feedback. Needs workspaces:write; NOT_FOUND for feedback the workspace does not hold. */
export async function deleteFeedback(ctx: ServiceContext, id: string): Promise<void> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  await changeFeedback(ctx, workspaceId, id, async (client) => ((await deleteFeedbackRow(client, workspaceId, id)) ? true : undefined));
}

/** A write of an existing feedback, its run locked first (as a create locks it) and its stats recomputed after. */
async function changeFeedback<T>(ctx: ServiceContext, workspaceId: string, id: string, write: (client: pg.PoolClient) => Promise<T | undefined>): Promise<T> {
  const existing = isUuid(id) ? await findFeedback(ctx.db.pool, workspaceId, id) : undefined;
  if (!existing) throw feedbackNotFound(id);
  return withTransaction(ctx.db, async (client) => {
    await lockFeedbackTarget(client, workspaceId, existing.runId);
    const result = await write(client);
    if (result === undefined) throw feedbackNotFound(id);
    await refreshFeedbackStats(client, workspaceId, existing.runId);
    return result;
  });
}

/**
 * Feedback of the viewer's trace workspace, newest first, filtered by runs, keys and source types
 * (api, model, app…), an offset page. Needs workspaces:read; VALIDATION_FAILED for bad input.
 */
export async function listFeedback(ctx: ServiceContext, input: FeedbackListInput): Promise<FeedbackRow[]> {
  const query = parseInput(FeedbackList, input, 'query');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  return selectFeedback(ctx.db.pool, workspaceId, {
    runIds: query.run ?? undefined,
    keys: query.key ?? undefined,
    sources: query.source ?? undefined,
    limit: query.limit,
    offset: query.offset,
  });
}

/** The most feedback a run shows through listFeedbackOfRuns. */
export const RUN_FEEDBACK_MAX = 100;

/**
 * Feedback of the viewer's trace workspace as Prisma records (GraphQL: `selection` folds Pothos's
 * selection into the read), newest first, by runs and keys. Needs workspaces:read.
 */
export async function listFeedbackRecords(
  ctx: ServiceContext,
  input: Omit<FeedbackListInput, 'source'>,
  selection: Prisma.FeedbackFindManyArgs = {},
): Promise<Feedback[]> {
  const query = parseInput(FeedbackList, input, 'args');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  return findFeedbackRecords(ctx.db, workspaceId, { runIds: query.run ?? undefined, keys: query.key ?? undefined, limit: query.limit, offset: query.offset }, selection);
}

/**
 * Each run's feedback, newest first (at most RUN_FEEDBACK_MAX each), in the order given, in one read
 * (a GraphQL dataloader's batch). Runs outside the viewer's trace workspace have none.
 */
export async function listFeedbackOfRuns(ctx: ServiceContext, runs: readonly { id: string; tenantId: string }[]): Promise<Feedback[][]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const own = [...new Set(runs.filter((run) => run.tenantId === workspaceId).map((run) => run.id))];
  const byRun = new Map<string, Feedback[]>(own.map((id) => [id, []]));
  if (own.length) {
    const records = await findFeedbackRecords(ctx.db, workspaceId, { runIds: own, limit: RUN_FEEDBACK_MAX * own.length, offset: 0 });
    for (const record of records) {
      const list = byRun.get(record.runId);
      if (list && list.length < RUN_FEEDBACK_MAX) list.push(record);
    }
  }
  return runs.map((run) => byRun.get(run.id) ?? []);
}

/**
 * Makes a presigned feedback token: its url (`baseUrl`/feedback/tokens/<id>) records feedback of
 * `feedbackKey` on the run, without an API key, until it expires (3 hours unless the input says).
 * The run need not be stored yet (an agent server asks for tokens as its run ends, before its trace
 * is sent); it must be when the url is used. Needs workspaces:write, or a deployment's trace key,
 * whose tokens take feedback only on runs of its own project. Throws VALIDATION_FAILED for bad input.
 */
export async function createFeedbackToken(ctx: ServiceContext, input: FeedbackTokenCreateInput, baseUrl: string): Promise<FeedbackTokenRow> {
  const token = parseInput(FeedbackTokenCreate, input, 'body');
  const { viewer } = ctx;
  const [workspaceId, traceProject] =
    viewer.kind === 'trace-writer' ? [viewer.workspaceId, viewer.project] : [await traceWorkspace(ctx, 'workspaces:write'), null];
  return storeToken(ctx.db.pool, { workspaceId, traceProject }, token, baseUrl);
}

/**
 * Presigned feedback urls (`{key: url}`, 3 hours each) for a run of a local deployment, which its host
 * (a platform process: no key involved) makes for the feedback event that ends the run's stream. As a
 * deployment's trace key's, they take feedback only on a run of `project`.
 */
export async function createDeploymentFeedbackUrls(
  deps: Pick<Deps, 'db'>,
  scope: { workspaceId: string; project: string },
  request: { runId: string; keys: string[]; baseUrl: string },
): Promise<Record<string, string>> {
  const tokens = await Promise.all(
    request.keys.map((feedbackKey) =>
      storeToken(deps.db.pool, { workspaceId: scope.workspaceId, traceProject: scope.project }, parseInput(FeedbackTokenCreate, { runId: request.runId, feedbackKey }), request.baseUrl),
    ),
  );
  return Object.fromEntries(tokens.map((token) => [token.feedbackKey, token.url]));
}

function storeToken(
  pool: pg.Pool,
  owner: { workspaceId: string; traceProject: string | null },
  token: { runId: string; feedbackKey: string; feedbackConfig?: Record<string, unknown> | null; expiresAt: Date },
  baseUrl: string,
): Promise<FeedbackTokenRow> {
  // A random UUID, not a time-ordered one: the id is the url's secret.
  const id = randomUUID();
  return insertFeedbackToken(pool, {
    id,
    tenantId: owner.workspaceId,
    runId: token.runId,
    feedbackKey: token.feedbackKey,
    feedbackConfig: token.feedbackConfig ?? null,
    traceProject: owner.traceProject,
    url: `${baseUrl}/feedback/tokens/${id}`,
    expiresAt: token.expiresAt,
  });
}

/** A run's feedback tokens, newest first, an offset page. Needs workspaces:read. */
export async function listFeedbackTokens(ctx: ServiceContext, runId: string, page: { limit?: number; offset?: number } = {}): Promise<FeedbackTokenRow[]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  if (!isUuid(runId)) throw new AppError('VALIDATION_FAILED', 'query.run_id: expected a UUID', [{ loc: ['query', 'run_id'], msg: 'expected a UUID', type: 'uuid_parsing' }]);
  const limit = Math.min(Math.max(Math.floor(page.limit ?? 100), 1), 100);
  return selectFeedbackTokens(ctx.db.pool, workspaceId, runId, limit, Math.max(Math.floor(page.offset ?? 0), 0));
}

/**
 * Records feedback through a presigned token (no viewer: the token is the credential), on the token's
 * run with the token's key. Throws NOT_FOUND for an unknown token or a run not stored (or, for a
 * deployment's token, not of its project), BAD_REQUEST for an expired token, VALIDATION_FAILED for bad input.
 */
export async function recordFeedbackWithToken(deps: Pick<Deps, 'db'>, tokenId: string, input: FeedbackWithTokenInput): Promise<FeedbackRow> {
  const token = isUuid(tokenId) ? await findFeedbackToken(deps.db.pool, tokenId) : undefined;
  if (!token) throw AppError.notFound('Feedback token not found.');
  if (token.expiresAt.getTime() <= Date.now()) throw AppError.badRequest(`This feedback token expired at ${token.expiresAt.toISOString()}.`);
  const feedback = parseInput(FeedbackWithToken, input, 'body');
  return withTransaction(deps.db, async (client) => {
    const target = await lockFeedbackTarget(client, token.tenantId, token.runId);
    if (!target || (token.traceProject !== null && target.projectName !== token.traceProject)) throw runNotFound(token.runId);
    return storeFeedback(client, token.tenantId, target, {
      id: newId(),
      key: token.feedbackKey,
      score: feedback.score ?? null,
      value: feedback.value,
      comment: feedback.comment ?? null,
      correction: feedback.correction,
      feedbackSource: { type: 'app', metadata: { ...(feedback.metadata ?? {}), feedback_token_id: token.id } },
      feedbackGroupId: null,
      comparativeExperimentId: null,
      apiKeyId: null,
      userId: null,
    });
  });
}
