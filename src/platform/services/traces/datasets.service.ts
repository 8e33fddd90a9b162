// Datasets and their examples, as the langsmith SDK makes and reads them: create, read (by id or
// name), list, update, delete; examples created (from runs too), listed, read, updated and deleted;
// versions (a time: every write is one) with tags, read as of a version, and diffed; splits.
// Datasets live in the viewer's trace workspace: another workspace's key finds none of them. Reads
// need workspaces:read, writes workspaces:write.
import type pg from 'pg';
import type { z } from 'zod';
import type { ServiceContext } from '../../../context.js';
import { withTransaction } from '../../../db.js';
import { AppError } from '../../../errors.js';
import type { Dataset, Prisma } from '../../../generated/prisma/client.js';
import { isUuid, newId } from '../../../ids.js';
import { parseInput } from '../../../validate.js';
import {
  type DatasetRow,
  deleteDatasetRow,
  diffVersions,
  endExampleVersions,
  type ExampleInsert,
  type ExampleRow,
  findDataset,
  findDatasetRecords,
  findDatasetTag,
  findExample,
  insertDataset,
  insertExamples,
  lockCurrentExamples,
  lockDataset,
  purgeExamples,
  replaceExampleVersions,
  selectDatasets,
  selectExamples,
  selectSplits,
  tagsOfVersion,
  touchDataset,
  writeTime,
  updateDatasetRow,
  upsertDatasetTag,
  versionAt,
} from './datasets.store.js';
import { getRun } from './queries.service.js';
import {
  DatasetCreate,
  type DatasetCreateInput,
  DatasetList,
  type DatasetListInput,
  DatasetSplitsUpdate,
  type DatasetSplitsUpdateInput,
  DatasetTagUpdate,
  type DatasetTagUpdateInput,
  DatasetUpdate,
  type DatasetUpdateInput,
  DatasetVersionDiff,
  DatasetVersionRead,
  ExampleCreate,
  type ExampleCreateInput,
  ExampleList,
  type ExampleListInput,
  EXAMPLES_PER_REQUEST_MAX,
  ExampleUpdate,
  type ExampleUpdateInput,
} from './traces.schemas.js';
import { traceWorkspace } from './workspace.js';

export type { DatasetRow, ExampleRow } from './datasets.store.js';

const datasetNotFound = (id: string) => AppError.notFound(`Dataset ${id} not found.`);
const exampleNotFound = (id: string) => AppError.notFound(`Example ${id} not found.`);

/**
 * Creates a dataset in the viewer's trace workspace. Needs workspaces:write. Throws VALIDATION_FAILED
 * for bad input, CONFLICT when the workspace has a dataset of that name (or id).
 */
export async function createDataset(ctx: ServiceContext, input: DatasetCreateInput): Promise<DatasetRow> {
  const dataset = parseInput(DatasetCreate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  const row = await insertDataset(ctx.db.pool, {
    id: dataset.id ?? newId(),
    workspaceId,
    name: dataset.name,
    description: dataset.description ?? null,
    dataType: dataset.dataType ?? 'kv',
    inputsSchemaDefinition: dataset.inputsSchemaDefinition ?? null,
    outputsSchemaDefinition: dataset.outputsSchemaDefinition ?? null,
    extra: dataset.extra ?? null,
    createdAt: dataset.createdAt ?? null,
  });
  if (!row) throw AppError.conflict(`A dataset named "${dataset.name}" already exists.`);
  return row;
}

/**
 * Creates a dataset with examples in one transaction (an uploaded CSV's rows). Needs
 * workspaces:write; throws as createDataset and createExamples.
 */
export async function createDatasetWithExamples(ctx: ServiceContext, input: DatasetCreateInput, examples: ExampleCreateInput[]): Promise<DatasetRow> {
  const dataset = parseInput(DatasetCreate, input, 'body');
  const parsed = parseExamples(examples);
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  return withTransaction(ctx.db, async (client) => {
    const row = await insertDataset(client, {
      id: newId(),
      workspaceId,
      name: dataset.name,
      description: dataset.description ?? null,
      dataType: dataset.dataType ?? 'kv',
      inputsSchemaDefinition: null,
      outputsSchemaDefinition: null,
      extra: dataset.extra ?? null,
      createdAt: null,
    });
    if (!row) throw AppError.conflict(`A dataset named "${dataset.name}" already exists.`);
    await storeExamples(ctx, client, workspaceId, row.id, parsed);
    return (await findDataset(client, workspaceId, { id: row.id }))!;
  });
}

/** One dataset of the viewer's trace workspace. Needs workspaces:read; NOT_FOUND otherwise. */
export async function getDataset(ctx: ServiceContext, id: string): Promise<DatasetRow> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  return ownDataset(ctx.db.pool, workspaceId, id);
}

async function ownDataset(db: pg.Pool | pg.PoolClient, workspaceId: string, id: string): Promise<DatasetRow> {
  const row = isUuid(id) ? await findDataset(db, workspaceId, { id }) : undefined;
  if (!row) throw datasetNotFound(id);
  return row;
}

/**
 * Datasets of the viewer's trace workspace, newest first, by ids, exact name, part of the name, data
 * type and metadata (datasets whose metadata holds the given keys and values), an offset page. Needs
 * workspaces:read; VALIDATION_FAILED for bad input.
 */
export async function listDatasets(ctx: ServiceContext, input: DatasetListInput): Promise<DatasetRow[]> {
  const query = parseInput(DatasetList, input, 'query');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  return selectDatasets(ctx.db.pool, workspaceId, {
    ids: query.id ?? undefined,
    name: query.name ?? undefined,
    nameContains: query.nameContains ?? undefined,
    dataType: query.dataType ?? undefined,
    metadata: query.metadata ?? undefined,
    limit: query.limit,
    offset: query.offset,
  });
}

/**
 * Changes a dataset's name, description, metadata or schemas (null clears one). Needs
 * workspaces:write. Throws NOT_FOUND, VALIDATION_FAILED, CONFLICT for a name another dataset has.
 */
export async function updateDataset(ctx: ServiceContext, id: string, input: DatasetUpdateInput): Promise<DatasetRow> {
  const change = parseInput(DatasetUpdate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  return withTransaction(ctx.db, async (client) => {
    if (!isUuid(id) || !(await lockDataset(client, workspaceId, id))) throw datasetNotFound(id);
    const outcome = await updateDatasetRow(client, workspaceId, id, {
      name: change.name ?? undefined,
      description: change.description,
      metadata: change.metadata,
      inputsSchemaDefinition: change.inputsSchemaDefinition,
      outputsSchemaDefinition: change.outputsSchemaDefinition,
    });
    if (outcome === 'renamed-onto-another') throw AppError.conflict(`A dataset named "${change.name}" already exists.`);
    return (await findDataset(client, workspaceId, { id }))!;
  });
}

/**
 * Deletes a dataset with its examples and tags; its experiments (tracing projects) stay, with their
 * runs and feedback. Needs workspaces:write; NOT_FOUND otherwise.
 */
export async function deleteDataset(ctx: ServiceContext, id: string): Promise<void> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  if (!isUuid(id) || !(await deleteDatasetRow(ctx.db.pool, workspaceId, id))) throw datasetNotFound(id);
}

/**
 * Points a tag at a version of a dataset (moving it from another). Needs workspaces:write. Throws
 * NOT_FOUND, VALIDATION_FAILED (a version before the dataset existed too).
 */
export async function tagDatasetVersion(ctx: ServiceContext, id: string, input: DatasetTagUpdateInput): Promise<void> {
  const tag = parseInput(DatasetTagUpdate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  const dataset = await ownDataset(ctx.db.pool, workspaceId, id);
  if (Date.parse(tag.asOf) < Date.parse(dataset.createdAt) - 1) {
    throw new AppError('VALIDATION_FAILED', 'body.as_of: before the dataset was made', [{ loc: ['body', 'as_of'], msg: 'before the dataset was made', type: 'value_error' }]);
  }
  await upsertDatasetTag(ctx.db.pool, dataset.id, tag.tag, tag.asOf);
}

/**
 * A version of a dataset: the latest change at or before `asOf`, or the one a tag points at, with the
 * tags on it. Needs workspaces:read. Throws NOT_FOUND (an unknown tag too), VALIDATION_FAILED.
 */
export async function readDatasetVersion(ctx: ServiceContext, id: string, input: { asOf?: string | null; tag?: string | null }): Promise<{ asOf: string; tags: string[] }> {
  const query = parseInput(DatasetVersionRead, input, 'query');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const dataset = await ownDataset(ctx.db.pool, workspaceId, id);
  const at = (await versionTime(ctx.db.pool, dataset, query.asOf ?? query.tag!)) ?? dataset.modifiedAt;
  const version = await versionAt(ctx.db.pool, dataset.id, at);
  return { asOf: version, tags: await tagsOfVersion(ctx.db.pool, dataset.id, version) };
}

/**
 * The time a version names: a timestamp, a tag's time, or undefined for "latest" (the current
 * examples). NOT_FOUND for an unknown tag.
 */
async function versionTime(pool: pg.Pool, dataset: DatasetRow, version: string): Promise<string | undefined> {
  if (version === 'latest') return undefined;
  if (/^\d{4}-\d\d-\d\d([T ][\d:.]+)?([zZ]|[+-]\d\d(:?\d\d)?)?$/.test(version) && !Number.isNaN(Date.parse(version))) {
    return /[zZ]|[+-]\d\d(:?\d\d)?$/.test(version.slice(10)) || version.length === 10 ? version : `${version}Z`;
  }
  const tagged = await findDatasetTag(pool, dataset.id, version);
  if (!tagged) throw AppError.notFound(`Dataset ${dataset.id} has no version tagged "${version}".`);
  return tagged;
}

/**
 * The examples added, modified and removed between two versions of a dataset (times or tags). Needs
 * workspaces:read. Throws NOT_FOUND, VALIDATION_FAILED.
 */
export async function diffDatasetVersions(ctx: ServiceContext, id: string, input: { fromVersion?: string; toVersion?: string }): Promise<{ added: string[]; modified: string[]; removed: string[] }> {
  const query = parseInput(DatasetVersionDiff, input, 'query');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const dataset = await ownDataset(ctx.db.pool, workspaceId, id);
  const now = new Date().toISOString();
  const from = (await versionTime(ctx.db.pool, dataset, query.fromVersion)) ?? now;
  const to = (await versionTime(ctx.db.pool, dataset, query.toVersion)) ?? now;
  return diffVersions(ctx.db.pool, dataset.id, from, to);
}

/** The splits of a dataset's examples (at a version). Needs workspaces:read; NOT_FOUND otherwise. */
export async function listDatasetSplits(ctx: ServiceContext, id: string, asOf?: string): Promise<string[]> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  const dataset = await ownDataset(ctx.db.pool, workspaceId, id);
  const at = asOf ? await versionTime(ctx.db.pool, dataset, asOf) : undefined;
  return selectSplits(ctx.db.pool, workspaceId, dataset.id, at);
}

/**
 * Adds examples of a dataset to a split, or removes them from it (their metadata's dataset_split):
 * a new version of each. Needs workspaces:write. Throws NOT_FOUND for the dataset or an example not in
 * it, VALIDATION_FAILED for bad input.
 */
export async function updateDatasetSplits(ctx: ServiceContext, id: string, input: DatasetSplitsUpdateInput): Promise<void> {
  const { splitName, exampleIds, remove } = parseInput(DatasetSplitsUpdate, input, 'body');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  await withTransaction(ctx.db, async (client) => {
    if (!isUuid(id) || !(await lockDataset(client, workspaceId, id))) throw datasetNotFound(id);
    const current = await currentExamples(client, workspaceId, id, exampleIds);
    const at = await writeTime(client);
    await replaceExampleVersions(
      client,
      workspaceId,
      current.map((example) => {
        const splits = splitsOf(example.metadata).filter((split) => split !== splitName);
        return { ...example, metadata: { ...example.metadata, dataset_split: remove ? splits : [...splits, splitName] } };
      }),
      at,
    );
    await touchDataset(client, id, at);
  });
}

const splitsOf = (metadata: Record<string, unknown> | null): string[] => {
  const split = metadata?.dataset_split;
  return Array.isArray(split) ? split.filter((s): s is string => typeof s === 'string') : typeof split === 'string' ? [split] : [];
};

async function currentExamples(client: pg.PoolClient, workspaceId: string, datasetId: string | null, ids: string[]): Promise<ExampleRow[]> {
  const unique = [...new Set(ids)];
  const current = await lockCurrentExamples(client, workspaceId, datasetId, unique);
  if (current.length < unique.length) {
    const found = new Set(current.map((example) => example.id));
    throw exampleNotFound(unique.find((exampleId) => !found.has(exampleId))!);
  }
  return current;
}

type ParsedExample = z.output<typeof ExampleCreate>;

function parseExamples(inputs: ExampleCreateInput[]): ParsedExample[] {
  if (inputs.length > EXAMPLES_PER_REQUEST_MAX) throw AppError.badRequest(`At most ${EXAMPLES_PER_REQUEST_MAX} examples a request.`);
  return inputs.map((input, index) => parseInput(ExampleCreate, input, `examples.${index}`));
}

/**
 * Adds examples to a dataset of the viewer's trace workspace, in one transaction (one new version of
 * the dataset); returns their ids in the order given. An example made from a run (`sourceRunId`)
 * records it, and with `useSourceRunIo` takes its inputs and outputs. Needs workspaces:write. Throws
 * NOT_FOUND for the dataset or a source run, VALIDATION_FAILED for bad input, CONFLICT for an example
 * id already used in the workspace.
 */
export async function createExamples(ctx: ServiceContext, datasetId: string, inputs: ExampleCreateInput[]): Promise<string[]> {
  const examples = parseExamples(inputs);
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  return withTransaction(ctx.db, async (client) => {
    if (!isUuid(datasetId) || !(await lockDataset(client, workspaceId, datasetId))) throw datasetNotFound(datasetId);
    return storeExamples(ctx, client, workspaceId, datasetId, examples);
  });
}

async function storeExamples(ctx: ServiceContext, client: pg.PoolClient, workspaceId: string, datasetId: string, examples: ParsedExample[]): Promise<string[]> {
  const at = await writeTime(client);
  const rows: ExampleInsert[] = [];
  for (const example of examples) {
    let { inputs, outputs } = example;
    if (example.sourceRunId) {
      // The run must be the workspace's (NOT_FOUND otherwise); its inputs and outputs when asked.
      const run = await getRun(ctx, example.sourceRunId);
      if (example.useSourceRunIo) {
        inputs = (run.inputs as Record<string, unknown> | null) ?? {};
        outputs = (run.outputs as Record<string, unknown> | null) ?? null;
      }
    }
    const splits = example.split ?? undefined;
    rows.push({
      id: example.id ?? newId(),
      inputs: inputs ?? {},
      outputs: outputs ?? null,
      metadata: splits ? { ...example.metadata, dataset_split: splits } : (example.metadata ?? null),
      sourceRunId: example.sourceRunId ?? null,
      // Examples of one write keep the order given (a microsecond apart): lists are by creation time.
      createdAt: example.createdAt?.toISOString() ?? addMicroseconds(at, rows.length),
    });
  }
  const duplicate = rows.find((row, index) => rows.findIndex((other) => other.id === row.id) !== index);
  if (duplicate) throw AppError.conflict(`Example ${duplicate.id} is given twice.`);
  const { taken } = await insertExamples(client, workspaceId, datasetId, rows, at);
  if (taken.length) throw AppError.conflict(`Example ${taken[0]} already exists.`);
  await touchDataset(client, datasetId, at);
  return rows.map((row) => row.id);
}

/** An ISO time with microseconds ("…HH:MM:SS.ffffffZ") plus `n` microseconds. */
function addMicroseconds(iso: string, n: number): string {
  const micros = Number(iso.slice(20, 26)) + n;
  const whole = new Date(Date.parse(iso.slice(0, 19) + 'Z') + Math.floor(micros / 1_000_000) * 1000);
  return `${whole.toISOString().slice(0, 19)}.${String(micros % 1_000_000).padStart(6, '0')}Z`;
}

/**
 * Changes examples (the fields given; their splits replace the old ones): a new version of each, in
 * one transaction. With `datasetId`, every example must be in that dataset. Needs workspaces:write.
 * Throws NOT_FOUND for an example the workspace (or dataset) does not hold, VALIDATION_FAILED.
 */
export async function updateExamples(ctx: ServiceContext, datasetId: string | null, inputs: ExampleUpdateInput[]): Promise<string[]> {
  if (inputs.length > EXAMPLES_PER_REQUEST_MAX) throw AppError.badRequest(`At most ${EXAMPLES_PER_REQUEST_MAX} examples a request.`);
  const updates = inputs.map((input, index) => parseInput(ExampleUpdate, input, `examples.${index}`));
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  if (datasetId !== null && !isUuid(datasetId)) throw datasetNotFound(datasetId);
  return withTransaction(ctx.db, async (client) => {
    if (datasetId !== null && !(await lockDataset(client, workspaceId, datasetId))) throw datasetNotFound(datasetId);
    const current = new Map((await currentExamples(client, workspaceId, datasetId, updates.map((u) => u.id))).map((e) => [e.id, e]));
    const at = await writeTime(client);
    const versions = new Map<string, ExampleRow>();
    for (const update of updates) {
      const base = versions.get(update.id) ?? current.get(update.id)!;
      if (update.datasetId && update.datasetId !== base.datasetId) throw exampleNotFound(update.id);
      const metadata = update.metadata !== undefined ? update.metadata : base.metadata;
      const split = update.split ?? undefined;
      versions.set(update.id, {
        ...base,
        inputs: update.inputs ?? base.inputs,
        outputs: update.outputs !== undefined ? update.outputs : base.outputs,
        metadata: split ? { ...metadata, dataset_split: split } : metadata,
      });
    }
    await replaceExampleVersions(client, workspaceId, [...versions.values()], at);
    for (const changed of new Set([...versions.values()].map((v) => v.datasetId))) await touchDataset(client, changed, at);
    return [...versions.keys()];
  });
}

/**
 * Deletes examples: later versions of their datasets lack them, earlier ones keep them; `hard` drops
 * every version. Needs workspaces:write. Throws NOT_FOUND when one is not the workspace's.
 */
export async function deleteExamples(ctx: ServiceContext, ids: string[], options: { hard?: boolean } = {}): Promise<void> {
  if (ids.length > EXAMPLES_PER_REQUEST_MAX) throw AppError.badRequest(`At most ${EXAMPLES_PER_REQUEST_MAX} examples a request.`);
  const invalid = ids.find((id) => !isUuid(id));
  if (invalid !== undefined) throw exampleNotFound(invalid);
  const workspaceId = await traceWorkspace(ctx, 'workspaces:write');
  await withTransaction(ctx.db, async (client) => {
    if (options.hard) {
      const datasets = await purgeExamples(client, workspaceId, ids);
      if (!datasets.length && ids.length) throw exampleNotFound(ids[0]!);
      const at = await writeTime(client);
      for (const datasetId of datasets) await touchDataset(client, datasetId, at);
      return;
    }
    // Locked before the time is taken (see writeTime).
    await currentExamples(client, workspaceId, null, ids);
    const at = await writeTime(client);
    for (const datasetId of await endExampleVersions(client, workspaceId, ids, at)) await touchDataset(client, datasetId, at);
  });
}

/** One example of the viewer's trace workspace (as of a version). Needs workspaces:read; NOT_FOUND otherwise. */
export async function getExample(ctx: ServiceContext, id: string, asOf?: string): Promise<ExampleRow> {
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  if (!isUuid(id)) throw exampleNotFound(id);
  let at: string | undefined;
  if (asOf && asOf !== 'latest') {
    const current = await findExample(ctx.db.pool, workspaceId, id);
    if (!current) throw exampleNotFound(id);
    at = await versionTime(ctx.db.pool, await ownDataset(ctx.db.pool, workspaceId, current.datasetId), asOf);
  }
  const example = await findExample(ctx.db.pool, workspaceId, id, at);
  if (!example) throw exampleNotFound(id);
  return example;
}

/**
 * Examples of the viewer's trace workspace, oldest first: of a dataset (NOT_FOUND when the workspace
 * has none of that id), by ids, splits and metadata, as of a version (a time, a tag or "latest"), an
 * offset page. Needs workspaces:read; VALIDATION_FAILED for bad input.
 */
export async function listExamples(ctx: ServiceContext, input: ExampleListInput): Promise<ExampleRow[]> {
  const query = parseInput(ExampleList, input, 'query');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  if (!query.dataset && !query.id) {
    throw new AppError('VALIDATION_FAILED', 'query.dataset: give a dataset or example ids', [{ loc: ['query', 'dataset'], msg: 'give a dataset or example ids', type: 'missing' }]);
  }
  let asOf: string | undefined;
  if (query.dataset) {
    const dataset = await ownDataset(ctx.db.pool, workspaceId, query.dataset);
    if (query.asOf) asOf = await versionTime(ctx.db.pool, dataset, query.asOf);
  }
  return selectExamples(ctx.db.pool, workspaceId, {
    datasetId: query.dataset ?? undefined,
    ids: query.id ?? undefined,
    asOf,
    splits: query.splits ?? undefined,
    metadata: query.metadata ?? undefined,
    limit: query.limit,
    offset: query.offset,
  });
}

/** Datasets of the viewer's trace workspace as Prisma records (GraphQL), newest first. Needs workspaces:read. */
export async function listDatasetRecords(ctx: ServiceContext, page: { ids?: string[]; limit?: number | null; offset?: number | null }, selection: Prisma.DatasetFindManyArgs = {}): Promise<Dataset[]> {
  const query = parseInput(DatasetList, { id: page.ids, limit: page.limit ?? undefined, offset: page.offset ?? undefined }, 'args');
  const workspaceId = await traceWorkspace(ctx, 'workspaces:read');
  return findDatasetRecords(ctx.db, workspaceId, { ids: query.id ?? undefined, limit: query.limit, offset: query.offset }, selection);
}

/** One dataset as a Prisma record (GraphQL). Needs workspaces:read; NOT_FOUND otherwise. */
export async function getDatasetRecord(ctx: ServiceContext, id: string, selection: Prisma.DatasetFindManyArgs = {}): Promise<Dataset> {
  const [record] = isUuid(id) ? await listDatasetRecords(ctx, { ids: [id], limit: 1 }, selection) : [];
  if (!record) throw datasetNotFound(id);
  return record;
}
