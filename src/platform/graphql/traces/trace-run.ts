import { AppError } from '../../../errors.js';
import { getProject, getProjects } from '../../services/traces/projects.service.js';
import { encodeCursor, getRun, listChildRunsOf, listTraceRuns, queryRuns, TRACE_RUNS_MAX, type TraceRunRow } from '../../services/traces/queries.service.js';
import { builder } from '../builder.js';
import { TracingProjectRef } from './tracing-project.js';

const date = (value: string | null) => (value === null ? null : new Date(value));

export const TraceRunRef = builder.objectRef<TraceRunRow>('TraceRun');

TraceRunRef.implement({
  description: 'One run (span) of a trace: a chain, LLM call, tool call… with its inputs, outputs, timing, tokens and cost.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Run ID (UUID).' }),
    name: t.exposeString('name', { description: 'Name of the traced step.' }),
    runType: t.exposeString('runType', { description: 'chain, llm, tool, retriever, embedding, prompt or parser.' }),
    status: t.exposeString('status', { description: 'success, error or pending (not ended yet).' }),
    startTime: t.field({ type: 'DateTime', description: 'When it started (UTC).', resolve: (run) => new Date(run.startTime) }),
    endTime: t.field({ type: 'DateTime', nullable: true, description: 'When it ended (UTC).', resolve: (run) => date(run.endTime) }),
    latency: t.float({
      nullable: true,
      description: 'Seconds from start to end.',
      resolve: (run) => (run.endTime ? (Date.parse(run.endTime) - Date.parse(run.startTime)) / 1000 : null),
    }),
    inputs: t.field({ type: 'JSON', nullable: true, description: 'Inputs.', resolve: (run) => run.inputs ?? null }),
    outputs: t.field({ type: 'JSON', nullable: true, description: 'Outputs.', resolve: (run) => run.outputs ?? null }),
    error: t.exposeString('error', { nullable: true, description: 'Error message, when it failed.' }),
    extra: t.field({ type: 'JSON', nullable: true, description: 'Extra data; metadata is extra.metadata.', resolve: (run) => run.extra ?? null }),
    events: t.field({ type: 'JSON', nullable: true, description: 'Events (streamed tokens, retries…).', resolve: (run) => run.events ?? null }),
    tags: t.exposeStringList('tags', { description: 'Tags.' }),
    feedbackStats: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Its feedback summed up per key: {key: {n, avg, stdev, errors, values}} (avg over numeric scores; values counts each value given); null without feedback.',
      resolve: (run) => run.feedbackStats ?? null,
    }),
    traceId: t.exposeID('traceId', { description: 'ID of the root run of its trace.' }),
    parentRunId: t.exposeID('parentRunId', { nullable: true, description: 'ID of the parent run; null for a root.' }),
    dottedOrder: t.exposeString('dottedOrder', { description: 'Hierarchical ordering key: start time and id of each ancestor.' }),
    isRoot: t.exposeBoolean('isRoot', { description: 'Whether it is the root of its trace.' }),
    projectId: t.exposeID('sessionId', { description: 'ID of its tracing project.' }),
    // Per-parent fields load through dataloaders: one read for all the runs of a response.
    project: t.loadable({
      type: TracingProjectRef,
      description: 'Its tracing project.',
      load: async (ids: string[], ctx) =>
        (await getProjects(ctx, ids)).map((project, index) => project ?? AppError.notFound(`Project ${ids[index]} not found.`)),
      resolve: (run) => run.sessionId,
    }),
    threadId: t.exposeString('threadId', { nullable: true, description: 'Conversation thread, from metadata thread_id/session_id/conversation_id.' }),
    totalTokens: t.exposeInt('totalTokens', { nullable: true, description: 'Tokens used (LLM runs).' }),
    promptTokens: t.exposeInt('promptTokens', { nullable: true, description: 'Prompt (input) tokens.' }),
    completionTokens: t.exposeInt('completionTokens', { nullable: true, description: 'Completion (output) tokens.' }),
    totalCost: t.exposeFloat('totalCost', { nullable: true, description: 'Total cost, when the client reported it.' }),
    promptCost: t.exposeFloat('promptCost', { nullable: true, description: 'Prompt cost.' }),
    completionCost: t.exposeFloat('completionCost', { nullable: true, description: 'Completion cost.' }),
    firstTokenTime: t.field({ type: 'DateTime', nullable: true, description: 'When the first streamed token arrived.', resolve: (run) => date(run.firstTokenTime) }),
    children: t.loadableList({
      type: TraceRunRef,
      description: 'Direct child runs, in execution order.',
      load: (parents: TraceRunRow[], ctx) => listChildRunsOf(ctx, parents),
      loaderOptions: { cacheKeyFn: (parent) => parent.id },
      resolve: (run) => run,
    }),
  }),
});

builder.queryFields((t) => ({
  traceRun: t.field({
    type: TraceRunRef,
    description: 'One run by ID.',
    args: { id: t.arg.id({ required: true, description: 'Run ID.' }) },
    resolve: (_root, args, ctx) => getRun(ctx, String(args.id)),
  }),
  traceRuns: t.field({
    type: [TraceRunRef],
    description: `Every run of one trace, in execution order (dotted order), at most ${TRACE_RUNS_MAX}: a whole tree in one read.`,
    args: {
      traceId: t.arg.id({ required: true, description: 'Trace ID (the ID of its root run).' }),
      limit: t.arg.int({ description: `At most this many (1–${TRACE_RUNS_MAX}, default ${TRACE_RUNS_MAX}).` }),
    },
    resolve: (_root, args, ctx) => listTraceRuns(ctx, String(args.traceId), args.limit ?? undefined),
  }),
  runs: t.connection({
    type: TraceRunRef,
    description: 'Runs of a tracing project, newest first, filtered with the run filter language, e.g. and(eq(run_type, "llm"), gt(latency, "2s")).',
    args: {
      projectId: t.arg.id({ required: true, description: 'Tracing project ID.' }),
      filter: t.arg.string({ description: 'Filter applied to each run.' }),
      traceFilter: t.arg.string({ description: 'Filter applied to the root run of each run’s trace.' }),
      treeFilter: t.arg.string({ description: 'Filter that any run of each run’s trace must match.' }),
      isRoot: t.arg.boolean({ description: 'Only root runs (traces), or only child runs.' }),
    },
    resolve: async (_root, args, ctx) => {
      if (args.last != null || args.before != null) throw AppError.badRequest('Runs page forwards only: use first and after.');
      const project = await getProject(ctx, String(args.projectId));
      const page = await queryRuns(ctx, {
        session: [project.id],
        filter: args.filter,
        traceFilter: args.traceFilter,
        treeFilter: args.treeFilter,
        isRoot: args.isRoot,
        limit: Math.min(Math.max(args.first ?? 20, 1), 1000),
        cursor: args.after,
      });
      const edges = page.runs.map((run) => ({ cursor: encodeCursor(run.startTime, run.id), node: run }));
      return {
        edges,
        pageInfo: {
          hasNextPage: page.nextCursor !== null,
          hasPreviousPage: Boolean(args.after),
          startCursor: edges[0]?.cursor ?? null,
          endCursor: edges[edges.length - 1]?.cursor ?? null,
        },
      };
    },
  }, { name: 'TraceRunConnection', description: 'A page of runs.' }, { name: 'TraceRunEdge', description: 'A run and its cursor.' }),
}));
