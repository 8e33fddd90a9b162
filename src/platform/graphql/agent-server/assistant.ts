// Agent-server assistants in GraphQL: the same service functions as the REST surface.
import { builder } from '../builder.js';
import type { Assistant, AssistantVersion } from '../../../contracts/agent-server-api.js';
import { callAgentServer } from '../../services/deployments/agent-operations.js';

const AssistantVersionRef = builder.objectRef<AssistantVersion & { deploymentId: string }>('AssistantVersion').implement({
  description: 'One version of an assistant; exactly one version is active.',
  fields: (t) => ({
    version: t.exposeInt('version', { description: 'Version number, from 1.' }),
    graphId: t.exposeString('graphId', { description: 'Graph the version runs.' }),
    name: t.exposeString('name', { description: 'Name of the assistant at this version.' }),
    config: t.field({ type: 'JSON', description: 'Run configuration (configurable, tags, recursion_limit).', resolve: (v) => v.config }),
    context: t.field({ type: 'JSON', description: 'Static context passed to the graph.', resolve: (v) => v.context }),
    metadata: t.field({ type: 'JSON', description: 'Metadata of this version.', resolve: (v) => v.metadata }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When this version was made.' }),
  }),
});

const AssistantRef = builder.objectRef<Assistant & { deploymentId: string }>('Assistant').implement({
  description: 'A graph with configuration, in one deployment. A graph name also selects its default assistant.',
  fields: (t) => ({
    assistantId: t.exposeID('assistantId', { description: 'Assistant ID (UUID).' }),
    deploymentId: t.exposeID('deploymentId', { description: 'Deployment it belongs to.' }),
    graphId: t.exposeString('graphId', { description: 'Graph of the active version.' }),
    name: t.exposeString('name', { description: 'Display name.' }),
    description: t.exposeString('description', { nullable: true, description: 'Free-text description.' }),
    config: t.field({ type: 'JSON', description: 'Configuration of the active version.', resolve: (a) => a.config }),
    context: t.field({ type: 'JSON', description: 'Context of the active version.', resolve: (a) => a.context }),
    metadata: t.field({ type: 'JSON', description: 'Metadata (created_by "system" for default assistants).', resolve: (a) => a.metadata }),
    version: t.exposeInt('version', { description: 'The active version number.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
    versions: t.field({
      type: [AssistantVersionRef],
      description: 'Every version, newest first.',
      args: { limit: t.arg.int({ required: false, description: 'At most this many (default 10).' }) },
      resolve: async (a, args, ctx) =>
        (await callAgentServer(ctx, a.deploymentId, 'listAssistantVersions', a.assistantId, { limit: args.limit ?? 10 })).map((v) => ({
          ...v,
          deploymentId: a.deploymentId,
        })),
    }),
  }),
});

builder.queryFields((t) => ({
  assistants: t.field({
    type: [AssistantRef],
    description: 'Assistants of a deployment, newest first.',
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      graphId: t.arg.string({ required: false, description: 'Only assistants of this graph.' }),
      limit: t.arg.int({ required: false, description: 'At most this many (default 50).' }),
      offset: t.arg.int({ required: false, description: 'Skip this many.' }),
    },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      const items = await callAgentServer(ctx, deploymentId, 'listAssistants', {
        graphId: args.graphId ?? undefined,
        limit: args.limit ?? undefined,
        offset: args.offset ?? undefined,
      });
      return items.map((a) => ({ ...a, deploymentId }));
    },
  }),
  assistant: t.field({
    type: AssistantRef,
    description: 'One assistant by ID or graph name.',
    errors: {
      union: { description: 'The assistant, or why it could not be read.' },
      result: { description: 'The assistant was found.' },
      dataField: { description: 'The assistant.' },
    },
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      id: t.arg.string({ required: true, description: 'Assistant ID, or a graph name for its default assistant.' }),
    },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      return { ...(await callAgentServer(ctx, deploymentId, 'getAssistant', args.id)), deploymentId };
    },
  }),
}));
