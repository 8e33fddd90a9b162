// snake_case JSON for tracing projects, runs, feedback, datasets and examples, as the langsmith SDK reads them.
import type { TracingProject } from '../../generated/prisma/client.js';
import type { DatasetRow, ExampleRow } from '../services/traces/datasets.service.js';
import type { ComparativeExperimentRow, ExampleComparison, ExperimentFeedbackStats } from '../services/traces/experiments.service.js';
import type { ProjectStats } from '../services/traces/projects.service.js';
import type { FeedbackRow, FeedbackTokenRow } from '../services/traces/feedback.service.js';
import type { TraceRunRow } from '../services/traces/queries.service.js';

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
