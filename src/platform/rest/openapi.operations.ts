// Every operation of the platform's own REST surfaces (trace ingestion and queries, usage, bulk
// export, tenancy), with the zod schemas they parse. Each deployment's agent server has its own
// document at /deployments/<id>/openapi.json. A new platform routes file (the control plane under /v2,
// …) exports its operations and joins OPERATIONS below in one line; the OpenAPI test fails for a
// mounted route missing here.
import { BulkExportCreate, BulkExportUpdate, DestinationCreate, DestinationUpdate } from '../services/exports/exports.schemas.js';
import {
  ComparativeExperimentCreate,
  DatasetCreate,
  DatasetTagUpdate,
  DatasetUpdate,
  ExampleCreate,
  ExampleUpdate,
  ExperimentComparison,
  FeedbackCreate,
  FeedbackTokenCreate,
  FeedbackUpdate,
  FeedbackWithToken,
  ProjectCreate,
  ProjectUpdate,
  RunQuery,
  RunQueryV2,
  RunRetrieveV2,
  RunUrlV2,
} from '../services/traces/traces.schemas.js';
import { DatasetListQuery, ExampleListQuery } from './datasets.routes.js';
import { FeedbackListQuery, FeedbackTokenListQuery } from './feedback.routes.js';
import { ApiKeyCreateBody, WorkspaceCreateBody } from './tenancy.routes.js';
import { ProjectListQuery } from './traces.routes.js';
import { GranularUsageQuery } from './usage.routes.js';
import { DeploymentCreate, DeploymentListQuery, DeploymentPatch, PageQuery as RevisionPageQuery, RevisionLogsQuery } from '../services/deployments/deployments.schemas.js';
import { IntegrationCreate } from '../services/integrations/integrations.schemas.js';
import { ListenerCreate, ListenerUpdate, PageQuery } from '../services/listeners/listeners.schemas.js';
import { OAuthProviderCreate, OAuthProviderUpdate } from '../services/auth-providers/auth-providers.schemas.js';
import type { Operation, Surface } from '../../http/openapi/document.js';
import { referenceOperations } from '../../http/openapi/reference.routes.js';

const accepted = { status: 202, description: 'Accepted: stored, or queued to be.' } as const;
const empty = { status: 204, kind: 'empty', description: 'Done.' } as const;
const created = { status: 201, kind: 'json', description: 'Created.' } as const;

/** Trace ingestion and queries (the langsmith SDK's wire), served at the root and again under /api/v1. */
const tracesOperations = (prefix: string): Operation[] => [
  { method: 'get', path: `${prefix}/info`, tag: 'Ingestion', summary: 'Batching limits and encodings the SDK may use (public)' },
  { method: 'post', path: `${prefix}/runs`, tag: 'Ingestion', summary: 'Ingest one run (gzip or zstd bodies accepted)', response: accepted },
  { method: 'post', path: `${prefix}/runs/batch`, tag: 'Ingestion', summary: 'Ingest runs: {post: [...], patch: [...]}', response: accepted },
  { method: 'post', path: `${prefix}/runs/multipart`, tag: 'Ingestion', summary: 'Ingest runs as multipart/form-data parts', response: accepted },
  {
    method: 'post',
    path: `${prefix}/otel/v1/traces`,
    tag: 'Ingestion',
    summary: 'Ingest OpenTelemetry spans as runs (OTLP/HTTP: application/x-protobuf or application/json, gzip accepted; project from the Langsmith-Project header, else service.name)',
    response: { description: 'ExportTraceServiceResponse, in the request\'s encoding; partial_success names rejected spans.' },
  },
  { method: 'post', path: `${prefix}/runs/query/validate`, tag: 'Traces', summary: 'Check a run filter expression' },
  { method: 'post', path: `${prefix}/runs/query`, tag: 'Traces', summary: 'Query runs', body: RunQuery },
  { method: 'get', path: `${prefix}/runs/:id`, tag: 'Traces', summary: 'Get a run' },
  { method: 'patch', path: `${prefix}/runs/:id`, tag: 'Ingestion', summary: 'Update a run (end it, add outputs)', response: accepted },
  { method: 'post', path: `${prefix}/sessions`, tag: 'Traces', summary: 'Create a tracing project', body: ProjectCreate },
  { method: 'get', path: `${prefix}/sessions`, tag: 'Traces', summary: 'List tracing projects', query: ProjectListQuery },
  { method: 'get', path: `${prefix}/sessions/:id`, tag: 'Traces', summary: 'Get a tracing project' },
  { method: 'patch', path: `${prefix}/sessions/:id`, tag: 'Traces', summary: 'Update a tracing project', body: ProjectUpdate },
  { method: 'delete', path: `${prefix}/sessions/:id`, tag: 'Traces', summary: 'Delete a tracing project and its runs', response: accepted },
];

/** LangSmith's v2 runs API (the SDK's client.runs.query, retrieve and getURL), under /api/v2 only. */
const runsV2Operations: Operation[] = [
  {
    method: 'post',
    path: '/api/v2/runs/query',
    tag: 'Traces',
    summary: "Query runs (v2): a project's (or a dataset's experiments') runs within [min_start_time, max_start_time], newest first; {items, next_cursor}, the next page by sending next_cursor as cursor; `selects` names the fields returned (only id without it)",
    body: RunQueryV2,
  },
  { method: 'get', path: '/api/v2/runs/:id', tag: 'Traces', summary: 'Get a run of a project (v2): project_id required, `selects` repeated', query: RunRetrieveV2 },
  { method: 'get', path: '/api/v2/runs/:id/url', tag: 'Traces', summary: "The console's page of a run of that project and trace: {url}", query: RunUrlV2 },
];

/** Datasets, examples and experiment comparison (the langsmith SDK's paths), at the root and again under /api/v1. */
const datasetsOperations = (prefix: string): Operation[] => {
  // The SDK's multipart example paths: /v1/platform/… at the root, /platform/… under /api/v1 (each
  // answered at both, as one router serves both mounts).
  const examplePaths = (base: string): Operation[] => [
    {
      method: 'post',
      path: `${base}/datasets/:id/examples`,
      tag: 'Datasets',
      summary: 'Add examples as multipart parts: {example id} (created_at, metadata, split, source_run_id, use_source_run_io), {example id}.inputs, {example id}.outputs; answers {example_ids, count}',
      response: created,
    },
    { method: 'patch', path: `${base}/datasets/:id/examples`, tag: 'Datasets', summary: 'Change examples (multipart parts as when adding them): a new version of each' },
    { method: 'patch', path: `${base}/datasets/:id/examples/metadata`, tag: 'Datasets', summary: 'Add examples to a split or remove them from it (array_add / array_remove of dataset_split)' },
    { method: 'post', path: `${base}/datasets/examples/delete`, tag: 'Datasets', summary: 'Delete examples: {example_ids, hard_delete} (a hard delete drops every version)' },
  ];
  return [
    { method: 'post', path: `${prefix}/datasets`, tag: 'Datasets', summary: 'Create a dataset', body: DatasetCreate },
    { method: 'get', path: `${prefix}/datasets`, tag: 'Datasets', summary: 'List datasets, newest first, by ids, name, part of the name, data type and metadata', query: DatasetListQuery },
    { method: 'post', path: `${prefix}/datasets/upload`, tag: 'Datasets', summary: 'Create a dataset from a CSV or JSONL file (multipart: file, input_keys, output_keys, name, description, data_type)' },
    { method: 'post', path: `${prefix}/datasets/comparative`, tag: 'Datasets', summary: 'Record a comparative (pairwise) experiment over experiments of one dataset', body: ComparativeExperimentCreate },
    { method: 'post', path: `${prefix}/datasets/:id/runs`, tag: 'Datasets', summary: "Compare experiments: a page of the dataset's examples, each with every experiment's root run on it (outputs, feedback_stats)", body: ExperimentComparison },
    { method: 'get', path: `${prefix}/datasets/:id`, tag: 'Datasets', summary: 'Get a dataset (example_count, session_count)' },
    { method: 'patch', path: `${prefix}/datasets/:id`, tag: 'Datasets', summary: "Change a dataset's name, description, metadata or schemas", body: DatasetUpdate },
    { method: 'delete', path: `${prefix}/datasets/:id`, tag: 'Datasets', summary: 'Delete a dataset and its examples (its experiments stay)' },
    { method: 'put', path: `${prefix}/datasets/:id/tags`, tag: 'Datasets', summary: 'Point a tag at a version of the dataset', body: DatasetTagUpdate },
    { method: 'get', path: `${prefix}/datasets/:id/version`, tag: 'Datasets', summary: 'A version of the dataset (query as_of or tag): {as_of, tags}' },
    { method: 'get', path: `${prefix}/datasets/:id/versions/diff`, tag: 'Datasets', summary: 'Examples added, modified and removed between two versions (from_version, to_version)' },
    { method: 'get', path: `${prefix}/datasets/:id/splits`, tag: 'Datasets', summary: "The splits of the dataset's examples (at as_of)" },
    { method: 'put', path: `${prefix}/datasets/:id/splits`, tag: 'Datasets', summary: 'Add examples to a split or remove them from it: {split_name, examples, remove}' },
    ...examplePaths(`${prefix}/v1/platform`),
    ...examplePaths(`${prefix}/platform`),
    { method: 'get', path: `${prefix}/examples`, tag: 'Datasets', summary: 'List examples, oldest first, by dataset, ids, splits and metadata, as of a version', query: ExampleListQuery },
    { method: 'post', path: `${prefix}/examples`, tag: 'Datasets', summary: 'Add an example (JSON, with dataset_id)', body: ExampleCreate },
    { method: 'post', path: `${prefix}/examples/bulk`, tag: 'Datasets', summary: 'Add examples of one dataset (a JSON list)' },
    { method: 'patch', path: `${prefix}/examples/bulk`, tag: 'Datasets', summary: 'Change examples (a JSON list with ids)' },
    { method: 'delete', path: `${prefix}/examples`, tag: 'Datasets', summary: 'Delete examples (query example_ids)' },
    { method: 'get', path: `${prefix}/examples/:id`, tag: 'Datasets', summary: 'Get an example (as of a version)' },
    { method: 'patch', path: `${prefix}/examples/:id`, tag: 'Datasets', summary: 'Change an example: a new version of it', body: ExampleUpdate },
    { method: 'delete', path: `${prefix}/examples/:id`, tag: 'Datasets', summary: 'Delete an example (earlier versions keep it)' },
  ];
};

/** Feedback on runs (the langsmith SDK's paths), at the root and again under /api/v1. */
const feedbackOperations = (prefix: string): Operation[] => [
  { method: 'post', path: `${prefix}/feedback`, tag: 'Feedback', summary: 'Give feedback on a run (score, value, comment, correction under a key)', body: FeedbackCreate },
  { method: 'get', path: `${prefix}/feedback`, tag: 'Feedback', summary: 'List feedback, newest first, by runs, keys and source types', query: FeedbackListQuery },
  { method: 'get', path: `${prefix}/feedback/:id`, tag: 'Feedback', summary: 'Get a feedback' },
  { method: 'patch', path: `${prefix}/feedback/:id`, tag: 'Feedback', summary: 'Change a feedback (null clears a field)', body: FeedbackUpdate },
  { method: 'delete', path: `${prefix}/feedback/:id`, tag: 'Feedback', summary: 'Delete a feedback' },
  {
    method: 'post',
    path: `${prefix}/feedback/tokens`,
    tag: 'Feedback',
    summary: 'Make a presigned feedback token: {id, url, expires_at}; its url takes feedback of one key on one run without a key',
    body: FeedbackTokenCreate,
  },
  { method: 'get', path: `${prefix}/feedback/tokens`, tag: 'Feedback', summary: "A run's presigned feedback tokens", query: FeedbackTokenListQuery },
  { method: 'get', path: `${prefix}/feedback/tokens/:token`, tag: 'Feedback', summary: 'Give feedback through a token (query: score, value, comment, correction; no key, any origin)' },
  { method: 'post', path: `${prefix}/feedback/tokens/:token`, tag: 'Feedback', summary: 'Give feedback through a token (JSON body: score, value, comment, correction; no key, any origin)', body: FeedbackWithToken },
];

const usageOperations: Operation[] = [
  { method: 'get', path: '/api/v1/orgs/current/billing/granular-usage', tag: 'Usage', summary: 'Traces per hour, by workspace, project, user or API key', query: GranularUsageQuery },
  {
    method: 'get',
    path: '/api/v1/orgs/current/billing/granular-usage/export',
    tag: 'Usage',
    summary: 'The same usage as CSV',
    query: GranularUsageQuery,
    response: { kind: 'text', description: 'CSV' },
  },
];

const bulkExportOperations: Operation[] = [
  { method: 'post', path: '/api/v1/bulk-exports/destinations', tag: 'Bulk export', summary: 'Create an S3 destination (checked by a test write)', body: DestinationCreate },
  { method: 'get', path: '/api/v1/bulk-exports/destinations', tag: 'Bulk export', summary: 'List destinations' },
  { method: 'get', path: '/api/v1/bulk-exports/destinations/:id', tag: 'Bulk export', summary: 'Get a destination' },
  { method: 'patch', path: '/api/v1/bulk-exports/destinations/:id', tag: 'Bulk export', summary: 'Update a destination', body: DestinationUpdate },
  { method: 'post', path: '/api/v1/bulk-exports', tag: 'Bulk export', summary: "Export a project's runs to Parquet (once or on an interval)", body: BulkExportCreate },
  { method: 'get', path: '/api/v1/bulk-exports', tag: 'Bulk export', summary: 'List bulk exports' },
  { method: 'get', path: '/api/v1/bulk-exports/:id', tag: 'Bulk export', summary: 'Get a bulk export' },
  { method: 'patch', path: '/api/v1/bulk-exports/:id', tag: 'Bulk export', summary: 'Cancel a bulk export', body: BulkExportUpdate },
  { method: 'get', path: '/api/v1/bulk-exports/:id/runs', tag: 'Bulk export', summary: "A bulk export's runs" },
  { method: 'get', path: '/api/v1/bulk-exports/:id/runs/:runId', tag: 'Bulk export', summary: 'One run of a bulk export' },
];

const tenancyOperations: Operation[] = [
  { method: 'get', path: '/api/v1/orgs/current', tag: 'Tenancy', summary: "The key's organization" },
  { method: 'get', path: '/api/v1/workspaces', tag: 'Tenancy', summary: 'Workspaces of the organization' },
  { method: 'post', path: '/api/v1/workspaces', tag: 'Tenancy', summary: 'Create a workspace', body: WorkspaceCreateBody },
  { method: 'get', path: '/api/v1/api-key', tag: 'Tenancy', summary: 'API keys' },
  { method: 'post', path: '/api/v1/api-key', tag: 'Tenancy', summary: 'Create an API key (its secret is shown once)', body: ApiKeyCreateBody },
  { method: 'delete', path: '/api/v1/api-key/:id', tag: 'Tenancy', summary: 'Revoke an API key', response: empty },
];

/** The control plane (X-Api-Key + X-Tenant-Id), at the root and again under /api-host for self-hosted installations. */
const controlPlaneOperations = (prefix: string): Operation[] => [
  { method: 'post', path: `${prefix}/v2/deployments`, tag: 'Control plane', summary: 'Create a deployment from a git repository (its first revision is built and deployed)', body: DeploymentCreate, response: created },
  { method: 'get', path: `${prefix}/v2/deployments`, tag: 'Control plane', summary: 'List deployments', query: DeploymentListQuery },
  { method: 'get', path: `${prefix}/v2/deployments/:id`, tag: 'Control plane', summary: 'Get a deployment' },
  { method: 'patch', path: `${prefix}/v2/deployments/:id`, tag: 'Control plane', summary: 'Update a deployment (a new revision when its source revision config or secrets change)', body: DeploymentPatch },
  { method: 'delete', path: `${prefix}/v2/deployments/:id`, tag: 'Control plane', summary: 'Delete a deployment: its agent server stops, unfinished revisions are INTERRUPTED', response: empty },
  { method: 'get', path: `${prefix}/v2/deployments/:id/revisions`, tag: 'Control plane', summary: "A deployment's revisions, latest first", query: RevisionPageQuery },
  { method: 'get', path: `${prefix}/v2/deployments/:id/revisions/:revisionId`, tag: 'Control plane', summary: 'Get a revision (poll its status)' },
  { method: 'post', path: `${prefix}/v2/deployments/:id/revisions/:revisionId/redeploy`, tag: 'Control plane', summary: 'Redeploy a revision' },
  { method: 'get', path: `${prefix}/v2/deployments/:id/revisions/:revisionId/logs`, tag: 'Control plane', summary: "A revision's build or deploy log (paged)", query: RevisionLogsQuery },
  { method: 'post', path: `${prefix}/v2/auth/providers`, tag: 'Control plane', summary: 'Create an OAuth provider', body: OAuthProviderCreate, response: created },
  { method: 'get', path: `${prefix}/v2/auth/providers`, tag: 'Control plane', summary: 'List OAuth providers' },
  { method: 'get', path: `${prefix}/v2/auth/providers/:providerId`, tag: 'Control plane', summary: 'Get an OAuth provider' },
  { method: 'patch', path: `${prefix}/v2/auth/providers/:providerId`, tag: 'Control plane', summary: 'Update an OAuth provider', body: OAuthProviderUpdate },
  { method: 'delete', path: `${prefix}/v2/auth/providers/:providerId`, tag: 'Control plane', summary: 'Delete an OAuth provider' },
  { method: 'post', path: `${prefix}/v1/integrations`, tag: 'Control plane', summary: 'Register a git host integration (its token is stored encrypted)', body: IntegrationCreate, response: created },
  { method: 'get', path: `${prefix}/v1/integrations`, tag: 'Control plane', summary: 'List git host integrations' },
  { method: 'get', path: `${prefix}/v1/integrations/:id`, tag: 'Control plane', summary: 'Get a git host integration' },
  { method: 'delete', path: `${prefix}/v1/integrations/:id`, tag: 'Control plane', summary: 'Delete a git host integration', response: empty },
  { method: 'post', path: `${prefix}/v2/listeners`, tag: 'Control plane', summary: 'Create a listener (Enterprise, self-hosted)', body: ListenerCreate, response: created },
  { method: 'get', path: `${prefix}/v2/listeners`, tag: 'Control plane', summary: 'List listeners', query: PageQuery },
  { method: 'get', path: `${prefix}/v2/listeners/:id`, tag: 'Control plane', summary: 'Get a listener' },
  { method: 'patch', path: `${prefix}/v2/listeners/:id`, tag: 'Control plane', summary: "Update a listener's compute config", body: ListenerUpdate },
  { method: 'delete', path: `${prefix}/v2/listeners/:id`, tag: 'Control plane', summary: 'Delete a listener', response: empty },
];

const platformSystemOperations: Operation[] = [
  { method: 'get', path: '/ok', tag: 'System', summary: 'Health: 200 while the server and each dependency (postgres, event_bus in `checks`) answer, 503 otherwise' },
  {
    method: 'get',
    path: '/metrics',
    tag: 'System',
    summary: "Prometheus metrics: each deployment's processes, memory, files, database size and connections beside their limits (an organization admin's key)",
    response: { kind: 'text' },
  },
];

const OPERATIONS: Operation[] = [
  ...platformSystemOperations,
  ...referenceOperations,
  ...tracesOperations(''),
  ...tracesOperations('/api/v1'),
  ...runsV2Operations,
  ...feedbackOperations(''),
  ...feedbackOperations('/api/v1'),
  ...datasetsOperations(''),
  ...datasetsOperations('/api/v1'),
  ...usageOperations,
  ...bulkExportOperations,
  ...tenancyOperations,
  ...controlPlaneOperations(''),
  ...controlPlaneOperations('/api-host'),
];

export const platformSurface: Surface = {
  title: 'Agent Platform',
  version: '0.1.0',
  description:
    'The platform API: trace ingestion (the `langsmith` SDK wire) and queries, usage, bulk export to S3 and tenancy. ' +
    'GraphQL is at `/graphql`; each deployment serves its agent server, with its own reference, at `/deployments/<id>/docs`.',
  tags: [
    { name: 'Ingestion', description: 'Trace ingestion, as the langsmith SDK sends it.' },
    { name: 'Traces', description: 'Tracing projects and run queries.' },
    { name: 'Feedback', description: 'Feedback on runs, and presigned feedback urls.' },
    { name: 'Datasets', description: 'Datasets, their examples and versions, and experiments over them compared.' },
    { name: 'Usage', description: 'Metered traces.' },
    { name: 'Bulk export', description: 'Exports of runs to S3 as Parquet.' },
    { name: 'Tenancy', description: 'Organizations, workspaces and API keys.' },
    { name: 'Control plane', description: 'Deployments, revisions, OAuth providers, git integrations and listeners (X-Api-Key and X-Tenant-Id).' },
    { name: 'System', description: 'Health and this reference.' },
  ],
  operations: OPERATIONS,
  apiKeyHeader: 'x-api-key',
};
