// Input schemas of bulk export, named after the API nouns, and the vocabulary shared by its layers.
import { z } from 'zod';

/** Statuses as the real API sends them (TitleCase); input is matched case-insensitively. */
const EXPORT_STATUSES = ['Created', 'Running', 'Completed', 'Failed', 'Cancelled', 'TimedOut', 'IntervalScheduled'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];
/** Statuses after which nothing more happens to an export or a run. */
/** Exportable run fields (spec "Exportable run fields"), in column order. */
export const EXPORTABLE_FIELDS = [
  'id',
  'tenant_id',
  'session_id',
  'trace_id',
  'parent_run_id',
  'parent_run_ids',
  'reference_example_id',
  'name',
  'run_type',
  'start_time',
  'end_time',
  'status',
  'is_root',
  'dotted_order',
  'trace_tier',
  'inputs',
  'outputs',
  'error',
  'extra',
  'events',
  'tags',
  'feedback_stats',
  'total_tokens',
  'prompt_tokens',
  'completion_tokens',
  'total_cost',
  'prompt_cost',
  'completion_cost',
  'first_token_time',
] as const;
export type ExportableField = (typeof EXPORTABLE_FIELDS)[number];

const FORMAT_VERSIONS = ['v1', 'v2_beta'] as const;
export type FormatVersion = (typeof FORMAT_VERSIONS)[number];
const COMPRESSIONS = ['gzip', 'snappy', 'zstandard', 'none'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

const httpUrl = z
  .string()
  .refine((value) => {
    try {
      return ['http:', 'https:'].includes(new URL(value).protocol);
    } catch {
      return false;
    }
  }, 'endpoint_url must be an http(s) URL');

export const DestinationConfig = z.object({
  bucket_name: z.string().trim().min(1).max(255),
  prefix: z.string().max(1024).default(''),
  region: z.string().trim().min(1).max(64).nullish(),
  endpoint_url: httpUrl.nullish(),
  include_bucket_in_prefix: z.boolean().default(false),
});
export type DestinationConfigValue = z.output<typeof DestinationConfig>;

export const DestinationCredentials = z.object({
  access_key_id: z.string().min(1),
  secret_access_key: z.string().min(1),
  session_token: z.string().min(1).nullish(),
});
export type DestinationCredentialsValue = z.output<typeof DestinationCredentials>;

export const DestinationCreate = z.object({
  destination_type: z.literal('s3'),
  display_name: z.string().trim().min(1).max(200),
  config: DestinationConfig,
  credentials: DestinationCredentials.nullish(),
});
export type DestinationCreateInput = z.input<typeof DestinationCreate>;

/** PATCH a destination: rotate its credentials (validated again), optionally rename it. */
export const DestinationUpdate = z.object({
  display_name: z.string().trim().min(1).max(200).optional(),
  credentials: DestinationCredentials,
});
export type DestinationUpdateInput = z.input<typeof DestinationUpdate>;

const timestamp = z.iso.datetime({ offset: true }).transform((value) => new Date(value));
const caseInsensitive = <T extends readonly [string, ...string[]]>(values: T) =>
  z.string().transform((value, issue) => {
    const match = values.find((candidate) => candidate.toLowerCase() === value.toLowerCase());
    if (!match) {
      issue.addIssue({ code: 'custom', message: `expected one of ${values.join(', ')}` });
      return z.NEVER;
    }
    return match as T[number];
  });

export const BulkExportCreate = z
  .object({
    bulk_export_destination_id: z.uuid(),
    session_id: z.uuid(),
    start_time: timestamp,
    end_time: timestamp.nullish(),
    filter: z.string().max(10_000).nullish(),
    format_version: caseInsensitive(FORMAT_VERSIONS).default('v1'),
    compression: caseInsensitive(COMPRESSIONS).default('gzip'),
    export_fields: z
      .array(z.enum(EXPORTABLE_FIELDS, { error: (issue) => `unknown export field ${JSON.stringify(issue.input)}; exportable: ${EXPORTABLE_FIELDS.join(', ')}` }))
      .min(1)
      .nullish(),
    interval_hours: z.number().int().min(1).max(168).nullish(),
  })
  .superRefine((body, issue) => {
    if (body.interval_hours != null && body.end_time != null) {
      issue.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time must be omitted for a scheduled export (interval_hours)' });
    }
    if (body.interval_hours == null && body.end_time == null) {
      issue.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time is required unless interval_hours is given' });
    }
    if (body.end_time != null && body.end_time <= body.start_time) {
      issue.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time must be after start_time' });
    }
  });
export type BulkExportCreateInput = z.input<typeof BulkExportCreate>;

export const BulkExportUpdate = z.object({ status: caseInsensitive(['Cancelled'] as const) });
export type BulkExportUpdateInput = z.input<typeof BulkExportUpdate>;
