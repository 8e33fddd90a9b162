// Input schemas of the traces area (projects and run queries), shared by REST and GraphQL. Run payloads
// themselves are normalised by hand in platform/ingest/ingest.schemas.ts: that path is hot (10k+ runs/s) and needs
// locations like `post[3].start_time` that match the wire.
import { z } from 'zod';

const projectName = z.string().trim().min(1, 'must not be empty').max(500);
const timestamp = z.union([z.iso.datetime({ offset: true, local: true }), z.iso.date()]).transform((value) => new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value.slice(10)) || value.length === 10 ? value : `${value}Z`));
const jsonObject = z.record(z.string(), z.unknown());

export const ProjectCreate = z.object({
  name: projectName,
  description: z.string().max(10_000).nullish(),
  extra: jsonObject.nullish(),
  referenceDatasetId: z.uuid().nullish(),
  startTime: timestamp.nullish(),
  endTime: timestamp.nullish(),
  /** Return the existing project of that name instead of failing with CONFLICT (updating given fields). */
  upsert: z.boolean().default(false),
});
export type ProjectCreateInput = z.input<typeof ProjectCreate>;

export const ProjectUpdate = z.object({
  name: projectName.nullish(),
  description: z.string().max(10_000).nullish(),
  extra: jsonObject.nullish(),
  endTime: timestamp.nullish(),
});
export type ProjectUpdateInput = z.input<typeof ProjectUpdate>;

export const ProjectList = z.object({
  ids: z.array(z.uuid()).optional(),
  name: z.string().optional(),
  nameContains: z.string().max(500).optional(),
  /** Only experiments of this dataset. */
  referenceDataset: z.uuid().optional(),
  /** Only projects of no dataset (true) or only experiments (false). */
  referenceFree: z.boolean().optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
  includeStats: z.boolean().default(false),
});
export type ProjectListInput = z.input<typeof ProjectList>;

const uuidList = z.union([z.uuid(), z.array(z.uuid())]).transform((value) => (Array.isArray(value) ? value : [value]));

export const RUN_TYPES = ['tool', 'chain', 'llm', 'retriever', 'embedding', 'prompt', 'parser'] as const;

export const RunQuery = z.object({
  session: uuidList.nullish(),
  id: uuidList.nullish(),
  trace: z.uuid().nullish(),
  parentRun: z.uuid().nullish(),
  referenceExample: uuidList.nullish(),
  runType: z.enum(RUN_TYPES).nullish(),
  isRoot: z.boolean().nullish(),
  /** 1 selects root runs (the SDK's older spelling of is_root). */
  executionOrder: z.number().int().min(1).nullish(),
  error: z.boolean().nullish(),
  startTime: timestamp.nullish(),
  endTime: timestamp.nullish(),
  /** Full-text-ish search over inputs, outputs, error and name (like the filter's `search`). */
  query: z.string().max(2000).nullish(),
  filter: z.string().max(10_000).nullish(),
  traceFilter: z.string().max(10_000).nullish(),
  treeFilter: z.string().max(10_000).nullish(),
  select: z.array(z.string()).nullish(),
  order: z.enum(['asc', 'desc']).nullish(),
  cursor: z.string().max(500).nullish(),
  limit: z.number().int().min(1).max(1000).nullish(),
});
export type RunQueryInput = z.input<typeof RunQuery>;

/**
 * The fields a v2 run can have, as LangSmith's v2 runs API names them (`selects`). Which of them the
 * platform stores, and what each maps to, is RUN_V2_FIELDS in traces.presenters (the rest are omitted).
 */
const RUN_SELECT_FIELDS = [
  'ID', 'NAME', 'RUN_TYPE', 'STATUS', 'START_TIME', 'END_TIME', 'LATENCY_SECONDS', 'FIRST_TOKEN_TIME', 'ERROR', 'ERROR_PREVIEW',
  'EXTRA', 'METADATA', 'EVENTS', 'INPUTS', 'INPUTS_PREVIEW', 'OUTPUTS', 'OUTPUTS_PREVIEW', 'MANIFEST', 'PARENT_RUN_IDS',
  'PROJECT_ID', 'TRACE_ID', 'THREAD_ID', 'DOTTED_ORDER', 'IS_ROOT', 'REFERENCE_EXAMPLE_ID', 'REFERENCE_DATASET_ID',
  'TOTAL_TOKENS', 'PROMPT_TOKENS', 'COMPLETION_TOKENS', 'TOTAL_COST', 'PROMPT_COST', 'COMPLETION_COST', 'PROMPT_TOKEN_DETAILS',
  'COMPLETION_TOKEN_DETAILS', 'PROMPT_COST_DETAILS', 'COMPLETION_COST_DETAILS', 'PRICE_MODEL_ID', 'TAGS', 'APP_PATH',
  'ATTACHMENTS', 'THREAD_EVALUATION_TIME', 'IS_IN_DATASET', 'LAST_QUEUED_AT', 'SHARE_URL', 'FEEDBACK_STATS', 'LS_USER_ID',
] as const;
export type RunSelectField = (typeof RUN_SELECT_FIELDS)[number];

const runSelects = z.array(z.enum(RUN_SELECT_FIELDS)).max(RUN_SELECT_FIELDS.length * 2);
/** What LangSmith does not do here is refused rather than ignored, so an answer never pretends to it. */
const unsupported = (what: string) =>
  z
    .unknown()
    .refine((value) => value === undefined || value === null || value === false, `${what} is not supported by this server`)
    .optional();

/**
 * The v2 runs query (the SDK's client.runs.query), in its wire names: runs of some projects (or of a
 * dataset's experiments) that started within [min_start_time, max_start_time], newest first, a page
 * of page_size at a time.
 */
export const RunQueryV2 = z
  .object({
    project_ids: z.array(z.uuid()).min(1).max(100).nullish(),
    reference_dataset_id: z.uuid().nullish(),
    /** Inclusive; a day before max_start_time by default (LangSmith: a day before now); for a dataset, its oldest experiment's start. */
    min_start_time: timestamp.nullish(),
    /** Inclusive; now by default. */
    max_start_time: timestamp.nullish(),
    ids: z.array(z.uuid()).max(1000).nullish(),
    trace_id: z.uuid().nullish(),
    reference_examples: z.array(z.uuid()).max(1000).nullish(),
    run_type: z.enum(['TOOL', 'CHAIN', 'LLM', 'RETRIEVER', 'EMBEDDING', 'PROMPT', 'PARSER']).nullish(),
    is_root: z.boolean().nullish(),
    has_error: z.boolean().nullish(),
    filter: z.string().max(10_000).nullish(),
    trace_filter: z.string().max(10_000).nullish(),
    tree_filter: z.string().max(10_000).nullish(),
    /** Only `id` without it. */
    selects: runSelects.nullish(),
    cursor: z.string().max(500).nullish(),
    page_size: z.number().int().min(1).max(1000).nullish(),
    ai_search: unsupported('ai_search'),
    include_subtree_usage: unsupported('include_subtree_usage'),
    min_feedback_modified_at: unsupported('min_feedback_modified_at'),
    max_feedback_modified_at: unsupported('max_feedback_modified_at'),
  })
  .refine((query) => (query.project_ids == null) !== (query.reference_dataset_id == null), {
    path: ['project_ids'],
    message: 'give exactly one of project_ids and reference_dataset_id',
  })
  .refine((query) => !query.min_start_time || !query.max_start_time || query.min_start_time <= query.max_start_time, {
    path: ['min_start_time'],
    message: 'must not be after max_start_time',
  });
export type RunQueryV2Input = z.input<typeof RunQueryV2>;

const oneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item)]).transform((value) => (Array.isArray(value) ? value : [value]) as z.output<T>[]);

/** One run of a project (the SDK's client.runs.retrieve), from query parameters (`selects` repeated). */
export const RunRetrieveV2 = z.object({
  project_id: z.uuid(),
  selects: oneOrMany(z.enum(RUN_SELECT_FIELDS)).pipe(runSelects).optional(),
  /** The run's start time: accepted (the SDK may send it), not needed (the run's id finds its partition). */
  start_time: z.iso.datetime({ offset: true, local: true }).optional(),
});
export type RunRetrieveV2Input = z.input<typeof RunRetrieveV2>;

/** Where a run is seen (the SDK's client.runs.getURL): the run's project and trace, as query parameters. */
export const RunUrlV2 = z.object({
  project_id: z.uuid(),
  trace_id: z.uuid(),
  /** The run's start time: accepted, not needed. */
  start_time: z.iso.datetime({ offset: true, local: true }).optional(),
});
export type RunUrlV2Input = z.input<typeof RunUrlV2>;

/** A feedback score: a number, or a boolean (stored as 1 or 0). */
const feedbackScore = z.union([z.number().finite(), z.boolean().transform((value) => (value ? 1 : 0))]).nullish();
const FEEDBACK_KEY_MAX = 180;
const feedbackKey = z.string().trim().min(1, 'must not be empty').max(FEEDBACK_KEY_MAX);
const feedbackComment = z.string().max(10_000).nullish();

export const FeedbackCreate = z.object({
  /** Chosen by the client (the SDK sends a UUID v7); a new one otherwise. */
  id: z.uuid().nullish(),
  /** Feedback on a project rather than a run (the SDK's projectId) is not taken: a run is required. */
  runId: z.uuid(),
  key: feedbackKey,
  score: feedbackScore,
  value: z.unknown().optional(),
  comment: feedbackComment,
  correction: z.unknown().optional(),
  feedbackSource: z.object({ type: z.string().max(50).nullish(), metadata: jsonObject.nullish() }).nullish(),
  feedbackGroupId: z.uuid().nullish(),
  comparativeExperimentId: z.uuid().nullish(),
});
export type FeedbackCreateInput = z.input<typeof FeedbackCreate>;

export const FeedbackUpdate = z.object({
  score: feedbackScore,
  value: z.unknown().optional(),
  comment: feedbackComment,
  correction: z.unknown().optional(),
});
export type FeedbackUpdateInput = z.input<typeof FeedbackUpdate>;

const textList = (max: number) => z.union([z.string().max(max), z.array(z.string().max(max)).max(100)]).transform((value) => (Array.isArray(value) ? value : [value]));

export const FeedbackList = z.object({
  run: uuidList.nullish(),
  key: textList(FEEDBACK_KEY_MAX).nullish(),
  source: textList(50).nullish(),
  limit: z.coerce.number().int().min(1).max(100).default(100),
  offset: z.coerce.number().int().min(0).max(100_000).default(0),
});
export type FeedbackListInput = z.input<typeof FeedbackList>;

/** The longest a presigned feedback token lives. */
const TOKEN_MAX_MS = 365 * 24 * 3600 * 1000;

export const FeedbackTokenCreate = z
  .object({
    runId: z.uuid(),
    feedbackKey,
    /** When it expires, or how long after now (the SDK sends one of the two; 3 hours without either). */
    expiresAt: timestamp.nullish(),
    expiresIn: z.object({ days: z.number().min(0).nullish(), hours: z.number().min(0).nullish(), minutes: z.number().min(0).nullish() }).nullish(),
    feedbackConfig: jsonObject.nullish(),
  })
  .transform(({ expiresAt, expiresIn, ...rest }) => {
    const inMs = expiresIn ? (((expiresIn.days ?? 0) * 24 + (expiresIn.hours ?? 0)) * 60 + (expiresIn.minutes ?? 0)) * 60_000 : 3 * 3600_000;
    return { ...rest, expiresAt: expiresAt ?? new Date(Date.now() + inMs) };
  })
  .refine((token) => token.expiresAt.getTime() > Date.now(), { path: ['expires_at'], message: 'must be in the future' })
  .refine((token) => token.expiresAt.getTime() <= Date.now() + TOKEN_MAX_MS, { path: ['expires_at'], message: 'must be within a year' });
export type FeedbackTokenCreateInput = z.input<typeof FeedbackTokenCreate>;

/**
 * Feedback through a token's url: a JSON body (POST), or query parameters (GET), whose values are
 * text: a score that reads as a number (or true/false) is one, and a value that reads as JSON is that.
 */
export const FeedbackWithToken = z.object({
  score: z.preprocess((value) => (typeof value === 'string' ? textScore(value) : value), feedbackScore),
  value: z.unknown().optional(),
  comment: feedbackComment,
  correction: z.unknown().optional(),
  metadata: jsonObject.nullish(),
});
export type FeedbackWithTokenInput = z.input<typeof FeedbackWithToken>;

function textScore(text: string): unknown {
  if (text === 'true' || text === 'false') return text === 'true';
  const number = Number(text);
  return text.trim() !== '' && Number.isFinite(number) ? number : text;
}

const datasetName = z.string().trim().min(1, 'must not be empty').max(500);
const DATA_TYPES = ['kv', 'llm', 'chat'] as const;
/** A JSON object given as query text (the SDK sends metadata filters so). */
const jsonObjectText = z.string().max(10_000).transform((text, ctx) => {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  ctx.addIssue({ code: 'custom', message: 'expected a JSON object' });
  return z.NEVER;
});

export const DatasetCreate = z.object({
  id: z.uuid().nullish(),
  name: datasetName,
  description: z.string().max(10_000).nullish(),
  dataType: z.enum(DATA_TYPES).nullish(),
  inputsSchemaDefinition: jsonObject.nullish(),
  outputsSchemaDefinition: jsonObject.nullish(),
  /** The SDK's extra: {source, metadata}. */
  extra: jsonObject.nullish(),
  createdAt: timestamp.nullish(),
});
export type DatasetCreateInput = z.input<typeof DatasetCreate>;

export const DatasetUpdate = z.object({
  name: datasetName.nullish(),
  description: z.string().max(10_000).nullish(),
  metadata: jsonObject.nullish(),
  inputsSchemaDefinition: jsonObject.nullish(),
  outputsSchemaDefinition: jsonObject.nullish(),
});
export type DatasetUpdateInput = z.input<typeof DatasetUpdate>;

export const DatasetList = z.object({
  id: uuidList.nullish(),
  name: z.string().max(500).nullish(),
  nameContains: z.string().max(500).nullish(),
  dataType: z.enum(DATA_TYPES).nullish(),
  metadata: jsonObjectText.nullish(),
  limit: z.coerce.number().int().min(1).max(100).default(100),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
export type DatasetListInput = z.input<typeof DatasetList>;

/** A dataset version: a time, or a tag's name ("latest" is now). */
const datasetVersion = z.string().trim().min(1).max(200);

/** A time kept as text (microseconds, which a Date drops, kept): a dataset's versions are transaction times. */
const preciseTimestamp = z.iso.datetime({ offset: true, local: true }).transform((value) => (/[zZ]|[+-]\d\d:?\d\d$/.test(value.slice(10)) ? value : `${value}Z`));

export const DatasetTagUpdate = z.object({ asOf: preciseTimestamp, tag: z.string().trim().min(1, 'must not be empty').max(200) });
export type DatasetTagUpdateInput = z.input<typeof DatasetTagUpdate>;

export const DatasetVersionRead = z
  .object({ asOf: datasetVersion.nullish(), tag: datasetVersion.nullish() })
  .refine((query) => (query.asOf == null) !== (query.tag == null), { message: 'give exactly one of as_of and tag' });

export const DatasetVersionDiff = z.object({ fromVersion: datasetVersion, toVersion: datasetVersion });

const splitList = z.union([z.string().trim().min(1).max(200), z.array(z.string().trim().min(1).max(200)).max(100)]).transform((value) => (Array.isArray(value) ? value : [value]));

/** The most examples one request writes. */
export const EXAMPLES_PER_REQUEST_MAX = 10_000;

export const DatasetSplitsUpdate = z.object({
  splitName: z.string().trim().min(1, 'must not be empty').max(200),
  exampleIds: z.array(z.uuid()).max(EXAMPLES_PER_REQUEST_MAX),
  remove: z.boolean().default(false),
});
export type DatasetSplitsUpdateInput = z.input<typeof DatasetSplitsUpdate>;

export const ExampleCreate = z
  .object({
    id: z.uuid().nullish(),
    inputs: jsonObject.nullish(),
    outputs: jsonObject.nullish(),
    metadata: jsonObject.nullish(),
    split: splitList.nullish(),
    createdAt: timestamp.nullish(),
    sourceRunId: z.uuid().nullish(),
    /** Take inputs and outputs from the source run. */
    useSourceRunIo: z.boolean().nullish(),
    useSourceRunAttachments: z.array(z.string()).nullish(),
  })
  .refine((example) => example.inputs != null || (example.useSourceRunIo && example.sourceRunId), {
    path: ['inputs'],
    message: 'required (unless use_source_run_io with a source_run_id)',
  });
export type ExampleCreateInput = z.input<typeof ExampleCreate>;

export const ExampleUpdate = z.object({
  id: z.uuid(),
  inputs: jsonObject.nullish(),
  outputs: jsonObject.nullish(),
  metadata: jsonObject.nullish(),
  split: splitList.nullish(),
  datasetId: z.uuid().nullish(),
});
export type ExampleUpdateInput = z.input<typeof ExampleUpdate>;

export const ExampleList = z.object({
  dataset: z.uuid().nullish(),
  id: uuidList.nullish(),
  asOf: datasetVersion.nullish(),
  splits: splitList.nullish(),
  metadata: jsonObjectText.nullish(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
export type ExampleListInput = z.input<typeof ExampleList>;

export const ExperimentComparison = z.object({
  sessionIds: z.array(z.uuid()).min(1).max(20),
  exampleIds: z.array(z.uuid()).max(1000).nullish(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
export type ExperimentComparisonInput = z.input<typeof ExperimentComparison>;

export const ComparativeExperimentCreate = z.object({
  id: z.uuid().nullish(),
  name: z.string().trim().min(1, 'must not be empty').max(500),
  description: z.string().max(10_000).nullish(),
  experimentIds: z.array(z.uuid()).min(1).max(20),
  referenceDatasetId: z.uuid(),
  createdAt: timestamp.nullish(),
  extra: jsonObject.nullish(),
});
export type ComparativeExperimentCreateInput = z.input<typeof ComparativeExperimentCreate>;
