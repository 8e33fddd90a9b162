// Feedback on trace runs: the Feedback type, a run's feedback (TraceRun.feedback) and the feedback
// query, and the mutations that give, change and delete feedback. Reads go through Prisma, with
// Pothos's selection folded in; writes through the feedback service (as REST's).
import { getRunsById } from '../../services/traces/queries.service.js';
import {
  createFeedback,
  deleteFeedback,
  getFeedbackRecord,
  listFeedbackOfRuns,
  listFeedbackRecords,
  RUN_FEEDBACK_MAX,
  updateFeedback,
} from '../../services/traces/feedback.service.js';
import { builder } from '../builder.js';
import { TraceRunRef } from './trace-run.js';

const FeedbackRef = builder.prismaObject('Feedback', {
  description: 'Feedback on a trace run: a score, value, comment or correction under a key, from the langsmith SDK, a presigned feedback url or a person.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Feedback ID (UUID).' }),
    key: t.exposeString('key', { description: 'What it rates (correctness, thumbs…).' }),
    score: t.exposeFloat('score', { nullable: true, description: 'Numeric score (a boolean is stored as 1 or 0).' }),
    value: t.expose('value', { type: 'JSON', nullable: true, description: 'Non-numeric value (a label, text, or any JSON).' }),
    comment: t.exposeString('comment', { nullable: true, description: 'Free-text comment.' }),
    correction: t.expose('correction', { type: 'JSON', nullable: true, description: 'What the output should have been.' }),
    feedbackSource: t.expose('feedbackSource', { type: 'JSON', nullable: true, description: 'Who gave it: {type: api | model | app, metadata}.' }),
    runId: t.exposeID('runId', { description: 'ID of the run it is on.' }),
    traceId: t.exposeID('traceId', { description: 'ID of the trace of that run.' }),
    projectId: t.exposeID('sessionId', { description: 'ID of the tracing project of that run.' }),
    // One read for the runs of all the feedback of a response (dataloader).
    run: t.loadable({
      type: TraceRunRef,
      nullable: true,
      description: 'The run it is on (null once the run is gone, by retention say).',
      load: async (ids: string[], ctx) => (await getRunsById(ctx, ids)).map((run) => run ?? null),
      resolve: (feedback) => feedback.runId,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was given.' }),
    modifiedAt: t.expose('modifiedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

builder.objectFields(TraceRunRef, (t) => ({
  // One read for the feedback of all the runs of a response (dataloader).
  feedback: t.loadableList({
    type: FeedbackRef,
    description: `Its feedback, newest first (at most ${RUN_FEEDBACK_MAX}).`,
    load: (runs: { id: string; tenantId: string }[], ctx) => listFeedbackOfRuns(ctx, runs),
    loaderOptions: { cacheKeyFn: (run) => run.id },
    resolve: (run) => run,
  }),
}));

builder.queryFields((t) => ({
  feedback: t.prismaField({
    type: [FeedbackRef],
    description: 'Feedback of the workspace, newest first, optionally of one run and of some keys.',
    args: {
      runId: t.arg.id({ description: 'Only feedback on this run.' }),
      key: t.arg.stringList({ description: 'Only feedback of these keys.' }),
      limit: t.arg.int({ description: 'At most this many (1–100, default 100).' }),
      offset: t.arg.int({ description: 'Skip this many first.' }),
    },
    resolve: (query, _root, args, ctx) =>
      listFeedbackRecords(ctx, { run: args.runId == null ? undefined : String(args.runId), key: args.key ?? undefined, limit: args.limit ?? undefined, offset: args.offset ?? undefined }, query),
  }),
}));

const GiveFeedbackInput = builder.inputType('GiveFeedbackInput', {
  description: 'Feedback on a run: a key and any of score, value, comment and correction.',
  fields: (t) => ({
    runId: t.id({ required: true, description: 'The run it is on.' }),
    key: t.string({ required: true, description: 'What it rates (correctness, thumbs…).' }),
    score: t.float({ description: 'Numeric score.' }),
    value: t.field({ type: 'JSON', description: 'Non-numeric value (a label, text, or any JSON).' }),
    comment: t.string({ description: 'Free-text comment.' }),
    correction: t.field({ type: 'JSON', description: 'What the output should have been.' }),
  }),
});

const ChangeFeedbackInput = builder.inputType('ChangeFeedbackInput', {
  description: 'Changes to a feedback; omitted fields stay as they are, null clears one.',
  fields: (t) => ({
    score: t.float({ description: 'New score.' }),
    value: t.field({ type: 'JSON', description: 'New value.' }),
    comment: t.string({ description: 'New comment.' }),
    correction: t.field({ type: 'JSON', description: 'New correction.' }),
  }),
});

builder.mutationFields((t) => ({
  giveFeedback: t.prismaField({
    type: FeedbackRef,
    description: 'Gives feedback on a run, as the signed-in key (needs workspaces:write).',
    errors: {},
    args: { input: t.arg({ type: GiveFeedbackInput, required: true }) },
    resolve: async (query, _root, { input }, ctx) => {
      const given = await createFeedback(ctx, {
        runId: String(input.runId),
        key: input.key,
        score: input.score,
        value: input.value ?? undefined,
        comment: input.comment,
        correction: input.correction ?? undefined,
        feedbackSource: { type: 'app' },
      });
      return getFeedbackRecord(ctx, given.id, query);
    },
  }),
  changeFeedback: t.prismaField({
    type: FeedbackRef,
    description: 'Changes a feedback (needs workspaces:write).',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Feedback ID.' }), input: t.arg({ type: ChangeFeedbackInput, required: true }) },
    resolve: async (query, _root, { id, input }, ctx) => {
      await updateFeedback(ctx, String(id), input);
      return getFeedbackRecord(ctx, String(id), query);
    },
  }),
  deleteFeedback: t.field({
    type: 'Boolean',
    description: 'Deletes a feedback (needs workspaces:write).',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Feedback ID.' }) },
    resolve: async (_root, { id }, ctx) => {
      await deleteFeedback(ctx, String(id));
      return true;
    },
  }),
}));
