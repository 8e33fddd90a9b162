// Control-plane deployments and revisions in GraphQL, over the same services as /v2/deployments:
// queries, mutations for each write, and the live `revisionStatus` / `deploymentEvents` subscriptions
// (graphql-ws and SSE) so a pipeline waits for DEPLOYED without polling. Secret values never appear.
import { builder } from '../builder.js';
import * as deployments from '../../services/deployments/deployments.service.js';
import * as revisions from '../../services/deployments/revisions.service.js';

const RevisionLogLineRef = builder.objectRef<revisions.RevisionLogRow>('RevisionLogLine').implement({
  description: 'A line of a revision’s build or deploy log.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Position in the log.' }),
    type: t.exposeString('type', { description: 'build or deploy.' }),
    message: t.exposeString('message', { description: 'The line.' }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was written.' }),
  }),
});

const RevisionRef = builder.objectRef<revisions.RevisionRow>('Revision').implement({
  description: 'One build and deploy of a deployment’s source at one ref.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Revision ID.' }),
    deploymentId: t.exposeID('deployment_id', { description: 'Its deployment.' }),
    status: t.exposeString('status', {
      description: 'CREATING, QUEUED, AWAITING_BUILD, BUILDING, AWAITING_DEPLOY, DEPLOYING, DEPLOYED, or CREATE_FAILED, BUILD_FAILED, DEPLOY_FAILED, SKIPPED, INTERRUPTED.',
    }),
    sourceRevisionConfig: t.expose('source_revision_config', { type: 'JSON', description: 'repo_ref and graph_config_path it was built from.' }),
    commitSha: t.exposeString('commit_sha', { nullable: true, description: 'The commit its ref resolved to.' }),
    graphIds: t.exposeStringList('graph_ids', { description: 'The graphs its build loaded.' }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updated_at', { type: 'DateTime', description: 'When its status last changed.' }),
    logs: t.field({
      type: [RevisionLogLineRef],
      description: 'A page of its build or deploy log, oldest first.',
      args: {
        type: t.arg.string({ required: false, description: 'build (default) or deploy.' }),
        limit: t.arg.int({ required: false, description: '1 to 1000 (default 100).' }),
        offset: t.arg.int({ required: false, description: 'Lines to skip.' }),
      },
      resolve: async (revision, args, ctx) =>
        (await revisions.revisionLogs(ctx, revision.deployment_id, revision.id, { type: args.type ?? undefined, limit: args.limit ?? undefined, offset: args.offset ?? undefined })).resources,
    }),
  }),
});

const DeploymentRef = builder.objectRef<deployments.Deployment>('Deployment').implement({
  description: 'An agent server deployment built from a git repository; its agent server answers at `url`.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Deployment ID.' }),
    name: t.exposeString('name', { description: 'Its name.' }),
    source: t.exposeString('source', { description: 'Kind of source (github: any git URL).' }),
    sourceConfig: t.expose('source_config', { type: 'JSON', description: 'repo_url, integration_id, deployment_type, build_on_push, custom_url, resource_spec.' }),
    sourceRevisionConfig: t.expose('source_revision_config', { type: 'JSON', description: 'repo_ref and graph_config_path of the latest revision.' }),
    secretNames: t.exposeStringList('secret_names', { description: 'Names of its secrets; values are never returned.' }),
    status: t.exposeString('status', { description: 'AWAITING_DATABASE, READY, UNUSED, AWAITING_DELETE or UNKNOWN; OVER_LIMIT while its agent server is stopped for outgrowing its disk limits.' }),
    latestRevisionId: t.exposeID('latest_revision_id', { nullable: true, description: 'The newest revision.' }),
    activeRevisionId: t.exposeID('active_revision_id', { nullable: true, description: 'The revision now serving.' }),
    url: t.string({
      description: 'Where its agent server answers (a path on this server when no public URL is configured).',
      resolve: (deployment) => deployment.url ?? `/deployments/${deployment.id}`,
    }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updated_at', { type: 'DateTime', description: 'When it last changed.' }),
    revisions: t.field({
      type: [RevisionRef],
      description: 'Its revisions, latest first.',
      args: { limit: t.arg.int({ required: false, description: '1 to 100 (default 20).' }), offset: t.arg.int({ required: false, description: 'Revisions to skip.' }) },
      resolve: async (deployment, args, ctx) => (await revisions.listRevisions(ctx, deployment.id, { limit: args.limit ?? undefined, offset: args.offset ?? undefined })).resources,
    }),
  }),
});

const RevisionStatusEventRef = builder.objectRef<revisions.RevisionStatusEvent>('RevisionStatusEvent').implement({
  description: 'A revision moved to a new status.',
  fields: (t) => ({
    deploymentId: t.exposeID('deploymentId', { description: 'Its deployment.' }),
    revisionId: t.exposeID('revisionId', { description: 'The revision.' }),
    status: t.exposeString('status', { description: 'Its new status.' }),
  }),
});

const SecretInput = builder.inputType('DeploymentSecretInput', {
  description: 'A secret: an environment variable of the deployment’s agent server.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'Environment variable name.' }),
    value: t.string({ required: true, description: 'Its value (stored encrypted, never returned).' }),
  }),
});

const CreateDeploymentInput = builder.inputType('CreateDeploymentInput', {
  description: 'A deployment of a git repository; its first revision builds and deploys.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'Deployment name.' }),
    repoUrl: t.string({ required: true, description: 'Any URL git clones (https, ssh, file://, a local path).' }),
    repoRef: t.string({ required: true, description: 'Branch, tag or commit.' }),
    graphConfigPath: t.string({ required: true, description: 'Path of langgraph.json inside the repository.' }),
    buildOnPush: t.boolean({ required: false, description: 'Build a new revision when the ref moves (checked every minute).' }),
    secrets: t.field({ type: [SecretInput], required: false, description: 'Environment of its agent server.' }),
  }),
});

const UpdateDeploymentInput = builder.inputType('UpdateDeploymentInput', {
  description: 'repoRef, graphConfigPath or secrets make a new revision; buildOnPush changes in place.',
  fields: (t) => ({
    repoRef: t.string({ required: false, description: 'Branch, tag or commit of the new revision.' }),
    graphConfigPath: t.string({ required: false, description: 'Path of langgraph.json of the new revision.' }),
    buildOnPush: t.boolean({ required: false, description: 'Changes in place, without a revision.' }),
    secrets: t.field({ type: [SecretInput], required: false, description: 'Replaces every secret (a new revision).' }),
  }),
});

builder.queryFields((t) => ({
  deployments: t.field({
    type: [DeploymentRef],
    description: 'The workspace’s deployments (X-Tenant-Id), newest first.',
    args: {
      limit: t.arg.int({ required: false, description: '1 to 100 (default 20).' }),
      offset: t.arg.int({ required: false }),
      nameContains: t.arg.string({ required: false }),
    },
    resolve: async (_root, args, ctx) =>
      (await deployments.listDeployments(ctx, { limit: args.limit ?? undefined, offset: args.offset ?? undefined, name_contains: args.nameContains ?? undefined })).resources,
  }),
  deployment: t.field({
    type: DeploymentRef,
    description: 'One deployment of the workspace.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => deployments.getDeployment(ctx, String(args.id)),
  }),
  revision: t.field({
    type: RevisionRef,
    description: 'One revision of a deployment.',
    args: { deploymentId: t.arg.id({ required: true }), id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => revisions.getRevision(ctx, String(args.deploymentId), String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  createDeployment: t.field({
    type: DeploymentRef,
    description: 'Creates a deployment and its first revision, which builds and deploys.',
    args: { input: t.arg({ type: CreateDeploymentInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      deployments.createDeployment(ctx, {
        name: input.name,
        source: 'github',
        source_config: { repo_url: input.repoUrl, build_on_push: input.buildOnPush ?? undefined },
        source_revision_config: { repo_ref: input.repoRef, graph_config_path: input.graphConfigPath },
        secrets: input.secrets ?? undefined,
      }),
  }),
  updateDeployment: t.field({
    type: DeploymentRef,
    description: 'Changes a deployment (see UpdateDeploymentInput).',
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateDeploymentInput, required: true }) },
    resolve: (_root, { id, input }, ctx) =>
      deployments.updateDeployment(ctx, String(id), {
        source_config: input.buildOnPush === null || input.buildOnPush === undefined ? undefined : { build_on_push: input.buildOnPush },
        source_revision_config:
          input.repoRef || input.graphConfigPath ? { repo_ref: input.repoRef ?? undefined, graph_config_path: input.graphConfigPath ?? undefined } : undefined,
        secrets: input.secrets ?? undefined,
      }),
  }),
  deleteDeployment: t.boolean({
    description: 'Deletes a deployment: its agent server stops, unfinished revisions become INTERRUPTED, its url answers 404.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, ctx) => {
      await deployments.deleteDeployment(ctx, String(args.id));
      return true;
    },
  }),
  redeployRevision: t.field({
    type: DeploymentRef,
    description: 'Deploys an earlier revision’s source again, as a new revision.',
    args: { deploymentId: t.arg.id({ required: true }), revisionId: t.arg.id({ required: true }) },
    resolve: async (_root, args, ctx) => deployments.getDeployment(ctx, await revisions.redeployRevision(ctx, String(args.deploymentId), String(args.revisionId))),
  }),
}));

builder.subscriptionFields((t) => ({
  revisionStatus: t.field({
    type: RevisionStatusEventRef,
    description: 'A revision’s status now, then every change in order; ends when it is DEPLOYED or failed.',
    args: { revisionId: t.arg.id({ required: true }) },
    subscribe: (_root, args, ctx) => revisions.watchRevisionStatus(ctx, String(args.revisionId)),
    resolve: (event) => event,
  }),
  deploymentEvents: t.field({
    type: RevisionStatusEventRef,
    description: 'Every status change of the deployment’s revisions, live.',
    args: { deploymentId: t.arg.id({ required: true }) },
    subscribe: (_root, args, ctx) => revisions.watchDeploymentEvents(ctx, String(args.deploymentId)),
    resolve: (event) => event,
  }),
}));
