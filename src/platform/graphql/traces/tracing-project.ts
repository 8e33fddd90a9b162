import type { TracingProject } from '../../../generated/prisma/client.js';
import type { RecentTraceStats } from '../../services/traces/projects.service.js';
import { AppError } from '../../../errors.js';
import { getWorkspaces } from '../../services/tenancy/tenancy.service.js';
import { builder } from '../builder.js';
import { WorkspaceRef } from '../tenancy/workspace.js';
import {
  createProject,
  deleteProject,
  getProject,
  listProjects,
  projectStatsOf,
  RECENT_TRACES_SAMPLE,
  recentTraceStatsOf,
  updateProject,
} from '../../services/traces/projects.service.js';

const RecentTraceStatsRef = builder.objectRef<RecentTraceStats>('RecentTraceStats').implement({
  description: `Error rate and latency of a project's newest traces (root runs, at most ${RECENT_TRACES_SAMPLE.toLocaleString('en')}).`,
  fields: (t) => ({
    traces: t.exposeInt('traces', { description: 'How many traces the figures are computed over.' }),
    errors: t.exposeInt('errors', { description: 'How many of them ended in an error.' }),
    errorRate: t.float({
      nullable: true,
      description: 'errors / traces, from 0 to 1; null without traces.',
      resolve: (stats) => (stats.traces ? stats.errors / stats.traces : null),
    }),
    latencyP50: t.exposeFloat('latencyP50', { nullable: true, description: 'Median latency in seconds of those that ended.' }),
    latencyP99: t.exposeFloat('latencyP99', { nullable: true, description: '99th percentile latency in seconds of those that ended.' }),
  }),
});

export const TracingProjectRef = builder.prismaObject('TracingProject', {
  description: 'A tracing project (a “session” to the langsmith SDK): runs are recorded into one. Each deployment traces into the project of its name.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Project ID (UUID); the session_id of the ingestion API.' }),
    name: t.exposeString('name', { description: 'Name, unique in the workspace; the session_name of the ingestion API.' }),
    description: t.exposeString('description', { nullable: true, description: 'Free-text description.' }),
    extra: t.expose('extra', { type: 'JSON', nullable: true, description: 'Client-defined extra data (metadata lives in extra.metadata).' }),
    // Through a dataloader rather than a Prisma relation: projects also come from loaders (a run's
    // project), whose rows carry no Prisma selection, and the relation would read once per project.
    workspace: t.loadable({
      type: WorkspaceRef,
      description: 'The workspace (tenant) it belongs to.',
      load: async (ids: string[], ctx) => (await getWorkspaces(ctx, ids)).map((workspace, index) => workspace ?? AppError.notFound(`Workspace ${ids[index]} not found.`)),
      resolve: (project) => project.workspaceId,
    }),
    startTime: t.expose('startTime', { type: 'DateTime', description: 'When the project started.' }),
    endTime: t.expose('endTime', { type: 'DateTime', nullable: true, description: 'When the project was closed, if it was.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    // One statistics read per workspace for all the projects of a response (dataloader), not one per project.
    runCount: t.loadable({
      type: 'Int',
      description: 'Number of runs (spans) recorded in the project.',
      load: (projects: TracingProject[], ctx) => projectStatsOf(ctx, projects).then((stats) => stats.map((stat) => stat.runCount)),
      loaderOptions: { cacheKeyFn: (project) => project.id },
      resolve: (project) => project,
    }),
    lastRunStartTime: t.loadable({
      type: 'DateTime',
      nullable: true,
      description: 'Start of the most recent run.',
      load: (projects: TracingProject[], ctx) => projectStatsOf(ctx, projects).then((stats) => stats.map((stat) => stat.lastRunStartTime)),
      loaderOptions: { cacheKeyFn: (project) => project.id },
      resolve: (project) => project,
    }),
    // The newest traces only: a figure whose cost grows with the project would slow every project list.
    recentTraceStats: t.loadable({
      type: RecentTraceStatsRef,
      description: `Error rate and latency of its newest traces (at most ${RECENT_TRACES_SAMPLE.toLocaleString('en')}).`,
      load: (projects: TracingProject[], ctx) => recentTraceStatsOf(ctx, projects),
      loaderOptions: { cacheKeyFn: (project) => project.id },
      resolve: (project) => project,
    }),
  }),
});

builder.queryFields((t) => ({
  tracingProjects: t.prismaField({
    type: ['TracingProject'],
    description: 'Tracing projects of the workspace (X-Tenant-Id, the key’s workspace, or the organization’s default), oldest first.',
    args: {
      nameContains: t.arg.string({ description: 'Only projects whose name contains this (case-insensitive).' }),
      limit: t.arg.int({ description: 'At most this many (1–1000, default 100).' }),
      offset: t.arg.int({ description: 'Skip this many.' }),
    },
    resolve: (query, _root, args, ctx) =>
      listProjects(ctx, { nameContains: args.nameContains ?? undefined, limit: args.limit ?? undefined, offset: args.offset ?? undefined }, query),
  }),
  tracingProject: t.prismaField({
    type: 'TracingProject',
    description: 'One tracing project by ID.',
    args: { id: t.arg.id({ required: true, description: 'Project ID.' }) },
    resolve: (query, _root, args, ctx) => getProject(ctx, String(args.id), query),
  }),
}));

const CreateTracingProjectInput = builder.inputType('CreateTracingProjectInput', {
  description: 'A new tracing project.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'Name, unique in the workspace.' }),
    description: t.string({ description: 'Free-text description.' }),
    extra: t.field({ type: 'JSON', description: 'Client-defined extra data.' }),
    upsert: t.boolean({ description: 'Return the existing project of that name instead of failing.' }),
  }),
});

const UpdateTracingProjectInput = builder.inputType('UpdateTracingProjectInput', {
  description: 'Changes to a tracing project; omitted fields stay as they are.',
  fields: (t) => ({
    name: t.string({ description: 'New name, unique in the workspace.' }),
    description: t.string({ description: 'New description.' }),
    extra: t.field({ type: 'JSON', description: 'New extra data.' }),
    endTime: t.field({ type: 'DateTime', description: 'Close the project at this time.' }),
  }),
});

builder.mutationFields((t) => ({
  createTracingProject: t.prismaField({
    type: 'TracingProject',
    description: 'Creates a tracing project (needs workspaces:write).',
    errors: {},
    args: { input: t.arg({ type: CreateTracingProjectInput, required: true }) },
    resolve: (_query, _root, { input }, ctx) =>
      createProject(ctx, {
        name: input.name,
        description: input.description ?? undefined,
        extra: (input.extra ?? undefined) as Record<string, unknown> | undefined,
        upsert: input.upsert ?? false,
      }),
  }),
  updateTracingProject: t.prismaField({
    type: 'TracingProject',
    description: 'Renames or describes a tracing project (needs workspaces:write).',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Project ID.' }), input: t.arg({ type: UpdateTracingProjectInput, required: true }) },
    resolve: (_query, _root, { id, input }, ctx) =>
      updateProject(ctx, String(id), {
        name: input.name ?? undefined,
        description: input.description ?? undefined,
        extra: (input.extra ?? undefined) as Record<string, unknown> | undefined,
        endTime: input.endTime?.toISOString(),
      }),
  }),
  deleteTracingProject: t.field({
    type: 'Boolean',
    description: 'Deletes a tracing project and all its runs (needs workspaces:write).',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Project ID.' }) },
    resolve: async (_root, { id }, ctx) => {
      await deleteProject(ctx, String(id));
      return true;
    },
  }),
}));
