// Agent-server runs in GraphQL, and `runEvents`: the same event stream the REST SSE endpoints send
// (the runs service's iterable over run_events + NOTIFY), over graphql-ws or GraphQL SSE.
import { builder } from '../builder.js';
import { eventMode, MULTITASK_STRATEGIES, type Run, type RunEvent, RUN_STATUSES } from '../../../contracts/agent-server-api.js';
import { callAgentServer, deploymentOfRun, streamRunOf } from '../../services/deployments/agent-operations.js';

const RunStatusEnum = builder.enumType('RunStatus', {
  description: 'Lifecycle of a run: pending → running → success | error | timeout | interrupted.',
  values: RUN_STATUSES,
});

const MultitaskStrategyEnum = builder.enumType('MultitaskStrategy', {
  description: 'What a new run does when the thread already has one pending or running.',
  values: MULTITASK_STRATEGIES,
});

export const RunRef = builder.objectRef<Run & { deploymentId: string }>('Run').implement({
  description: 'One invocation of an assistant’s graph on a thread.',
  fields: (t) => ({
    runId: t.exposeID('runId', { description: 'Run ID (UUID).' }),
    threadId: t.exposeID('threadId', { description: 'Thread it runs on (a throwaway one for stateless runs).' }),
    assistantId: t.exposeID('assistantId', { description: 'Assistant it runs.' }),
    deploymentId: t.exposeID('deploymentId', { description: 'Deployment it belongs to.' }),
    status: t.field({ type: RunStatusEnum, description: 'Current status.', resolve: (run) => run.status }),
    metadata: t.field({ type: 'JSON', description: 'Run metadata.', resolve: (run) => run.metadata }),
    multitaskStrategy: t.field({ type: MultitaskStrategyEnum, description: 'Strategy it was created with.', resolve: (run) => run.multitaskStrategy }),
    cancelReason: t.exposeString('cancelReason', {
      nullable: true,
      description: 'Why it was cancelled (user, taken:<run>, multitask:<strategy>:<run>, disconnect), while its status is interrupted because it was.',
    }),
    streamModes: t.stringList({ description: 'Stream modes it records.', resolve: (run) => run.kwargs.stream_mode }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

const RunEventRef = builder.objectRef<RunEvent>('RunEvent').implement({
  description: 'One event of a run’s stream, exactly as the REST SSE stream sends it.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'Position in the stream, from 1 (the SSE event id is seq - 1: ids count from 0, as the reference server numbers them).' }),
    event: t.exposeString('event', { description: 'SSE event name: metadata, error, or a stream mode (mode|namespace for subgraphs).' }),
    mode: t.string({ description: 'The stream mode the event belongs to.', resolve: (event) => eventMode(event.event) }),
    data: t.field({ type: 'JSON', description: 'The event data.', resolve: (event) => JSON.parse(event.data) }),
  }),
});

builder.queryField('run', (t) =>
  t.field({
    type: RunRef,
    description: 'One run by ID.',
    errors: {
      union: { description: 'The run, or why it could not be read.' },
      result: { description: 'The run was found.' },
      dataField: { description: 'The run.' },
    },
    args: {
      id: t.arg.id({ required: true, description: 'Run ID.' }),
      deploymentId: t.arg.id({ required: false, description: 'Deployment ID: needed for a deployment with its own agent server (a deployed revision).' }),
    },
    resolve: async (_root, args, ctx) => {
      const deploymentId = args.deploymentId ? String(args.deploymentId) : await deploymentOfRun(ctx, String(args.id));
      return { ...(await callAgentServer(ctx, deploymentId, 'getRun', null, String(args.id))), deploymentId };
    },
  }),
);

const CreateRunInput = builder.inputType('CreateRunInput', {
  description: 'A new run; without threadId it is stateless.',
  fields: (t) => ({
    deploymentId: t.id({ required: true, description: 'Deployment ID.' }),
    threadId: t.id({ required: false, description: 'Thread to run on; absent for a stateless run.' }),
    assistantId: t.string({ required: true, description: 'Assistant ID or graph name.' }),
    input: t.field({ type: 'JSON', required: false, description: 'Graph input.' }),
    command: t.field({ type: 'JSON', required: false, description: 'Command {resume, update, goto} instead of input.' }),
    config: t.field({ type: 'JSON', required: false, description: 'Run configuration.' }),
    context: t.field({ type: 'JSON', required: false, description: 'Static context for the graph.' }),
    metadata: t.field({ type: 'JSON', required: false, description: 'Run metadata.' }),
    streamModes: t.stringList({ required: false, description: 'Stream modes to record (default values).' }),
    streamSubgraphs: t.boolean({ required: false, description: 'Also record subgraph events.' }),
    multitaskStrategy: t.field({ type: MultitaskStrategyEnum, required: false, description: 'Default enqueue.' }),
  }),
});

builder.mutationField('createRun', (t) =>
  t.field({
    type: RunRef,
    description: 'Creates a run (background); follow it with the runEvents subscription.',
    errors: {},
    args: { input: t.arg({ type: CreateRunInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const deploymentId = String(input.deploymentId);
      const run = await callAgentServer(ctx, deploymentId, 'startRun', input.threadId ? String(input.threadId) : null, {
        assistantId: input.assistantId,
        input: input.input ?? undefined,
        command: input.command ?? undefined,
        config: input.config ?? undefined,
        context: input.context ?? undefined,
        metadata: input.metadata ?? undefined,
        streamModes: input.streamModes ?? undefined,
        streamSubgraphs: input.streamSubgraphs ?? undefined,
        multitaskStrategy: input.multitaskStrategy ?? undefined,
      });
      return { ...run, deploymentId };
    },
  }),
);

builder.subscriptionField('runEvents', (t) =>
  t.field({
    type: RunEventRef,
    description: 'The events of a run from the start (or after `afterSeq`), live until it ends: the same events as its REST SSE stream.',
    args: {
      runId: t.arg.id({ required: true, description: 'Run ID.' }),
      deploymentId: t.arg.id({ required: false, description: 'Deployment ID: needed for a deployment with its own agent server (a deployed revision).' }),
      streamModes: t.arg.stringList({ required: false, description: 'Only these stream modes (metadata and error always come).' }),
      afterSeq: t.arg.int({ required: false, description: 'Resume after the event with this seq (Last-Event-ID + 1).' }),
    },
    subscribe: async function* (_root, args, ctx) {
      const runId = String(args.runId);
      const deploymentId = args.deploymentId ? String(args.deploymentId) : await deploymentOfRun(ctx, runId);
      yield* streamRunOf(ctx, deploymentId, runId, { afterSeq: args.afterSeq ?? undefined, modes: args.streamModes ?? undefined });
    },
    resolve: (event) => event,
  }),
);
