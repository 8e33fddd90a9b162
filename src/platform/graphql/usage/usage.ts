// Organization.usage: the granular-usage records, through the same service function as the REST API.
import { builder } from '../builder.js';
import { getGranularUsage, type UsageDimensions, type UsageRecord, type UsageReport, type UsageStride } from '../../services/usage/usage.service.js';

const UsageGroupByEnum = builder.enumType('UsageGroupBy', {
  description: 'What usage records are grouped by, besides the time bucket.',
  values: {
    WORKSPACE: { value: 'workspace', description: 'One record per workspace and bucket.' },
    PROJECT: { value: 'project', description: 'One record per tracing project and bucket.' },
    USER: { value: 'user', description: 'One record per user who sent traces, and bucket.' },
    API_KEY: { value: 'api_key', description: 'One record per API key that sent traces, and bucket.' },
  } as const,
});

const UsageStrideRef = builder.objectRef<UsageStride>('UsageStride').implement({
  description: 'Size of the time buckets, chosen from the length of the range.',
  fields: (t) => ({
    days: t.exposeInt('days', { description: 'Days per bucket (0 for hourly buckets).' }),
    hours: t.exposeInt('hours', { description: 'Hours per bucket (0 for buckets of whole days).' }),
  }),
});

const UsageDimensionsRef = builder.objectRef<UsageDimensions>('UsageDimensions').implement({
  description: 'What a usage record counts: only the fields of the requested groupBy are set.',
  fields: (t) => ({
    workspaceId: t.string({ nullable: true, description: 'Workspace ID (groupBy WORKSPACE).', resolve: (d) => d.workspaceId ?? null }),
    workspaceName: t.string({ nullable: true, description: 'Workspace name (groupBy WORKSPACE).', resolve: (d) => d.workspaceName ?? null }),
    projectId: t.string({ nullable: true, description: 'Tracing project ID (groupBy PROJECT).', resolve: (d) => d.projectId ?? null }),
    projectName: t.string({ nullable: true, description: 'Tracing project name (groupBy PROJECT).', resolve: (d) => d.projectName ?? null }),
    userId: t.string({ nullable: true, description: 'User ID, null for traces sent without a user (groupBy USER).', resolve: (d) => d.userId ?? null }),
    userEmail: t.string({ nullable: true, description: 'User email (groupBy USER).', resolve: (d) => d.userEmail ?? null }),
    apiKeyShortKey: t.string({ nullable: true, description: 'Display form of the API key (groupBy API_KEY).', resolve: (d) => d.apiKeyShortKey ?? null }),
  }),
});

const UsageRecordRef = builder.objectRef<UsageRecord>('UsageRecord').implement({
  description: 'The traces of one time bucket and one workspace, project, user or API key.',
  fields: (t) => ({
    timeBucket: t.expose('timeBucket', { type: 'DateTime', description: 'Start of the bucket.' }),
    timeBucketEnd: t.expose('timeBucketEnd', { type: 'DateTime', description: 'End of the bucket (start plus the stride).' }),
    dimensions: t.field({ type: UsageDimensionsRef, description: 'What the record counts.', resolve: (record) => record.dimensions }),
    traces: t.exposeInt('traces', { description: 'Traces (root runs) that started in the bucket.' }),
  }),
});

const UsageReportRef = builder.objectRef<UsageReport>('UsageReport').implement({
  description: 'Trace counts over a time range, bucketed by the stride; buckets without traces are left out.',
  fields: (t) => ({
    stride: t.field({ type: UsageStrideRef, description: 'Bucket size.', resolve: (report) => report.stride }),
    usage: t.field({ type: [UsageRecordRef], description: 'Records in bucket order.', resolve: (report) => report.usage }),
  }),
});

builder.prismaObjectField('Organization', 'usage', (t) =>
  t.field({
    type: UsageReportRef,
    description:
      'Traces per time bucket in the given workspaces, grouped by workspace, project, user or API key (needs organization:read and read access to each workspace).',
    args: {
      startTime: t.arg({ type: 'DateTime', required: true, description: 'Start of the range.' }),
      endTime: t.arg({ type: 'DateTime', required: true, description: 'End of the range (after startTime).' }),
      workspaceIds: t.arg.idList({ required: true, description: 'Workspaces to count.' }),
      groupBy: t.arg({ type: UsageGroupByEnum, description: 'Grouping; WORKSPACE by default.' }),
    },
    resolve: (org, args, ctx) =>
      getGranularUsage(
        ctx,
        { startTime: args.startTime, endTime: args.endTime, workspaceIds: args.workspaceIds.map(String), groupBy: args.groupBy ?? 'workspace' },
        org.id,
      ),
  }),
);
