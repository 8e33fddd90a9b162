// Agent-server threads in GraphQL: the same service functions as the REST surface.
import { builder } from '../builder.js';
import { type Run, type Thread, type ThreadState, THREAD_STATUSES } from '../../../contracts/agent-server-api.js';
import { callAgentServer } from '../../services/deployments/agent-operations.js';
import { RunRef } from './run.js';

const ThreadStatusEnum = builder.enumType('ThreadStatus', {
  description: 'idle: ready; busy: a run is pending or running; interrupted: stopped waiting for input; error: the last run failed.',
  values: THREAD_STATUSES,
});

const ThreadStateRef = builder.objectRef<ThreadState>('ThreadState').implement({
  description: 'The state of a thread at its latest checkpoint.',
  fields: (t) => ({
    values: t.field({ type: 'JSON', description: 'State values (messages as plain objects).', resolve: (s) => s.values }),
    next: t.stringList({ description: 'Nodes that run next; empty when the thread is done.', resolve: (s) => s.next }),
    tasks: t.field({ type: 'JSON', description: 'Pending tasks with their interrupts and errors.', resolve: (s) => s.tasks }),
    interrupts: t.field({ type: 'JSON', description: 'Interrupts waiting for a resume.', resolve: (s) => s.interrupts }),
    checkpoint: t.field({ type: 'JSON', nullable: true, description: 'The checkpoint this state is at.', resolve: (s) => s.checkpoint }),
    metadata: t.field({ type: 'JSON', nullable: true, description: 'Checkpoint metadata.', resolve: (s) => s.metadata }),
  }),
});

type ThreadWithDeployment = Thread & { deploymentId: string };
type RunWithDeployment = Run & { deploymentId: string };

const ThreadRef = builder.objectRef<ThreadWithDeployment>('Thread').implement({
  description: 'A conversation: the state accumulated by its runs.',
  fields: (t) => ({
    threadId: t.exposeID('threadId', { description: 'Thread ID (UUID).' }),
    deploymentId: t.exposeID('deploymentId', { description: 'Deployment it belongs to.' }),
    status: t.field({ type: ThreadStatusEnum, description: 'Current status.', resolve: (thread) => thread.status }),
    metadata: t.field({ type: 'JSON', description: 'Metadata (graph_id and assistant_id once run).', resolve: (thread) => thread.metadata }),
    values: t.field({ type: 'JSON', nullable: true, description: 'Latest state values (cached after each run).', resolve: (thread) => thread.values }),
    interrupts: t.field({ type: 'JSON', description: 'Interrupts by task ID.', resolve: (thread) => thread.interrupts }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
    state: t.field({
      type: ThreadStateRef,
      description: 'The state read from the latest checkpoint (needs the graph, so only where the deployment runs).',
      resolve: async (thread, _args, ctx) => callAgentServer(ctx, thread.deploymentId, 'getThreadState', thread.threadId),
    }),
    // One read for the runs of all the threads of a response (dataloader; byPath: they share `limit`).
    runs: t.loadableList({
      type: RunRef,
      description: 'Runs of the thread, newest first.',
      byPath: true,
      args: { limit: t.arg.int({ required: false, description: 'At most this many (default 10).' }) },
      load: async (threads: ThreadWithDeployment[], ctx, args) => {
        const runs = new Map<ThreadWithDeployment, RunWithDeployment[]>();
        for (const deploymentId of new Set(threads.map((thread) => thread.deploymentId))) {
          const ofDeployment = threads.filter((thread) => thread.deploymentId === deploymentId);
          const lists = await callAgentServer(ctx, deploymentId, 'listRunsOfThreads', ofDeployment.map((thread) => thread.threadId), { limit: args.limit ?? 10 });
          ofDeployment.forEach((thread, index) => runs.set(thread, lists[index]!.map((run) => ({ ...run, deploymentId }))));
        }
        return threads.map((thread) => runs.get(thread)!);
      },
      loaderOptions: { cacheKeyFn: (thread) => `${thread.deploymentId}/${thread.threadId}` },
      resolve: (thread) => thread,
    }),
  }),
});

builder.queryFields((t) => ({
  threads: t.field({
    type: [ThreadRef],
    description: 'Threads of a deployment, newest first.',
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      status: t.arg({ type: ThreadStatusEnum, required: false, description: 'Only threads in this status.' }),
      limit: t.arg.int({ required: false, description: 'At most this many (default 50).' }),
      offset: t.arg.int({ required: false, description: 'Skip this many.' }),
    },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      const items = await callAgentServer(ctx, deploymentId, 'listThreads', {
        status: args.status ?? undefined,
        limit: args.limit ?? undefined,
        offset: args.offset ?? undefined,
      });
      return items.map((thread) => ({ ...thread, deploymentId }));
    },
  }),
  thread: t.field({
    type: ThreadRef,
    description: 'One thread.',
    errors: {
      union: { description: 'The thread, or why it could not be read.' },
      result: { description: 'The thread was found.' },
      dataField: { description: 'The thread.' },
    },
    args: { deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }), id: t.arg.id({ required: true, description: 'Thread ID.' }) },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      return { ...(await callAgentServer(ctx, deploymentId, 'getThread', String(args.id))), deploymentId };
    },
  }),
}));

const CreateThreadInput = builder.inputType('CreateThreadInput', {
  description: 'A new thread.',
  fields: (t) => ({
    deploymentId: t.id({ required: true, description: 'Deployment ID.' }),
    threadId: t.id({ required: false, description: 'Choose the thread ID (UUID); minted when absent.' }),
    metadata: t.field({ type: 'JSON', required: false, description: 'Metadata object.' }),
  }),
});

builder.mutationField('createThread', (t) =>
  t.field({
    type: ThreadRef,
    description: 'Creates a thread in a deployment.',
    errors: {},
    args: { input: t.arg({ type: CreateThreadInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const deploymentId = String(input.deploymentId);
      const thread = await callAgentServer(ctx, deploymentId, 'startThread', { threadId: input.threadId ?? undefined, metadata: input.metadata ?? undefined });
      return { ...thread, deploymentId };
    },
  }),
);
