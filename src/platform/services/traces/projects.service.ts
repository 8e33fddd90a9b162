// Tracing projects ("sessions" on the langsmith wire): runs belong to one; names are unique per workspace.
import type pg from 'pg';
import { withTransaction } from '../../../db.js';
import { AppError, isUniqueViolation } from '../../../errors.js';
import type { Prisma, TracingProject } from '../../../generated/prisma/client.js';
import { isUuid, newId } from '../../../ids.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { assertCan } from '../../../viewer.js';
import { parseInput } from '../../../validate.js';
import {
  ProjectCreate,
  type ProjectCreateInput,
  ProjectList,
  type ProjectListInput,
  ProjectUpdate,
  type ProjectUpdateInput,
} from './traces.schemas.js';
import { findDataset } from './datasets.store.js';
import { type RecentTraceStats, selectRecentTraceStats } from './trace-runs.store.js';
import { traceWorkspace } from './workspace.js';

export type { RecentTraceStats };

/** Runs sent with neither session_id nor session_name land here, as with the langsmith SDK's default. */
export const DEFAULT_PROJECT_NAME = 'default';

export type ProjectStats = { runCount: number; lastRunStartTime: Date | null };


/**
 * Creates a tracing project in the viewer's trace workspace (an experiment when it names a dataset,
 * which must be the workspace's: NOT_FOUND otherwise). Needs workspaces:write. Throws CONFLICT when
 * the name is taken, unless `upsert`, which returns the existing project with the given fields applied.
 */
export async function createProject(ctx: ServiceContext, input: ProjectCreateInput): Promise<TracingProject> {
  const data = parseInput(ProjectCreate, input);
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  // An experiment names a dataset of its own workspace.
  if (data.referenceDatasetId && !(await findDataset(ctx.db.pool, workspaceId, { id: data.referenceDatasetId }))) {
    throw AppError.notFound(`Dataset ${data.referenceDatasetId} not found.`);
  }
  const fields = {
    ...(data.description !== undefined ? { description: data.description } : {}),
    ...(data.extra !== undefined ? { extra: (data.extra ?? undefined) as Prisma.InputJsonValue | undefined } : {}),
    ...(data.referenceDatasetId !== undefined ? { referenceDatasetId: data.referenceDatasetId } : {}),
    ...(data.endTime !== undefined ? { endTime: data.endTime } : {}),
  };
  const existing = await ctx.db.prisma.tracingProject.findUnique({ where: { workspaceId_name: { workspaceId, name: data.name } } });
  if (existing) {
    if (!data.upsert) throw AppError.conflict(`A project named "${data.name}" already exists.`);
    return Object.keys(fields).length ? ctx.db.prisma.tracingProject.update({ where: { id: existing.id }, data: fields }) : existing;
  }
  try {
    return await ctx.db.prisma.tracingProject.create({
      data: { id: newId(), workspaceId, name: data.name, ...fields, ...(data.startTime ? { startTime: data.startTime } : {}) },
    });
  } catch (error) {
    // A concurrent create (often ingest creating it from a run's session_name) won the race.
    if (!isUniqueViolation(error)) throw error;
    const winner = await ctx.db.prisma.tracingProject.findUniqueOrThrow({ where: { workspaceId_name: { workspaceId, name: data.name } } });
    if (!data.upsert) throw AppError.conflict(`A project named "${data.name}" already exists.`);
    return winner;
  }
}

/**
 * The project of this name in the trace workspace (or `options.workspaceId` for the system viewer),
 * created when missing. The agent server calls this for its deployment's project. Idempotent and
 * safe under concurrency. Needs workspaces:write.
 */
export async function ensureProject(ctx: ServiceContext, name: string, options: { workspaceId?: string } = {}): Promise<TracingProject> {
  let workspaceId: string;
  if (ctx.viewer.kind === 'system') {
    if (!options.workspaceId) throw AppError.badRequest('workspaceId is required.');
    workspaceId = options.workspaceId;
  } else {
    workspaceId = options.workspaceId ?? (await traceWorkspace(ctx, 'workspaces:write'));
    assertCan(ctx.viewer, 'workspaces:write', workspaceId);
  }
  const trimmed = parseInput(ProjectCreate.shape.name, name, 'name');
  const ids = await resolveProjectIds(ctx.db.pool, workspaceId, { ids: [], names: [trimmed] });
  return ctx.db.prisma.tracingProject.findUniqueOrThrow({ where: { id: ids.byName.get(trimmed)! } });
}

/** Projects of the trace workspace, by name, id or dataset (experiments) filters, oldest first. Needs workspaces:read. */
export async function listProjects(
  ctx: ServiceContext,
  input: ProjectListInput = {},
  selection: Prisma.TracingProjectFindManyArgs = {},
): Promise<TracingProject[]> {
  const query = parseInput(ProjectList, input, 'query');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  return ctx.db.prisma.tracingProject.findMany({
    ...selection,
    where: {
      workspaceId,
      ...(query.ids ? { id: { in: query.ids } } : {}),
      ...(query.name !== undefined ? { name: query.name } : {}),
      ...(query.nameContains ? { name: { contains: query.nameContains, mode: 'insensitive' as const } } : {}),
      ...(query.referenceDataset ? { referenceDatasetId: query.referenceDataset } : {}),
      ...(query.referenceFree !== undefined ? { referenceDatasetId: query.referenceFree ? null : { not: null } } : {}),
    },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    take: query.limit,
    skip: query.offset,
  });
}

/**
 * Each dataset's experiments (the projects that name it), oldest first, in the order given, in one
 * read (a GraphQL dataloader's batch). Datasets outside the viewer's trace workspace have none. Needs
 * workspaces:read.
 */
export async function listExperimentsOfDatasets(ctx: ServiceContext, datasets: readonly { id: string; workspaceId: string }[]): Promise<TracingProject[][]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const own = [...new Set(datasets.filter((dataset) => dataset.workspaceId === workspaceId).map((dataset) => dataset.id))];
  const found = own.length
    ? await ctx.db.prisma.tracingProject.findMany({ where: { workspaceId, referenceDatasetId: { in: own } }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] })
    : [];
  return datasets.map((dataset) => found.filter((project) => project.referenceDatasetId === dataset.id));
}

/**
 * One project of the viewer's trace workspace; NOT_FOUND otherwise (never another tenant's row).
 * `selection` folds relations (a GraphQL field's Prisma query) into the same read.
 */
export async function getProject(ctx: ServiceContext, id: string, selection: Prisma.TracingProjectFindManyArgs = {}): Promise<TracingProject> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const project = isUuid(id) ? await ctx.db.prisma.tracingProject.findFirst({ ...selection, where: { id, workspaceId } }) : null;
  if (!project) throw AppError.notFound(`Project ${id} not found.`);
  return project;
}

/**
 * Projects by ID, in the order asked, for GraphQL fields that load one per parent (a dataloader
 * batches them into one read): null where the ID is not a project of the viewer's trace workspace.
 */
export async function getProjects(ctx: ServiceContext, ids: readonly string[]): Promise<(TracingProject | null)[]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const found = await ctx.db.prisma.tracingProject.findMany({ where: { id: { in: ids.filter(isUuid) }, workspaceId } });
  const byId = new Map(found.map((project) => [project.id, project]));
  return ids.map((id) => byId.get(id) ?? null);
}

/** Run statistics of projects, in the order given, in one query per workspace (a GraphQL dataloader's batch). */
export async function projectStatsOf(deps: Deps, projects: readonly Pick<TracingProject, 'id' | 'workspaceId'>[]): Promise<ProjectStats[]> {
  const stats = new Map<string, ProjectStats>();
  for (const workspaceId of new Set(projects.map((project) => project.workspaceId))) {
    const ids = projects.filter((project) => project.workspaceId === workspaceId).map((project) => project.id);
    for (const [id, stat] of await projectStats(deps, workspaceId, ids)) stats.set(id, stat);
  }
  return projects.map((project) => stats.get(project.id)!);
}

/** Run count and latest run start of projects, in one query. */
export async function projectStats(deps: Deps, workspaceId: string, ids: string[]): Promise<Map<string, ProjectStats>> {
  const { rows } = await deps.db.pool.query<{ session_id: string; run_count: string; last_run_start_time: Date | null }>(
    `SELECT session_id, count(*) AS run_count, max(start_time) AS last_run_start_time
       FROM trace_runs WHERE tenant_id = $1 AND session_id = ANY($2::uuid[]) GROUP BY session_id`,
    [workspaceId, ids],
  );
  const stats = new Map(ids.map((id) => [id, { runCount: 0, lastRunStartTime: null } as ProjectStats]));
  for (const row of rows) stats.set(row.session_id, { runCount: Number(row.run_count), lastRunStartTime: row.last_run_start_time });
  return stats;
}

/** How many of a project's newest traces its error rate and latency are computed over. */
export const RECENT_TRACES_SAMPLE = 1_000;

/**
 * Error count and latency percentiles of each project's newest traces (root runs, at most
 * RECENT_TRACES_SAMPLE), in the order given, one query per workspace (a GraphQL dataloader's batch).
 */
export async function recentTraceStatsOf(deps: Deps, projects: readonly Pick<TracingProject, 'id' | 'workspaceId'>[]): Promise<RecentTraceStats[]> {
  const stats = new Map<string, RecentTraceStats>();
  for (const workspaceId of new Set(projects.map((project) => project.workspaceId))) {
    const ids = projects.filter((project) => project.workspaceId === workspaceId).map((project) => project.id);
    for (const [id, stat] of await selectRecentTraceStats(deps.db.pool, workspaceId, ids, RECENT_TRACES_SAMPLE)) stats.set(id, stat);
  }
  return projects.map((project) => stats.get(project.id) ?? { traces: 0, errors: 0, latencyP50: null, latencyP99: null });
}

/** Renames a project or changes its description, extra or end time. Needs workspaces:write; CONFLICT on a taken name. */
export async function updateProject(ctx: ServiceContext, id: string, input: ProjectUpdateInput): Promise<TracingProject> {
  const data = parseInput(ProjectUpdate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  const project = isUuid(id) ? await ctx.db.prisma.tracingProject.findFirst({ where: { id, workspaceId } }) : null;
  if (!project) throw AppError.notFound(`Project ${id} not found.`);
  // PATCH with null means "leave as is": the SDK's updateProject sends every field, nulls included.
  const fields = {
    ...(data.name ? { name: data.name } : {}),
    ...(data.description != null ? { description: data.description } : {}),
    ...(data.extra != null ? { extra: data.extra as Prisma.InputJsonValue } : {}),
    ...(data.endTime != null ? { endTime: data.endTime } : {}),
  };
  forget(workspaceId, project);
  try {
    return await ctx.db.prisma.tracingProject.update({ where: { id: project.id }, data: fields });
  } catch (error) {
    if (isUniqueViolation(error)) throw AppError.conflict(`A project named "${data.name}" already exists.`);
    throw error;
  }
}

/** Deletes a project and all its runs, with their feedback. Needs workspaces:write; NOT_FOUND for another tenant's project. */
export async function deleteProject(ctx: ServiceContext, id: string): Promise<void> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  const project = isUuid(id) ? await ctx.db.prisma.tracingProject.findFirst({ where: { id, workspaceId } }) : null;
  if (!project) throw AppError.notFound(`Project ${id} not found.`);
  forget(workspaceId, project);
  await withTransaction(ctx.db, async (client) => {
    await client.query('DELETE FROM trace_runs WHERE tenant_id = $1 AND session_id = $2', [workspaceId, id]);
    await client.query('DELETE FROM feedback WHERE tenant_id = $1 AND session_id = $2', [workspaceId, id]);
    await client.query('DELETE FROM tracing_projects WHERE id = $1', [id]);
  });
}

/**
 * Project ids for the session ids and names runs carry, creating projects for unknown names (the
 * ingest path: one round trip when they all exist). Throws NOT_FOUND for a session id that is not a
 * project of this workspace.
 */
export async function resolveProjectIds(
  db: pg.Pool | pg.PoolClient,
  workspaceId: string,
  refs: { ids: string[]; names: string[] },
): Promise<{ byName: Map<string, string>; ids: Set<string> }> {
  const byName = new Map<string, string>();
  const ids = new Set<string>();
  const now = Date.now();
  const wantedIds = refs.ids.filter((id) => !((projectCache.get(cacheKey(workspaceId, `id:${id}`))?.expires ?? 0) > now));
  for (const id of refs.ids) if (!wantedIds.includes(id)) ids.add(id);
  const wantedNames = refs.names.filter((name) => {
    const hit = projectCache.get(cacheKey(workspaceId, name));
    if (hit && hit.expires > now) {
      byName.set(name, hit.id);
      return false;
    }
    return true;
  });
  if (!wantedIds.length && !wantedNames.length) return { byName, ids };
  const { rows } = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM tracing_projects WHERE workspace_id = $1 AND (id = ANY($2::uuid[]) OR name = ANY($3::text[]))',
    [workspaceId, wantedIds, wantedNames],
  );
  for (const row of rows) {
    byName.set(row.name, row.id);
    ids.add(row.id);
    remember(workspaceId, row);
  }
  const unknownId = refs.ids.find((id) => !ids.has(id));
  if (unknownId) throw AppError.notFound(`Project ${unknownId} not found.`);
  const missing = refs.names.filter((name) => !byName.has(name));
  if (missing.length) {
    const values = missing.map((_, i) => `($${i * 2 + 2}::uuid, $1::uuid, $${i * 2 + 3}, now())`).join(', ');
    await db.query(
      `INSERT INTO tracing_projects (id, workspace_id, name, updated_at) VALUES ${values} ON CONFLICT (workspace_id, name) DO NOTHING`,
      [workspaceId, ...missing.flatMap((name) => [newId(), name])],
    );
    const created = await db.query<{ id: string; name: string }>(
      'SELECT id, name FROM tracing_projects WHERE workspace_id = $1 AND name = ANY($2::text[])',
      [workspaceId, missing],
    );
    for (const row of created.rows) {
      byName.set(row.name, row.id);
      ids.add(row.id);
      remember(workspaceId, row);
    }
  }
  return { byName, ids };
}

// Ingest resolves a project per request; remembering recent answers saves a query on the hot path.
// Entries live briefly: a project deleted or renamed in another process is seen within the TTL
// (this process forgets at once).
const PROJECT_CACHE_TTL_MS = 30_000;
const PROJECT_CACHE_MAX = 10_000;
const projectCache = new Map<string, { id: string; expires: number }>();
const cacheKey = (workspaceId: string, key: string) => `${workspaceId}\n${key}`;

function remember(workspaceId: string, project: { id: string; name: string }) {
  if (projectCache.size >= PROJECT_CACHE_MAX) projectCache.clear();
  const entry = { id: project.id, expires: Date.now() + PROJECT_CACHE_TTL_MS };
  projectCache.set(cacheKey(workspaceId, project.name), entry);
  projectCache.set(cacheKey(workspaceId, `id:${project.id}`), entry);
}

function forget(workspaceId: string, project: { id: string; name: string }) {
  projectCache.delete(cacheKey(workspaceId, project.name));
  projectCache.delete(cacheKey(workspaceId, `id:${project.id}`));
}
