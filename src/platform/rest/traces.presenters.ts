// snake_case JSON for tracing projects, runs, feedback, datasets and examples, as the langsmith SDK reads them.
import type { TracingProject } from '../../generated/prisma/client.js';
import type { DatasetRow, ExampleRow } from '../services/traces/datasets.service.js';
import type { ComparativeExperimentRow, ExampleComparison, ExperimentFeedbackStats } from '../services/traces/experiments.service.js';
import type { ProjectStats } from '../services/traces/projects.service.js';
import type { FeedbackRow, FeedbackTokenRow } from '../services/traces/feedback.service.js';
import type { RunV2Row, TraceRunRow } from '../services/traces/queries.service.js';
import type { RunSelectField } from '../services/traces/traces.schemas.js';

export const presentProject = (project: TracingProject, stats?: ProjectStats, feedbackStats?: ExperimentFeedbackStats) => ({
  id: project.id,
  name: project.name,
  description: project.description,
  extra: project.extra ?? null,
  tenant_id: project.workspaceId,
  reference_dataset_id: project.referenceDatasetId,
  start_time: project.startTime.toISOString(),
  end_time: project.endTime?.toISOString() ?? null,
  created_at: project.createdAt.toISOString(),
  ...(stats ? { run_count: stats.runCount, last_run_start_time: stats.lastRunStartTime?.toISOString() ?? null } : {}),
  ...(feedbackStats ? { feedback_stats: feedbackStats } : {}),
});

/** A run; with `select`, only the selected fields (plus id), as the runs query returns them. */
export function presentRun(run: TraceRunRow, select?: string[] | null) {
  const full: Record<string, unknown> = {
    id: run.id,
    name: run.name,
    run_type: run.runType,
    start_time: run.startTime,
    end_time: run.endTime,
    status: run.status,
    inputs: run.inputs ?? null,
    outputs: run.outputs ?? null,
    error: run.error,
    extra: run.extra ?? null,
    events: run.events ?? null,
    serialized: run.serialized ?? null,
    tags: run.tags ?? [],
    trace_id: run.traceId,
    dotted_order: run.dottedOrder,
    parent_run_id: run.parentRunId,
    parent_run_ids: run.parentRunIds ?? [],
    session_id: run.sessionId,
    tenant_id: run.tenantId,
    reference_example_id: run.referenceExampleId,
    is_root: run.isRoot,
    trace_tier: run.traceTier,
    thread_id: run.threadId,
    total_tokens: run.totalTokens,
    prompt_tokens: run.promptTokens,
    completion_tokens: run.completionTokens,
    total_cost: run.totalCost,
    prompt_cost: run.promptCost,
    completion_cost: run.completionCost,
    first_token_time: run.firstTokenTime,
    feedback_stats: run.feedbackStats ?? null,
    app_path: `/o/${run.tenantId}/projects/p/${run.sessionId}/r/${run.id}?trace_id=${run.traceId}&start_time=${run.startTime}`,
  };
  if (!select) return full;
  const picked: Record<string, unknown> = { id: run.id };
  for (const field of select) if (field in full) picked[field] = full[field];
  return picked;
}

/** An ISO time with microseconds (as runs are read) in microseconds since the epoch. */
const microseconds = (iso: string) => Date.parse(iso) * 1000 + Number(/\.\d{3}(\d{3})/.exec(iso)?.[1] ?? 0);

const ERROR_PREVIEW_LENGTH = 500;

/**
 * Each v2 field (`selects`) the platform stores, as LangSmith's v2 runs API names and shapes it
 * (run_type and status in capitals). The others are omitted from every run: inputs and outputs
 * previews, app_path (where the code that made the run lives), attachments, token and cost details,
 * price_model_id, thread_evaluation_time, is_in_dataset, last_queued_at,
 * share_url and ls_user_id.
 */
const RUN_V2_FIELDS: Partial<Record<RunSelectField, [string, (run: RunV2Row) => unknown]>> = {
  ID: ['id', (run) => run.id],
  NAME: ['name', (run) => run.name],
  RUN_TYPE: ['run_type', (run) => run.runType.toUpperCase()],
  STATUS: ['status', (run) => run.status.toUpperCase()],
  START_TIME: ['start_time', (run) => run.startTime],
  END_TIME: ['end_time', (run) => run.endTime],
  LATENCY_SECONDS: ['latency_seconds', (run) => (run.endTime ? (microseconds(run.endTime) - microseconds(run.startTime)) / 1e6 : null)],
  FIRST_TOKEN_TIME: ['first_token_time', (run) => run.firstTokenTime],
  ERROR: ['error', (run) => run.error],
  ERROR_PREVIEW: ['error_preview', (run) => run.error?.slice(0, ERROR_PREVIEW_LENGTH) ?? null],
  EXTRA: ['extra', (run) => run.extra ?? null],
  METADATA: ['metadata', (run) => (run.extra as { metadata?: unknown } | null | undefined)?.metadata ?? null],
  EVENTS: ['events', (run) => run.events ?? null],
  INPUTS: ['inputs', (run) => run.inputs ?? null],
  OUTPUTS: ['outputs', (run) => run.outputs ?? null],
  // The traced component's configuration: what the SDK sends as `serialized`.
  MANIFEST: ['manifest', (run) => run.serialized ?? null],
  PARENT_RUN_IDS: ['parent_run_ids', (run) => run.parentRunIds ?? []],
  PROJECT_ID: ['project_id', (run) => run.sessionId],
  TRACE_ID: ['trace_id', (run) => run.traceId],
  THREAD_ID: ['thread_id', (run) => run.threadId],
  DOTTED_ORDER: ['dotted_order', (run) => run.dottedOrder],
  IS_ROOT: ['is_root', (run) => run.isRoot],
  REFERENCE_EXAMPLE_ID: ['reference_example_id', (run) => run.referenceExampleId],
  // The dataset of the run's project (an experiment's).
  REFERENCE_DATASET_ID: ['reference_dataset_id', (run) => run.referenceDatasetId ?? null],
  TOTAL_TOKENS: ['total_tokens', (run) => run.totalTokens],
  PROMPT_TOKENS: ['prompt_tokens', (run) => run.promptTokens],
  COMPLETION_TOKENS: ['completion_tokens', (run) => run.completionTokens],
  TOTAL_COST: ['total_cost', (run) => run.totalCost],
  PROMPT_COST: ['prompt_cost', (run) => run.promptCost],
  COMPLETION_COST: ['completion_cost', (run) => run.completionCost],
  TAGS: ['tags', (run) => run.tags ?? []],
  FEEDBACK_STATS: ['feedback_stats', (run) => run.feedbackStats ?? null],
};

/** A run as LangSmith's v2 runs API returns it: id and the selected fields the platform stores. */
export function presentRunV2(run: RunV2Row, selects: readonly RunSelectField[]) {
  const presented: Record<string, unknown> = { id: run.id };
  for (const field of selects) {
    const entry = RUN_V2_FIELDS[field];
    if (entry) presented[entry[0]] = entry[1](run);
  }
  return presented;
}

/** Where the console shows a run (`base`: where the platform answers): its trace's page with the run selected. */
export const presentRunUrl = (base: string, run: TraceRunRow) => ({ url: `${base}/#/traces/${run.traceId}?run=${run.id}` });

/** A feedback as the langsmith SDK reads it (FeedbackSchema). */
export const presentFeedback = (feedback: FeedbackRow) => ({
  id: feedback.id,
  created_at: feedback.createdAt,
  modified_at: feedback.modifiedAt,
  run_id: feedback.runId,
  trace_id: feedback.traceId,
  session_id: feedback.sessionId,
  key: feedback.key,
  score: feedback.score,
  value: feedback.value ?? null,
  comment: feedback.comment,
  correction: feedback.correction ?? null,
  feedback_source: { user_id: feedback.userId, ...(feedback.feedbackSource as Record<string, unknown> | null) },
  feedback_group_id: feedback.feedbackGroupId,
  comparative_experiment_id: feedback.comparativeExperimentId,
  extra: null,
});

/** A presigned feedback token (FeedbackIngestToken). */
export const presentFeedbackToken = (token: FeedbackTokenRow) => ({ id: token.id, url: token.url, expires_at: token.expiresAt.toISOString() });

/** A dataset as the langsmith SDK reads it (Dataset). */
export const presentDataset = (dataset: DatasetRow) => ({
  id: dataset.id,
  name: dataset.name,
  description: dataset.description,
  data_type: dataset.dataType,
  inputs_schema_definition: dataset.inputsSchemaDefinition ?? null,
  outputs_schema_definition: dataset.outputsSchemaDefinition ?? null,
  externally_managed: false,
  transformations: [],
  metadata: (dataset.extra?.metadata as Record<string, unknown> | undefined) ?? null,
  tenant_id: dataset.workspaceId,
  created_at: dataset.createdAt,
  modified_at: dataset.modifiedAt,
  example_count: dataset.exampleCount,
  session_count: dataset.sessionCount,
  last_session_start_time: dataset.lastSessionStartTime,
});

/** An example (a version of it) as the langsmith SDK reads it (Example). */
export const presentExample = (example: ExampleRow) => ({
  id: example.id,
  dataset_id: example.datasetId,
  inputs: example.inputs,
  outputs: example.outputs,
  metadata: example.metadata,
  source_run_id: example.sourceRunId,
  created_at: example.createdAt,
  modified_at: example.modifiedAt,
  attachment_urls: null,
  runs: [],
});

/** An example with each compared experiment's run on it (the runs of experiments that did not run it are left out). */
export const presentExampleComparison = (comparison: ExampleComparison) => ({
  ...presentExample(comparison.example),
  runs: comparison.runs.flatMap(({ run }) => (run ? [presentRun(run)] : [])),
});

/** A comparative experiment as the langsmith SDK reads it (ComparativeExperiment). */
export const presentComparativeExperiment = (comparative: ComparativeExperimentRow) => ({
  id: comparative.id,
  name: comparative.name,
  description: comparative.description,
  tenant_id: comparative.workspaceId,
  reference_dataset_id: comparative.referenceDatasetId,
  extra: comparative.extra,
  experiments_info: comparative.experiments,
  feedback_stats: null,
  created_at: comparative.createdAt,
  modified_at: comparative.modifiedAt,
});
