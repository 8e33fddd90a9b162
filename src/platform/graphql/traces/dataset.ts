// Datasets and experiments: the Dataset type (a Prisma object), its examples (as of a version), its
// experiments with their scores and their comparison example by example; the datasets and dataset
// queries; createDataset and deleteDataset. Through the datasets and experiments services, as REST's.
import type { Dataset, TracingProject } from '../../../generated/prisma/client.js';
import {
  createDataset,
  deleteDataset,
  type ExampleRow,
  getDatasetRecord,
  listDatasetRecords,
  listExamples,
} from '../../services/traces/datasets.service.js';
import { compareExperiments, type ExampleComparison, experimentFeedbackStats } from '../../services/traces/experiments.service.js';
import { listExperimentsOfDatasets } from '../../services/traces/projects.service.js';
import { builder } from '../builder.js';
import { TraceRunRef } from './trace-run.js';
import { TracingProjectRef } from './tracing-project.js';

const ExampleRef = builder.objectRef<ExampleRow>('Example').implement({
  description: 'An example of a dataset (one version of it): inputs, the reference outputs an experiment is scored against, and metadata.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Example ID (UUID): the reference_example_id of the runs that ran it.' }),
    datasetId: t.exposeID('datasetId', { description: 'ID of its dataset.' }),
    inputs: t.expose('inputs', { type: 'JSON', description: 'Inputs given to the target.' }),
    outputs: t.expose('outputs', { type: 'JSON', nullable: true, description: 'Reference outputs.' }),
    metadata: t.expose('metadata', { type: 'JSON', nullable: true, description: 'Metadata; dataset_split lists its splits.' }),
    splits: t.stringList({
      description: 'The splits it is in (train, test…).',
      resolve: (example) => {
        const split = example.metadata?.dataset_split;
        return Array.isArray(split) ? split.map(String) : typeof split === 'string' ? [split] : [];
      },
    }),
    sourceRunId: t.exposeID('sourceRunId', { nullable: true, description: 'The run it was made from, if any.' }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was made.', resolve: (example) => new Date(example.createdAt) }),
    modifiedAt: t.field({ type: 'DateTime', description: 'When this version of it began.', resolve: (example) => new Date(example.modifiedAt) }),
  }),
});

const ExperimentResultRef = builder.objectRef<ExampleComparison['runs'][number]>('ExperimentResult').implement({
  description: "One experiment's run on an example.",
  fields: (t) => ({
    experimentId: t.exposeID('experimentId', { description: 'ID of the experiment (tracing project).' }),
    run: t.field({
      type: TraceRunRef,
      nullable: true,
      description: 'Its root run on the example (outputs, feedbackStats: the evaluators’ scores); null when it did not run it.',
      resolve: (result) => result.run,
    }),
  }),
});

const ExampleComparisonRef = builder.objectRef<ExampleComparison>('ExampleComparison').implement({
  description: 'An example with each compared experiment’s run on it, in the order the experiments were given.',
  fields: (t) => ({
    example: t.field({ type: ExampleRef, description: 'The example.', resolve: (row) => row.example }),
    results: t.field({ type: [ExperimentResultRef], description: 'Each experiment’s run on it.', resolve: (row) => row.runs }),
  }),
});

builder.objectFields(TracingProjectRef, (t) => ({
  referenceDatasetId: t.exposeID('referenceDatasetId', { nullable: true, description: 'The dataset it is an experiment of, if any.' }),
  // One read for the projects of a response (dataloader).
  feedbackStats: t.loadable({
    type: 'JSON',
    description: 'Its runs’ feedback summed up per key: {key: {n, avg, stdev, errors, values}}; an experiment’s scores.',
    load: (projects: TracingProject[], ctx) => experimentFeedbackStats(ctx, projects),
    loaderOptions: { cacheKeyFn: (project) => project.id },
    resolve: (project) => project,
  }),
}));

const DatasetRef = builder.prismaObject('Dataset', {
  description: 'A dataset of examples that experiments (evaluate() from the langsmith SDK) run against.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Dataset ID (UUID).' }),
    name: t.exposeString('name', { description: 'Name, unique in the workspace.' }),
    description: t.exposeString('description', { nullable: true, description: 'Free-text description.' }),
    dataType: t.exposeString('dataType', { description: 'kv, llm or chat.' }),
    metadata: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Client-defined metadata.',
      resolve: (dataset) => ((dataset.extra as { metadata?: unknown } | null)?.metadata ?? null),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was made.' }),
    modifiedAt: t.expose('modifiedAt', { type: 'DateTime', description: 'When it or an example last changed: its latest version.' }),
    exampleCount: t.relationCount('examples', { where: { validTo: null }, description: 'How many examples it holds now.' }),
    examples: t.field({
      type: [ExampleRef],
      description: 'Its examples, oldest first, as of a version (read per dataset: ask it of one dataset at a time).',
      args: {
        asOf: t.arg.string({ description: 'A version: a time (ISO 8601), a tag, or "latest" (the default).' }),
        splits: t.arg.stringList({ description: 'Only examples in one of these splits.' }),
        limit: t.arg.int({ description: 'At most this many (1–1000, default 100).' }),
        offset: t.arg.int({ description: 'Skip this many first.' }),
      },
      resolve: (dataset, args, ctx) =>
        listExamples(ctx, { dataset: dataset.id, asOf: args.asOf, splits: args.splits ?? undefined, limit: args.limit ?? undefined, offset: args.offset ?? undefined }),
    }),
    // One read for the experiments of all the datasets of a response (dataloader).
    experiments: t.loadableList({
      type: TracingProjectRef,
      description: 'Its experiments: tracing projects whose runs ran its examples, oldest first.',
      load: (datasets: Dataset[], ctx) => listExperimentsOfDatasets(ctx, datasets),
      loaderOptions: { cacheKeyFn: (dataset) => dataset.id },
      resolve: (dataset) => dataset,
    }),
    comparison: t.field({
      type: [ExampleComparisonRef],
      description: 'Experiments of this dataset side by side: a page of its examples, each with every experiment’s run on it.',
      args: {
        experimentIds: t.arg.idList({ required: true, description: 'The experiments (1–20) to compare.' }),
        limit: t.arg.int({ description: 'At most this many examples (1–100, default 20).' }),
        offset: t.arg.int({ description: 'Skip this many examples first.' }),
      },
      resolve: (dataset, args, ctx) =>
        compareExperiments(ctx, dataset.id, { sessionIds: args.experimentIds.map(String), limit: args.limit ?? undefined, offset: args.offset ?? undefined }),
    }),
  }),
});

builder.queryFields((t) => ({
  datasets: t.prismaField({
    type: [DatasetRef],
    description: 'Datasets of the workspace, newest first.',
    args: {
      limit: t.arg.int({ description: 'At most this many (1–100, default 100).' }),
      offset: t.arg.int({ description: 'Skip this many first.' }),
    },
    resolve: (query, _root, args, ctx) => listDatasetRecords(ctx, { limit: args.limit, offset: args.offset }, query),
  }),
  dataset: t.prismaField({
    type: DatasetRef,
    description: 'One dataset of the workspace.',
    args: { id: t.arg.id({ required: true, description: 'Dataset ID.' }) },
    resolve: (query, _root, args, ctx) => getDatasetRecord(ctx, String(args.id), query),
  }),
}));

const CreateDatasetInput = builder.inputType('CreateDatasetInput', {
  description: 'A new dataset.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'Name, unique in the workspace.' }),
    description: t.string({ description: 'Free-text description.' }),
    metadata: t.field({ type: 'JSON', description: 'Client-defined metadata.' }),
  }),
});

builder.mutationFields((t) => ({
  createDataset: t.prismaField({
    type: DatasetRef,
    description: 'Creates a dataset (needs workspaces:write).',
    errors: {},
    args: { input: t.arg({ type: CreateDatasetInput, required: true }) },
    resolve: async (query, _root, { input }, ctx) => {
      const created = await createDataset(ctx, {
        name: input.name,
        description: input.description,
        extra: { source: 'graphql', ...(input.metadata ? { metadata: input.metadata } : {}) },
      });
      return getDatasetRecord(ctx, created.id, query);
    },
  }),
  deleteDataset: t.field({
    type: 'Boolean',
    description: 'Deletes a dataset and its examples; its experiments stay (needs workspaces:write).',
    errors: {},
    args: { id: t.arg.id({ required: true, description: 'Dataset ID.' }) },
    resolve: async (_root, { id }, ctx) => {
      await deleteDataset(ctx, String(id));
      return true;
    },
  }),
}));
