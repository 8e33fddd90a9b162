// Experiments over a dataset, as the langsmith SDK's evaluate() makes them: a tracing project linked to
// the dataset (reference_dataset_id) whose root runs each ran one example (reference_example_id), with
// evaluators' scores as feedback on those runs. Here: an experiment's scores summed up per key, and
// experiments compared example by example (each example's run in each experiment, with its scores).
import type { ServiceContext } from '../../../context.js';
import { AppError } from '../../../errors.js';
import type { TracingProject } from '../../../generated/prisma/client.js';
import { newId } from '../../../ids.js';
import { parseInput } from '../../../validate.js';
import { getDataset, listExamples, type ExampleRow } from './datasets.service.js';
import { type ComparativeExperimentRow, type ExperimentFeedbackStats, insertComparativeExperiment, selectExperimentFeedbackStats } from './experiments.store.js';
import { getProjects } from './projects.service.js';
import { queryRuns, type TraceRunRow } from './queries.service.js';
import { ComparativeExperimentCreate, type ComparativeExperimentCreateInput, ExperimentComparison, type ExperimentComparisonInput } from './traces.schemas.js';
import { traceWorkspace } from './workspace.js';

export type { ComparativeExperimentRow, ExperimentFeedbackStats } from './experiments.store.js';

/**
 * The feedback of projects' runs summed up per key ({key: {n, avg, stdev, errors, values}}), by
 * project id, in one read; projects of another workspace than the viewer's trace workspace have `{}`.
 * Needs workspaces:read.
 */
export async function experimentFeedbackStats(ctx: ServiceContext, projects: readonly Pick<TracingProject, 'id' | 'workspaceId'>[]): Promise<ExperimentFeedbackStats[]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const own = projects.filter((project) => project.workspaceId === workspaceId).map((project) => project.id);
  const stats = own.length ? await selectExperimentFeedbackStats(ctx.db.pool, workspaceId, own) : new Map<string, ExperimentFeedbackStats>();
  return projects.map((project) => stats.get(project.id) ?? {});
}

/** One example with the root run of each compared experiment that ran it (in the order the experiments were given; null where one did not). */
export type ExampleComparison = { example: ExampleRow; runs: { experimentId: string; run: TraceRunRow | null }[] };

/** The most runs one comparison page reads (examples × experiments). */
const COMPARISON_RUNS_MAX = 2_000;

/**
 * Experiments of a dataset side by side: a page of the dataset's current examples (oldest first),
 * each with every experiment's root run on it (its outputs, and its feedback_stats: the evaluators'
 * scores). Needs workspaces:read. Throws NOT_FOUND for a dataset or experiment the workspace does not
 * hold, VALIDATION_FAILED for bad input or an experiment of another dataset.
 */
export async function compareExperiments(ctx: ServiceContext, datasetId: string, input: ExperimentComparisonInput): Promise<ExampleComparison[]> {
  const query = parseInput(ExperimentComparison, input, 'body');
  const dataset = await getDataset(ctx, datasetId);
  const experiments = await getProjects(ctx, query.sessionIds);
  experiments.forEach((experiment, index) => {
    const id = query.sessionIds[index]!;
    if (!experiment) throw AppError.notFound(`Project ${id} not found.`);
    if (experiment.referenceDatasetId !== dataset.id) {
      throw new AppError('VALIDATION_FAILED', `body.session_ids.${index}: not an experiment of dataset ${dataset.id}`, [
        { loc: ['body', 'session_ids', index], msg: `not an experiment of dataset ${dataset.id}`, type: 'value_error' },
      ]);
    }
  });
  const examples = await listExamples(ctx, { dataset: dataset.id, id: query.exampleIds ?? undefined, limit: query.limit, offset: query.offset });
  if (!examples.length) return [];
  const sessions = [...new Set(query.sessionIds)];
  // The first (newest) run of an experiment on an example is the one shown (a repetition ran it again).
  const byKey = new Map<string, TraceRunRow>();
  let cursor: string | null = null;
  let read = 0;
  do {
    const page = await queryRuns(ctx, { session: sessions, referenceExample: examples.map((e) => e.id), isRoot: true, limit: 1000, cursor });
    for (const run of page.runs) {
      const key = `${run.sessionId}\n${run.referenceExampleId}`;
      if (!byKey.has(key)) byKey.set(key, run);
    }
    read += page.runs.length;
    cursor = page.nextCursor;
  } while (cursor && read < COMPARISON_RUNS_MAX);
  return examples.map((example) => ({
    example,
    runs: query.sessionIds.map((experimentId) => ({ experimentId, run: byKey.get(`${experimentId}\n${example.id}`) ?? null })),
  }));
}

/**
 * Records a comparative experiment: experiments of one dataset that pairwise evaluators score against
 * each other (their feedback names it). Needs workspaces:write. Throws NOT_FOUND for a dataset or
 * experiment the workspace does not hold, VALIDATION_FAILED for bad input or an experiment of another
 * dataset, CONFLICT for an id already used.
 */
export async function createComparativeExperiment(ctx: ServiceContext, input: ComparativeExperimentCreateInput): Promise<ComparativeExperimentRow> {
  const comparative = parseInput(ComparativeExperimentCreate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  const dataset = await getDataset(ctx, comparative.referenceDatasetId);
  const experiments = await getProjects(ctx, comparative.experimentIds);
  experiments.forEach((experiment, index) => {
    if (!experiment) throw AppError.notFound(`Project ${comparative.experimentIds[index]} not found.`);
    if (experiment.referenceDatasetId !== dataset.id) {
      throw new AppError('VALIDATION_FAILED', `body.experiment_ids.${index}: not an experiment of dataset ${dataset.id}`, [
        { loc: ['body', 'experiment_ids', index], msg: `not an experiment of dataset ${dataset.id}`, type: 'value_error' },
      ]);
    }
  });
  const row = await insertComparativeExperiment(ctx.db.pool, {
    id: comparative.id ?? newId(),
    workspaceId,
    name: comparative.name,
    description: comparative.description ?? null,
    referenceDatasetId: dataset.id,
    experimentIds: comparative.experimentIds,
    extra: comparative.extra ?? null,
    createdAt: comparative.createdAt ?? null,
  });
  if (!row) throw AppError.conflict(`Comparative experiment ${comparative.id} already exists.`);
  return row;
}
