// Bulk export in GraphQL: destinations (never their credentials), exports and their runs, the
// mutations (create, rotate credentials, cancel) and the live exportProgress subscription, all over
// the same services as REST.
import { builder } from '../builder.js';
import * as destinations from '../../services/exports/destinations.service.js';
import * as exportsService from '../../services/exports/exports.service.js';
import type { RunResult } from '../../services/exports/exports.service.js';
import { getProjects } from '../../services/traces/projects.service.js';
import { TracingProjectRef } from '../traces/tracing-project.js';

const result = (metadata: unknown): RunResult | undefined => (metadata as { result?: RunResult } | null)?.result;

builder.prismaObject('ExportDestination', {
  description: 'An S3-compatible bucket that bulk exports write Parquet files to. Its credentials are stored encrypted and never returned.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Destination ID; the bulk_export_destination_id of an export.' }),
    destinationType: t.exposeString('destinationType', { description: 'The object store kind (`s3`, any S3-compatible store).' }),
    displayName: t.exposeString('displayName', { description: 'Human label.' }),
    config: t.expose('config', { type: 'JSON', description: 'bucket_name, prefix, region, endpoint_url, include_bucket_in_prefix.' }),
    hasCredentials: t.boolean({
      description: 'Whether credentials are stored (false: the installation’s default credential chain is used).',
      resolve: (destination) => destination.credentials !== null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed (e.g. credentials rotated).' }),
  }),
});

const BulkExportRunRef = builder.prismaObject('BulkExportRun', {
  description: 'One UTC day partition of a bulk export, exported (and retried, resuming from its last file) on its own.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Run ID.' }),
    status: t.exposeString('status', { description: 'Created, Running, Completed, Failed, Cancelled or TimedOut.' }),
    startTime: t.expose('startTime', { type: 'DateTime', description: 'Start of the partition (inclusive).' }),
    endTime: t.expose('endTime', { type: 'DateTime', description: 'End of the partition (exclusive).' }),
    retryNumber: t.exposeInt('retryNumber', { description: 'Retries so far.' }),
    errors: t.expose('errors', { type: 'JSON', description: 'Errors by attempt, keyed retry_<n>.' }),
    rowsWritten: t.int({ description: 'Rows exported so far (as of the last finished file).', resolve: (run) => result(run.metadata)?.rows_written ?? 0 }),
    exportedFiles: t.stringList({ description: 'Object keys of the Parquet files written so far.', resolve: (run) => result(run.metadata)?.exported_files ?? [] }),
    exportPath: t.string({ nullable: true, description: 'The folder the files are written to.', resolve: (run) => result(run.metadata)?.export_path ?? null }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true, description: 'When it finished.' }),
  }),
});

builder.prismaObject('BulkExport', {
  description: 'An export of one tracing project’s runs in a time range to a destination, as Parquet files: one-off, or scheduled (IntervalScheduled) spawning one export per window.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Export ID.' }),
    status: t.exposeString('status', { description: 'Created, Running, Completed, Failed, Cancelled, TimedOut, or IntervalScheduled for a schedule.' }),
    destinationId: t.exposeID('destinationId', { nullable: true, description: 'The destination (null once deleted).' }),
    sessionId: t.exposeID('sessionId', { description: 'The tracing project exported.' }),
    // One read for the projects of every export in a response (dataloader).
    project: t.loadable({
      type: TracingProjectRef,
      nullable: true,
      description: 'The tracing project exported (null once deleted).',
      load: (ids: string[], ctx) => getProjects(ctx, ids),
      resolve: (bulkExport) => bulkExport.sessionId,
    }),
    destination: t.relation('destination', { nullable: true, description: 'The destination it writes to (null once deleted).' }),
    startTime: t.expose('startTime', { type: 'DateTime', description: 'Start of the range (inclusive), on the runs’ start time.' }),
    endTime: t.expose('endTime', { type: 'DateTime', nullable: true, description: 'End of the range (exclusive); none for a schedule.' }),
    filter: t.exposeString('filter', { nullable: true, description: 'Filter-language expression narrowing the runs.' }),
    formatVersion: t.exposeString('formatVersion', { description: 'v1 or v2_beta (typed columns, Hive layout).' }),
    compression: t.exposeString('compression', { description: 'gzip, snappy, zstandard or none.' }),
    exportFields: t.exposeStringList('exportFields', { description: 'Columns written; empty: all exportable fields.' }),
    intervalHours: t.exposeInt('intervalHours', { nullable: true, description: 'Window of a scheduled export, in hours.' }),
    sourceBulkExportId: t.exposeID('sourceBulkExportId', { nullable: true, description: 'The scheduled export that spawned this one.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true, description: 'When it finished.' }),
    runs: t.relation('runs', { description: 'Its runs, one per UTC day.', query: { orderBy: [{ startTime: 'asc' }, { id: 'asc' }] } }),
  }),
});

const ExportProgressRef = builder.objectRef<exportsService.ExportProgress>('ExportProgress').implement({
  description: 'The state of an export and of each of its runs, sent on every change.',
  fields: (t) => ({
    exportId: t.id({ description: 'Export ID.', resolve: (progress) => progress.export.id }),
    status: t.string({ description: 'The export’s status.', resolve: (progress) => progress.export.status }),
    rowsWritten: t.int({ description: 'Rows exported so far, all runs.', resolve: (progress) => progress.runs.reduce((sum, run) => sum + (result(run.metadata)?.rows_written ?? 0), 0) }),
    runs: t.field({ type: [BulkExportRunRef], description: 'Each run: status, rows written and files.', resolve: (progress) => progress.runs }),
  }),
});

builder.queryFields((t) => ({
  exportDestinations: t.prismaField({
    type: ['ExportDestination'],
    description: 'Export destinations of the workspace (X-Tenant-Id), newest first.',
    resolve: (query, _root, _args, ctx) => destinations.listDestinations(ctx, query),
  }),
  bulkExports: t.prismaField({
    type: ['BulkExport'],
    description: 'Bulk exports of the workspace (X-Tenant-Id), newest first.',
    resolve: (query, _root, _args, ctx) => exportsService.listExports(ctx, query),
  }),
  bulkExport: t.prismaField({
    type: 'BulkExport',
    description: 'One bulk export by ID.',
    args: { id: t.arg.id({ required: true, description: 'Export ID.' }) },
    resolve: (query, _root, args, ctx) => exportsService.getExport(ctx, String(args.id), query),
  }),
}));

const ExportDestinationConfigInput = builder.inputType('ExportDestinationConfigInput', {
  description: 'Where in which bucket to write.',
  fields: (t) => ({
    bucketName: t.string({ required: true, description: 'Bucket name.' }),
    prefix: t.string({ description: 'Root prefix in the bucket.' }),
    region: t.string({ description: 'Region (AWS S3).' }),
    endpointUrl: t.string({ description: 'http(s) endpoint of another S3-compatible store.' }),
    includeBucketInPrefix: t.boolean({ description: 'Also put the bucket name at the start of every key (default false).' }),
  }),
});

const ExportCredentialsInput = builder.inputType('ExportCredentialsInput', {
  description: 'Access keys for the bucket; stored encrypted, never returned.',
  fields: (t) => ({
    accessKeyId: t.string({ required: true, description: 'Access key ID.' }),
    secretAccessKey: t.string({ required: true, description: 'Secret access key.' }),
    sessionToken: t.string({ description: 'Session token of temporary credentials.' }),
  }),
});

const credentialsBody = (input: { accessKeyId: string; secretAccessKey: string; sessionToken?: string | null }) => ({
  access_key_id: input.accessKeyId,
  secret_access_key: input.secretAccessKey,
  session_token: input.sessionToken ?? undefined,
});

const CreateBulkExportInput = builder.inputType('CreateBulkExportInput', {
  description: 'A new bulk export: one-off (endTime) or scheduled (intervalHours).',
  fields: (t) => ({
    destinationId: t.id({ required: true, description: 'Destination ID.' }),
    sessionId: t.id({ required: true, description: 'Tracing project ID.' }),
    startTime: t.field({ type: 'DateTime', required: true, description: 'Start (inclusive).' }),
    endTime: t.field({ type: 'DateTime', description: 'End (exclusive); omit for a scheduled export.' }),
    filter: t.string({ description: 'Filter-language expression.' }),
    formatVersion: t.string({ description: 'v1 (default) or v2_beta.' }),
    compression: t.string({ description: 'gzip (default), snappy, zstandard or none.' }),
    exportFields: t.stringList({ description: 'Only these exportable fields.' }),
    intervalHours: t.int({ description: 'Make it scheduled: one export per window of this many hours (1–168).' }),
  }),
});

builder.mutationFields((t) => ({
  createExportDestination: t.prismaField({
    type: 'ExportDestination',
    description: 'Creates a destination after a test write to its bucket (needs workspaces:write).',
    errors: {},
    args: {
      displayName: t.arg.string({ required: true, description: 'Human label.' }),
      config: t.arg({ type: ExportDestinationConfigInput, required: true, description: 'Bucket and prefix.' }),
      credentials: t.arg({ type: ExportCredentialsInput, description: 'Access keys (self-hosted may omit them).' }),
    },
    resolve: (_query, _root, args, ctx) =>
      destinations.createDestination(ctx, {
        destination_type: 's3',
        display_name: args.displayName,
        config: {
          bucket_name: args.config.bucketName,
          prefix: args.config.prefix ?? undefined,
          region: args.config.region,
          endpoint_url: args.config.endpointUrl,
          include_bucket_in_prefix: args.config.includeBucketInPrefix ?? undefined,
        },
        credentials: args.credentials ? credentialsBody(args.credentials) : undefined,
      }),
  }),
  rotateExportDestinationCredentials: t.prismaField({
    type: 'ExportDestination',
    description: 'Replaces a destination’s credentials after validating them with a test write.',
    errors: {},
    args: {
      id: t.arg.id({ required: true, description: 'Destination ID.' }),
      credentials: t.arg({ type: ExportCredentialsInput, required: true, description: 'The new access keys.' }),
    },
    resolve: (_query, _root, args, ctx) => destinations.updateDestination(ctx, String(args.id), { credentials: credentialsBody(args.credentials) }),
  }),
  createBulkExport: t.prismaField({
    type: 'BulkExport',
    description: 'Creates a bulk export (Plus and Enterprise plans; needs workspaces:write).',
    errors: {},
    args: { input: t.arg({ type: CreateBulkExportInput, required: true }) },
    resolve: (_query, _root, { input }, ctx) =>
      exportsService.createExport(ctx, {
        bulk_export_destination_id: String(input.destinationId),
        session_id: String(input.sessionId),
        start_time: input.startTime.toISOString(),
        end_time: input.endTime?.toISOString(),
        filter: input.filter,
        format_version: input.formatVersion ?? undefined,
        compression: input.compression ?? undefined,
        export_fields: input.exportFields as never,
        interval_hours: input.intervalHours,
      }),
  }),
  cancelBulkExport: t.prismaField({
    type: 'BulkExport',
    description: 'Cancels a bulk export; a cancelled export cannot be restarted. Cancelling a schedule leaves its spawned exports alone.',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Export ID.' }) },
    resolve: (query, _root, args, ctx) => exportsService.updateExport(ctx, String(args.id), { status: 'Cancelled' }, query),
  }),
}));

builder.subscriptionField('exportProgress', (t) =>
  t.field({
    type: ExportProgressRef,
    description: 'The export’s status, and each run’s status, rows written and files, now and on every change until it finishes.',
    args: { exportId: t.arg.id({ required: true, description: 'Export ID.' }) },
    subscribe: (_root, args, ctx) => exportsService.watchExportProgress(ctx, String(args.exportId)),
    resolve: (progress) => progress,
  }),
);
