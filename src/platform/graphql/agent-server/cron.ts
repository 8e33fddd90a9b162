// Agent-server crons in GraphQL: the same service functions as the REST surface.
import { builder } from '../builder.js';
import type { Cron } from '../../../contracts/agent-server-api.js';
import { callAgentServer } from '../../services/deployments/agent-operations.js';

type CronWithDeployment = Cron & { deploymentId: string };

const CronRef = builder.objectRef<CronWithDeployment>('Cron').implement({
  description: 'A schedule that creates runs of an assistant: on its thread, or each on a new thread.',
  fields: (t) => ({
    cronId: t.exposeID('cronId', { description: 'Cron ID (UUID).' }),
    deploymentId: t.exposeID('deploymentId', { description: 'Deployment it belongs to.' }),
    assistantId: t.exposeID('assistantId', { description: 'Assistant its runs use.' }),
    threadId: t.exposeID('threadId', { nullable: true, description: 'Thread its runs run on; null: a new thread each time.' }),
    schedule: t.exposeString('schedule', { description: 'Cron expression (minute hour day month weekday).' }),
    timezone: t.exposeString('timezone', { description: 'IANA time zone the schedule is read in.' }),
    endTime: t.expose('endTime', { type: 'DateTime', nullable: true, description: 'When it stops firing; null: never.' }),
    enabled: t.exposeBoolean('enabled', { description: 'Whether it fires.' }),
    onRunCompleted: t.exposeString('onRunCompleted', { description: 'Stateless crons: delete or keep each run’s thread.' }),
    payload: t.field({ type: 'JSON', description: 'The run body each firing creates a run with.', resolve: (cron) => cron.payload }),
    metadata: t.field({ type: 'JSON', description: 'Metadata (also given to its runs).', resolve: (cron) => cron.metadata }),
    nextRunDate: t.expose('nextRunDate', { type: 'DateTime', nullable: true, description: 'Its next occurrence; null once it has ended.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

builder.queryFields((t) => ({
  crons: t.field({
    type: [CronRef],
    description: 'Crons of a deployment, newest first.',
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      assistantId: t.arg.string({ required: false, description: 'Only crons of this assistant (ID or graph name).' }),
      threadId: t.arg.id({ required: false, description: 'Only crons of this thread.' }),
      enabled: t.arg.boolean({ required: false, description: 'Only enabled (or disabled) crons.' }),
      limit: t.arg.int({ required: false, description: 'At most this many (default 10).' }),
      offset: t.arg.int({ required: false, description: 'Skip this many.' }),
    },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      const crons = await callAgentServer(ctx, deploymentId, 'searchCrons', {
        assistant_id: args.assistantId ?? undefined,
        thread_id: args.threadId == null ? undefined : String(args.threadId),
        enabled: args.enabled ?? undefined,
        limit: args.limit ?? undefined,
        offset: args.offset ?? undefined,
      });
      return crons.map((cron) => ({ ...cron, deploymentId }));
    },
  }),
  cronCount: t.int({
    description: 'How many crons a deployment has (of an assistant or thread).',
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      assistantId: t.arg.string({ required: false, description: 'Only crons of this assistant (ID or graph name).' }),
      threadId: t.arg.id({ required: false, description: 'Only crons of this thread.' }),
    },
    resolve: async (_root, args, ctx) =>
      callAgentServer(ctx, String(args.deploymentId), 'countCrons', {
        assistant_id: args.assistantId ?? undefined,
        thread_id: args.threadId == null ? undefined : String(args.threadId),
      }),
  }),
  cron: t.field({
    type: CronRef,
    description: 'One cron.',
    errors: {
      union: { description: 'The cron, or why it could not be read.' },
      result: { description: 'The cron was found.' },
      dataField: { description: 'The cron.' },
    },
    args: { deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }), id: t.arg.id({ required: true, description: 'Cron ID.' }) },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      return { ...(await callAgentServer(ctx, deploymentId, 'getCron', String(args.id))), deploymentId };
    },
  }),
}));

const CreateCronInput = builder.inputType('CreateCronInput', {
  description: 'A new cron.',
  fields: (t) => ({
    deploymentId: t.id({ required: true, description: 'Deployment ID.' }),
    assistantId: t.string({ required: true, description: 'Assistant ID or graph name.' }),
    threadId: t.id({ required: false, description: 'Run on this thread; absent: a new thread each time.' }),
    schedule: t.string({ required: true, description: 'Cron expression (minute hour day month weekday), at most once a minute.' }),
    timezone: t.string({ required: false, description: 'IANA time zone (default UTC).' }),
    endTime: t.field({ type: 'DateTime', required: false, description: 'Stop firing after this instant.' }),
    enabled: t.boolean({ required: false, description: 'Whether it fires (default true).' }),
    onRunCompleted: t.string({ required: false, description: 'Stateless crons: delete (default) or keep each run’s thread.' }),
    input: t.field({ type: 'JSON', required: false, description: 'Graph input of each run.' }),
    config: t.field({ type: 'JSON', required: false, description: 'Run config.' }),
    metadata: t.field({ type: 'JSON', required: false, description: 'Metadata of the cron and its runs.' }),
  }),
});

const UpdateCronInput = builder.inputType('UpdateCronInput', {
  description: 'Changes to a cron; absent fields stay.',
  fields: (t) => ({
    deploymentId: t.id({ required: true, description: 'Deployment ID.' }),
    cronId: t.id({ required: true, description: 'Cron ID.' }),
    schedule: t.string({ required: false, description: 'Cron expression.' }),
    timezone: t.string({ required: false, description: 'IANA time zone.' }),
    endTime: t.field({ type: 'DateTime', required: false, description: 'Stop firing after this instant.' }),
    enabled: t.boolean({ required: false, description: 'Whether it fires.' }),
    input: t.field({ type: 'JSON', required: false, description: 'Graph input of each run.' }),
    metadata: t.field({ type: 'JSON', required: false, description: 'Metadata of the cron and its runs.' }),
  }),
});

builder.mutationFields((t) => ({
  createCron: t.field({
    type: CronRef,
    description: 'Creates a cron in a deployment.',
    errors: {},
    args: { input: t.arg({ type: CreateCronInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const deploymentId = String(input.deploymentId);
      const cron = await callAgentServer(ctx, deploymentId, 'createCron', input.threadId == null ? null : String(input.threadId), {
        assistant_id: input.assistantId,
        schedule: input.schedule,
        timezone: input.timezone ?? undefined,
        end_time: input.endTime?.toISOString(),
        enabled: input.enabled ?? undefined,
        on_run_completed: input.onRunCompleted ?? undefined,
        input: input.input ?? undefined,
        config: input.config ?? undefined,
        metadata: input.metadata ?? undefined,
      });
      return { ...cron, deploymentId };
    },
  }),
  updateCron: t.field({
    type: CronRef,
    description: 'Changes a cron’s schedule, end, enabled flag or run input.',
    errors: {},
    args: { input: t.arg({ type: UpdateCronInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const deploymentId = String(input.deploymentId);
      const cron = await callAgentServer(ctx, deploymentId, 'updateCron', String(input.cronId), {
        schedule: input.schedule ?? undefined,
        timezone: input.timezone ?? undefined,
        end_time: input.endTime?.toISOString(),
        enabled: input.enabled ?? undefined,
        input: input.input ?? undefined,
        metadata: input.metadata ?? undefined,
      });
      return { ...cron, deploymentId };
    },
  }),
  deleteCron: t.field({
    type: 'Boolean',
    description: 'Deletes a cron (the runs it created stay).',
    errors: {},
    args: { deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }), id: t.arg.id({ required: true, description: 'Cron ID.' }) },
    resolve: async (_root, args, ctx) => {
      await callAgentServer(ctx, String(args.deploymentId), 'deleteCron', String(args.id));
      return true;
    },
  }),
}));
