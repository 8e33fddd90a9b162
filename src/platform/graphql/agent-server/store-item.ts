// The agent server's long-term store in GraphQL: the same service functions as the REST surface.
import { builder } from '../builder.js';
import { callAgentServer } from '../../services/deployments/agent-operations.js';
import type { StoreItem } from '../../../contracts/agent-server-api.js';

type StoreItemWithDeployment = StoreItem & { deploymentId: string };

const StoreItemRef = builder.objectRef<StoreItemWithDeployment>('StoreItem').implement({
  description: 'An item of a deployment’s long-term store (what its graphs see as `store`).',
  fields: (t) => ({
    deploymentId: t.exposeID('deploymentId', { description: 'Deployment it belongs to.' }),
    namespace: t.exposeStringList('namespace', { description: 'Namespace labels.' }),
    key: t.exposeString('key', { description: 'Key within the namespace.' }),
    value: t.field({ type: 'JSON', description: 'The stored JSON object.', resolve: (item) => item.value }),
    score: t.exposeFloat('score', { nullable: true, description: 'Relevance, when searched with a query.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was first written.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it was last written.' }),
  }),
});

const StoreNamespaceRef = builder.objectRef<string[]>('StoreNamespace').implement({
  description: 'A namespace of a deployment’s store.',
  fields: (t) => ({ labels: t.stringList({ description: 'Its labels, outermost first.', resolve: (labels) => labels }) }),
});

builder.queryFields((t) => ({
  storeItem: t.field({
    type: StoreItemRef,
    nullable: true,
    description: 'One live item of a deployment’s store, or null. Reading restarts its time to live.',
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      namespace: t.arg.stringList({ required: true, description: 'Namespace labels.' }),
      key: t.arg.string({ required: true, description: 'Key.' }),
    },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      // The REST query form joins labels with '.', which labels may not contain: a '.' here fails validation there too.
      const item = await callAgentServer(ctx, deploymentId, 'getItem', { namespace: args.namespace.join('.'), key: args.key });
      return item && { ...item, deploymentId };
    },
  }),
  storeItems: t.field({
    type: [StoreItemRef],
    description: 'Live items under a namespace prefix, newest first (with `query`: those matching its text).',
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      namespacePrefix: t.arg.stringList({ required: false, description: 'Namespace prefix (whole labels); absent: every namespace.' }),
      filter: t.arg({ type: 'JSON', required: false, description: 'Exact matches on value fields, or {field: {$gt: n}} comparisons.' }),
      query: t.arg.string({ required: false, description: 'Text the value must contain.' }),
      limit: t.arg.int({ required: false, description: 'At most this many (default 10).' }),
      offset: t.arg.int({ required: false, description: 'Skip this many.' }),
    },
    resolve: async (_root, args, ctx) => {
      const deploymentId = String(args.deploymentId);
      const items = await callAgentServer(ctx, deploymentId, 'searchItems', {
        namespace_prefix: args.namespacePrefix ?? [],
        filter: args.filter ?? undefined,
        query: args.query ?? undefined,
        limit: args.limit ?? undefined,
        offset: args.offset ?? undefined,
      });
      return items.map((item) => ({ ...item, deploymentId }));
    },
  }),
  storeNamespaces: t.field({
    type: [StoreNamespaceRef],
    description: 'Namespaces holding live items (prefix and suffix labels may be `*`).',
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      prefix: t.arg.stringList({ required: false, description: 'Namespace prefix.' }),
      suffix: t.arg.stringList({ required: false, description: 'Namespace suffix.' }),
      maxDepth: t.arg.int({ required: false, description: 'Cut namespaces to this many labels.' }),
      limit: t.arg.int({ required: false, description: 'At most this many (default 100).' }),
      offset: t.arg.int({ required: false, description: 'Skip this many.' }),
    },
    resolve: async (_root, args, ctx) =>
      callAgentServer(ctx, String(args.deploymentId), 'listNamespaces', {
        prefix: args.prefix ?? undefined,
        suffix: args.suffix ?? undefined,
        max_depth: args.maxDepth ?? undefined,
        limit: args.limit ?? undefined,
        offset: args.offset ?? undefined,
      }),
  }),
}));

const PutStoreItemInput = builder.inputType('PutStoreItemInput', {
  description: 'An item to create or replace.',
  fields: (t) => ({
    deploymentId: t.id({ required: true, description: 'Deployment ID.' }),
    namespace: t.stringList({ required: true, description: 'Namespace labels (not empty, no ".").' }),
    key: t.string({ required: true, description: 'Key.' }),
    value: t.field({ type: 'JSON', required: true, description: 'A JSON object.' }),
    ttl: t.float({ required: false, description: "Minutes until it expires; absent: the graph config's store.ttl.default_ttl, else never." }),
    // JSON rather than a list: the REST and SDK form is `false` (do not embed) or the fields to embed.
    index: t.field({ type: 'JSON', required: false, description: "With the graph config's store.index: false (do not embed this item) or the value's fields to embed; absent: the configured fields." }),
  }),
});

builder.mutationFields((t) => ({
  putStoreItem: t.field({
    type: StoreItemRef,
    description: 'Creates or replaces an item of a deployment’s store.',
    errors: {},
    args: { input: t.arg({ type: PutStoreItemInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const deploymentId = String(input.deploymentId);
      await callAgentServer(ctx, deploymentId, 'putItem', { namespace: input.namespace, key: input.key, value: input.value, ttl: input.ttl ?? undefined, index: input.index ?? undefined });
      const item = await callAgentServer(ctx, deploymentId, 'getItem', { namespace: input.namespace.join('.'), key: input.key, refresh_ttl: false });
      return { ...item!, deploymentId };
    },
  }),
  deleteStoreItem: t.field({
    type: 'Boolean',
    description: 'Deletes an item of a deployment’s store (no error if it does not exist).',
    errors: {},
    args: {
      deploymentId: t.arg.id({ required: true, description: 'Deployment ID.' }),
      namespace: t.arg.stringList({ required: true, description: 'Namespace labels.' }),
      key: t.arg.string({ required: true, description: 'Key.' }),
    },
    resolve: async (_root, args, ctx) => {
      await callAgentServer(ctx, String(args.deploymentId), 'deleteItem', { namespace: args.namespace, key: args.key });
      return true;
    },
  }),
}));
