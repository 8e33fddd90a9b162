// Revisions: one build and deploy of a deployment's source. Their status is the pipeline's state
// (revision-pipeline.ts); every move is published on the event bus (`revisions.status`, keyed by
// deployment id) so GraphQL subscriptions and `deploy --wait` follow it without polling.
import { AppError } from '../../../errors.js';
import { isUuid, newId } from '../../../ids.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { parseInput } from '../../../validate.js';
import { FINISHED_REVISION_STATUSES, PageQuery, type RevisionLogsQueryInput, RevisionLogsQuery, type RevisionStatus } from './deployments.schemas.js';
import { findOwnDeployment } from './deployment-access.js';
import * as store from './revisions.store.js';

export type { RevisionLogRow, RevisionRow } from './revisions.store.js';

/** The pipeline's job queues (declared in agent-server/jobs/boss.ts); payload `{ revisionId }`. */
export const REVISION_BUILD_QUEUE = 'revisions.build';
export const REVISION_DEPLOY_QUEUE = 'revisions.deploy';

/** Statuses a revision can still be SKIPPED or INTERRUPTED from: it has not started deploying. */
const NOT_YET_DEPLOYING: readonly RevisionStatus[] = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY'];
/** Statuses in which the pipeline still works on a revision. */
export const UNFINISHED: readonly RevisionStatus[] = [...NOT_YET_DEPLOYING, 'DEPLOYING'];

/** Moves a revision (see store.moveRevision) and publishes the move; returns whether it moved. */
export async function moveRevision(deps: Deps, revisionId: string, status: RevisionStatus, from?: readonly RevisionStatus[]): Promise<boolean> {
  const moved = await store.moveRevision(deps.db, revisionId, status, from);
  if (moved) await deps.events.publish('revisions.status', { deploymentId: moved.deployment_id, revisionId, status }, moved.deployment_id);
  return moved !== undefined;
}

/** Moves the deployment's revisions in `from` to `status` and publishes each move. */
export async function moveRevisionsOf(
  deps: Deps,
  deploymentId: string,
  status: RevisionStatus,
  from: readonly RevisionStatus[],
  options: { except?: string; olderThan?: string } = {},
): Promise<string[]> {
  const moved = await store.moveRevisionsOf(deps.db, deploymentId, status, from, options);
  for (const revisionId of moved) await deps.events.publish('revisions.status', { deploymentId, revisionId, status }, deploymentId);
  return moved;
}

/** Appends a line to a revision's build or deploy log. Never throws: a log line is not worth a failed build. */
export async function logRevision(deps: Deps, revisionId: string, type: 'build' | 'deploy', message: string): Promise<void> {
  // PostgreSQL stores no NUL character: a line holding one (git's output can) would be lost whole, reason and all.
  await store.appendRevisionLog(deps.db, revisionId, type, message.replaceAll('\u0000', '').slice(0, 16_384)).catch((error: unknown) => deps.logger.warn({ err: error }, 'could not store a revision log line'));
}

/**
 * Queues a revision for the pipeline: supersedes the deployment's older revisions that have not
 * started deploying (SKIPPED), moves this one CREATING → QUEUED and sends its build job.
 */
export async function queueRevision(deps: Deps, deploymentId: string, revisionId: string): Promise<void> {
  if (!deps.boss) throw new Error('Queuing a revision needs the process job queue (Deps.boss)');
  await moveRevisionsOf(deps, deploymentId, 'SKIPPED', NOT_YET_DEPLOYING, { olderThan: revisionId });
  await moveRevision(deps, revisionId, 'QUEUED', ['CREATING']);
  await deps.boss.send(REVISION_BUILD_QUEUE, { revisionId }, { singletonKey: revisionId });
  await deps.events.publish('revisions.queued', { revisionId });
}

/** The deployment's revisions, latest first, with the next page's offset. */
export async function listRevisions(ctx: ServiceContext, deploymentId: string, query: unknown): Promise<{ resources: store.RevisionRow[]; offset: number }> {
  const page = parseInput(PageQuery, query, 'query');
  const deployment = await findOwnDeployment(ctx, deploymentId, 'workspaces:read');
  const resources = await store.listRevisions(ctx.db, deployment.id, page);
  return { resources, offset: page.offset + resources.length };
}

export async function getRevision(ctx: ServiceContext, deploymentId: string, revisionId: string): Promise<store.RevisionRow> {
  const deployment = await findOwnDeployment(ctx, deploymentId, 'workspaces:read');
  return findOwnRevision(ctx, deployment.id, revisionId);
}

/** A page of a revision's build or deploy log, oldest line first. */
export async function revisionLogs(
  ctx: ServiceContext,
  deploymentId: string,
  revisionId: string,
  query: RevisionLogsQueryInput | unknown,
): Promise<{ resources: store.RevisionLogRow[]; offset: number }> {
  const page = parseInput(RevisionLogsQuery, query, 'query');
  const deployment = await findOwnDeployment(ctx, deploymentId, 'workspaces:read');
  const revision = await findOwnRevision(ctx, deployment.id, revisionId);
  const resources = await store.listRevisionLogs(ctx.db, revision.id, page);
  return { resources, offset: page.offset + resources.length };
}

/** Deploys an earlier revision again, as a new revision of the same source; returns the deployment id. */
export async function redeployRevision(ctx: ServiceContext, deploymentId: string, revisionId: string): Promise<string> {
  const deployment = await findOwnDeployment(ctx, deploymentId, 'workspaces:write');
  const revision = await findOwnRevision(ctx, deployment.id, revisionId);
  await createRevision(ctx, deployment, revision.source_revision_config);
  return deployment.id;
}

async function findOwnRevision(ctx: ServiceContext, deploymentId: string, revisionId: string): Promise<store.RevisionRow> {
  const revision = isUuid(revisionId) ? await store.findRevision(ctx.db, revisionId.toLowerCase(), deploymentId) : undefined;
  if (!revision) throw AppError.notFound(`Revision ID ${revisionId} not found.`);
  return revision;
}

export type RevisionStatusEvent = { deploymentId: string; revisionId: string; status: string };

/**
 * The deployment's revision status changes, live (GraphQL `deploymentEvents`), until `signal` aborts
 * or the client leaves. NOT_FOUND for a deployment the viewer may not read.
 */
export async function* watchDeploymentEvents(ctx: ServiceContext, deploymentId: string, signal?: AbortSignal): AsyncGenerator<RevisionStatusEvent> {
  const deployment = await findOwnDeployment(ctx, deploymentId, 'workspaces:read');
  yield* ctx.events.subscribe('revisions.status', { key: deployment.id, signal });
}

/**
 * One revision's status: now, then every change in order, ending once it is finished (DEPLOYED or a
 * failure), so a pipeline waits for DEPLOYED without polling. NOT_FOUND for another workspace's.
 */
export async function* watchRevisionStatus(ctx: ServiceContext, revisionId: string, signal?: AbortSignal): AsyncGenerator<RevisionStatusEvent> {
  const found = isUuid(revisionId) ? await store.findRevision(ctx.db, revisionId.toLowerCase()) : undefined;
  if (!found) throw AppError.notFound(`Revision ID ${revisionId} not found.`);
  const deployment = await findOwnDeployment(ctx, found.deployment_id, 'workspaces:read').catch(() => {
    throw AppError.notFound(`Revision ID ${revisionId} not found.`);
  });
  // Subscribe before the read, so no move between the read and the subscription is missed.
  const changes = ctx.events.subscribe('revisions.status', { key: deployment.id, signal });
  try {
    const current = (await store.findRevision(ctx.db, found.id))!;
    yield { deploymentId: deployment.id, revisionId: found.id, status: current.status };
    if (FINISHED_REVISION_STATUSES.includes(current.status)) return;
    let last: string = current.status;
    for await (const event of changes) {
      // A move published before the read above can arrive after it: a revision only moves forward.
      if (event.revisionId !== found.id || pipelineRank(event.status) <= pipelineRank(last)) continue;
      last = event.status;
      yield event;
      if (FINISHED_REVISION_STATUSES.includes(event.status as RevisionStatus)) return;
    }
  } finally {
    await changes.return(undefined);
  }
}

/** How far along the pipeline a status is: the normal path in order, every finished status last. */
const PIPELINE = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING'];
const pipelineRank = (status: string) => (PIPELINE.includes(status) ? PIPELINE.indexOf(status) : PIPELINE.length);

/** Makes a new revision of `deployment` from `sourceRevisionConfig` and queues it (redeploy). */
export async function createRevision(ctx: ServiceContext, deployment: Pick<store.ControlDeploymentRow, 'id'>, sourceRevisionConfig: Record<string, unknown>): Promise<string> {
  const revisionId = newId();
  await store.updateDeploymentWithRevision(ctx.db, deployment.id, { sourceRevisionConfig, revisionId });
  await ctx.events.publish('revisions.status', { deploymentId: deployment.id, revisionId, status: 'CREATING' }, deployment.id);
  await queueRevision(ctx, deployment.id, revisionId);
  return revisionId;
}
