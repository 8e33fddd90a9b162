// Usage: trace counts per time bucket and workspace, project, user or API key, read from hourly
// rollups that ingestion keeps current (it appends deltas in its own transaction; the usage-fold job
// folds them; reads add the deltas not folded yet, so answers are exact at any moment).
import { AppError } from '../../../errors.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { assertCan, can } from '../../../viewer.js';
import { parseInput } from '../../../validate.js';
import { type UsageDimension, UsageQuery, type UsageQueryInput } from './usage.schemas.js';
import {
  appendTraceDeltasSql,
  countWorkspaceTraces,
  foldTraceDeltas,
  NO_DIMENSION_ID,
  rebuildRollups,
  selectOrganizationWorkspaces,
  selectUsage,
  streamUsage,
  type UsageRow,
  type UsageSelection,
} from './usage.store.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The bucket size, as the spec's `stride` object. */
export type UsageStride = { days: number; hours: number };

/** The dimension values of a usage record: only the keys of its `groupBy` are set. */
export type UsageDimensions = {
  workspaceId?: string;
  workspaceName?: string | null;
  projectId?: string | null;
  projectName?: string | null;
  userId?: string | null;
  userEmail?: string | null;
  apiKeyShortKey?: string | null;
};

export type UsageRecord = { timeBucket: Date; timeBucketEnd: Date; dimensions: UsageDimensions; traces: number };

export type UsageReport = { stride: UsageStride; groupBy: UsageDimension; usage: UsageRecord[] };

export type UsageStream = { stride: UsageStride; groupBy: UsageDimension; pages: AsyncIterable<UsageRecord[]> };

// ───────────────────────────── ingestion ─────────────────────────────

/**
 * Records the traces one ingest statement stores, as part of that statement (the traces seam calls
 * this): a data-modifying CTE reading the statement's CTE `storedRuns` (see appendTraceDeltasSql), so
 * a trace is counted exactly when it is stored, without a round trip or a transaction of its own.
 */
export function recordStoredTracesSql(storedRuns: string): string {
  return appendTraceDeltasSql(storedRuns);
}

/** Folds the deltas appended by ingestion into the rollups (the usage-fold job). Returns how many it folded. */
export async function foldUsageDeltas(deps: Pick<Deps, 'db'>): Promise<{ folded: number }> {
  return { folded: await foldTraceDeltas(deps.db.pool) };
}

/**
 * Recomputes every rollup from the stored root runs (`agent-platform admin usage rebuild`), exactly
 * once per trace even while ingestion goes on. System only: throws FORBIDDEN for API keys.
 */
/**
 * Traces ingested into a workspace so far, for the agent_platform_traces_ingested_total of a local
 * deployment's agent server, which its platform process gives it (start.ts).
 */
export async function countIngestedTraces(deps: Pick<Deps, 'db'>, workspaceId: string): Promise<number> {
  return countWorkspaceTraces(deps.db.pool, workspaceId);
}

export async function rebuildUsageRollups(ctx: ServiceContext): Promise<{ traces: number; rollupRows: number }> {
  if (ctx.viewer.kind !== 'system') throw AppError.forbidden('Rebuilding usage rollups is an operator command.');
  return rebuildRollups(ctx.db.pool);
}

// ───────────────────────────── reads ─────────────────────────────

/**
 * Trace counts per bucket and `groupBy` value over [startTime, endTime) in the given workspaces, with
 * the spec's stride for the range; buckets without traces are left out.
 * Throws VALIDATION_FAILED for malformed input, BAD_REQUEST when endTime is not after startTime, and
 * FORBIDDEN without organization:read or for a workspace the viewer cannot read (including another
 * organization's). `organizationId` is needed only for system callers.
 */
export async function getGranularUsage(ctx: ServiceContext, input: UsageQueryInput, organizationId?: string): Promise<UsageReport> {
  const plan = await planUsage(ctx, input, organizationId);
  const rows = await selectUsage(ctx.db.pool, plan.selection);
  return { stride: plan.stride, groupBy: plan.selection.dimension, usage: rows.map((row) => toRecord(plan, row)) };
}

/**
 * The same records as getGranularUsage, as pages read through a database cursor, so an export of any
 * range streams in constant memory. Input and permissions are checked before it returns.
 */
export async function streamGranularUsage(ctx: ServiceContext, input: UsageQueryInput, organizationId?: string): Promise<UsageStream> {
  const plan = await planUsage(ctx, input, organizationId);
  async function* pages() {
    for await (const rows of streamUsage(ctx.db.pool, plan.selection)) yield rows.map((row) => toRecord(plan, row));
  }
  return { stride: plan.stride, groupBy: plan.selection.dimension, pages: pages() };
}

type UsagePlan = { stride: UsageStride; strideMs: number; selection: UsageSelection; workspaceNames: Map<string, string> };

/** The stride for a range, per the spec's table: hourly under a day, then 1, 7, 30 or 365 days. */
function strideFor(rangeMs: number): UsageStride {
  if (rangeMs < DAY_MS) return { days: 0, hours: 1 };
  if (rangeMs <= 31 * DAY_MS) return { days: 1, hours: 0 };
  if (rangeMs <= 93 * DAY_MS) return { days: 7, hours: 0 };
  if (rangeMs <= 366 * DAY_MS) return { days: 30, hours: 0 };
  return { days: 365, hours: 0 };
}

const floorTo = (date: Date, unitMs: number) => new Date(Math.floor(date.getTime() / unitMs) * unitMs);
const ceilTo = (date: Date, unitMs: number) => new Date(Math.ceil(date.getTime() / unitMs) * unitMs);

async function planUsage(ctx: ServiceContext, input: UsageQueryInput, explicitOrganization?: string): Promise<UsagePlan> {
  const query = parseInput(UsageQuery, input);
  if (query.endTime.getTime() <= query.startTime.getTime()) throw AppError.badRequest('end_time must be after start_time.');
  const viewer = ctx.viewer;
  if (viewer.kind === 'local') throw AppError.forbidden();
  const organizationId = viewer.kind === 'api-key' ? viewer.organizationId : explicitOrganization;
  if (!organizationId) throw AppError.badRequest('organizationId is required.');
  assertCan(viewer, 'organization:read');

  const workspaceIds = [...new Set(query.workspaceIds)];
  const found = new Map((await selectOrganizationWorkspaces(ctx.db.pool, organizationId, workspaceIds)).map((w) => [w.id, w.name]));
  const denied = workspaceIds.find((id) => !found.has(id) || !can(viewer, 'workspaces:read', id));
  // Another organization's workspace and a missing one answer alike: nothing tells them apart.
  if (denied) throw AppError.forbidden(`You do not have access to workspace ${denied}.`);

  const stride = strideFor(query.endTime.getTime() - query.startTime.getTime());
  const strideMs = stride.days * DAY_MS + stride.hours * HOUR_MS;
  const unitMs = stride.days ? DAY_MS : HOUR_MS;
  const origin = floorTo(query.startTime, unitMs);
  const dataStart = ctx.config.usageDataStart;
  const from = origin < dataStart ? dataStart : origin;
  const to = query.endTime;
  // Whole UTC days inside [from, to) come from the day grain; the ragged ends from hours.
  let dayFrom = from;
  let dayTo = from;
  if (stride.days && ceilTo(from, DAY_MS) < floorTo(to, DAY_MS)) {
    dayFrom = ceilTo(from, DAY_MS);
    dayTo = floorTo(to, DAY_MS);
  }
  return {
    stride,
    strideMs,
    workspaceNames: found,
    selection: { workspaceIds, dimension: query.groupBy, from, to, dayFrom, dayTo, origin, strideSeconds: strideMs / 1000 },
  };
}

function toRecord(plan: UsagePlan, row: UsageRow): UsageRecord {
  const id = row.dimensionId === NO_DIMENSION_ID ? null : row.dimensionId;
  const dimensions: UsageDimensions = (() => {
    switch (plan.selection.dimension) {
      case 'workspace':
        return { workspaceId: row.dimensionId, workspaceName: row.label ?? plan.workspaceNames.get(row.dimensionId) ?? null };
      case 'project':
        return { projectId: id, projectName: row.label };
      case 'user':
        return { userId: id, userEmail: row.label };
      case 'api_key':
        return { apiKeyShortKey: row.label };
    }
  })();
  return { timeBucket: row.timeBucket, timeBucketEnd: new Date(row.timeBucket.getTime() + plan.strideMs), dimensions, traces: row.traces };
}
