// Datasets, their examples (kept as versions: a write ends an example's current version and adds the
// next, so reads as of a time see the dataset as it was) and their version tags: their SQL. A
// dataset's examples at a time are a range of examples_dataset_id_created_at_id_idx filtered by
// validity; a dataset holds thousands of examples, not millions.
import type pg from 'pg';
import type { Database } from '../../../db.js';
import type { Dataset, Prisma } from '../../../generated/prisma/client.js';
import { isoSql } from './trace-runs.store.js';

type Queryable = pg.Pool | pg.PoolClient;

/** A stored dataset as services return it (timestamps as ISO strings, UTC), with its counts. */
export type DatasetRow = {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  dataType: string;
  inputsSchemaDefinition: unknown;
  outputsSchemaDefinition: unknown;
  extra: Record<string, unknown> | null;
  createdAt: string;
  modifiedAt: string;
  exampleCount: number;
  sessionCount: number;
  lastSessionStartTime: string | null;
};

const DATASET_COLUMNS = `d.id, d.workspace_id AS "workspaceId", d.name, d.description, d.data_type AS "dataType",
  d.inputs_schema_definition AS "inputsSchemaDefinition", d.outputs_schema_definition AS "outputsSchemaDefinition", d.extra,
  ${isoSql('d.created_at')} AS "createdAt", ${isoSql('d.modified_at')} AS "modifiedAt",
  (SELECT count(*)::int FROM examples e WHERE e.dataset_id = d.id AND e.valid_to IS NULL) AS "exampleCount",
  (SELECT count(*)::int FROM tracing_projects p WHERE p.workspace_id = d.workspace_id AND p.reference_dataset_id = d.id) AS "sessionCount",
  (SELECT ${isoSql('max(p.start_time)')} FROM tracing_projects p WHERE p.workspace_id = d.workspace_id AND p.reference_dataset_id = d.id) AS "lastSessionStartTime"`;

/** JSON columns take text: undefined and null are SQL NULL. */
const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

export type DatasetInsert = Pick<DatasetRow, 'id' | 'workspaceId' | 'name' | 'description' | 'dataType' | 'inputsSchemaDefinition' | 'outputsSchemaDefinition' | 'extra'> & {
  createdAt: Date | null;
};

/** Inserts a dataset; undefined when its name (or id) is taken in the workspace. */
export async function insertDataset(db: Queryable, dataset: DatasetInsert): Promise<DatasetRow | undefined> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO datasets (id, workspace_id, name, description, data_type, inputs_schema_definition, outputs_schema_definition, extra, created_at, modified_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, COALESCE($9, now()), COALESCE($9, now()))
     ON CONFLICT DO NOTHING RETURNING id`,
    [
      dataset.id, dataset.workspaceId, dataset.name, dataset.description, dataset.dataType,
      json(dataset.inputsSchemaDefinition), json(dataset.outputsSchemaDefinition), json(dataset.extra), dataset.createdAt,
    ],
  );
  return rows[0] ? findDataset(db, dataset.workspaceId, { id: rows[0].id }) : undefined;
}

/** One dataset of a workspace, by id or name. */
export async function findDataset(db: Queryable, workspaceId: string, by: { id: string } | { name: string }): Promise<DatasetRow | undefined> {
  const [column, value] = 'id' in by ? ['d.id', by.id] : ['d.name', by.name];
  const { rows } = await db.query<DatasetRow>(`SELECT ${DATASET_COLUMNS} FROM datasets d WHERE d.workspace_id = $1 AND ${column} = $2`, [workspaceId, value]);
  return rows[0];
}

/** Locks a dataset of a workspace until the transaction ends (writes of its examples take turns); false when there is none. */
export async function lockDataset(client: pg.PoolClient, workspaceId: string, id: string): Promise<boolean> {
  const { rowCount } = await client.query('SELECT 1 FROM datasets WHERE workspace_id = $1 AND id = $2 FOR UPDATE', [workspaceId, id]);
  return (rowCount ?? 0) > 0;
}

export type DatasetFilter = {
  ids?: string[];
  name?: string;
  nameContains?: string;
  dataType?: string;
  metadata?: Record<string, unknown>;
  limit: number;
  offset: number;
};

/** A workspace's datasets, newest first, an offset page (the SDK pages listDatasets by offset). */
export async function selectDatasets(pool: pg.Pool, workspaceId: string, filter: DatasetFilter): Promise<DatasetRow[]> {
  const { rows } = await pool.query<DatasetRow>(
    `SELECT ${DATASET_COLUMNS} FROM datasets d
      WHERE d.workspace_id = $1
        AND ($2::uuid[] IS NULL OR d.id = ANY($2::uuid[]))
        AND ($3::text IS NULL OR d.name = $3)
        AND ($4::text IS NULL OR strpos(lower(d.name), lower($4)) > 0)
        AND ($5::text IS NULL OR d.data_type = $5)
        AND ($6::jsonb IS NULL OR COALESCE(d.extra->'metadata', '{}'::jsonb) @> $6::jsonb)
      ORDER BY d.created_at DESC, d.id DESC
      LIMIT $7 OFFSET $8`,
    [workspaceId, filter.ids ?? null, filter.name ?? null, filter.nameContains ?? null, filter.dataType ?? null, json(filter.metadata), filter.limit, filter.offset],
  );
  return rows;
}

export type DatasetChange = {
  name?: string;
  description?: string | null;
  metadata?: Record<string, unknown> | null;
  inputsSchemaDefinition?: unknown;
  outputsSchemaDefinition?: unknown;
};

/** Sets the given fields (null clears one); 'renamed-onto-another' when the new name is taken. */
export async function updateDatasetRow(client: pg.PoolClient, workspaceId: string, id: string, change: DatasetChange): Promise<'renamed-onto-another' | 'done'> {
  const sets: string[] = [];
  const values: unknown[] = [workspaceId, id];
  const set = (sql: (param: string) => string, value: unknown) => {
    values.push(value);
    sets.push(sql(`$${values.length}`));
  };
  if (change.name !== undefined) set((p) => `name = ${p}`, change.name);
  if (change.description !== undefined) set((p) => `description = ${p}`, change.description);
  if (change.metadata !== undefined) set((p) => `extra = jsonb_set(COALESCE(extra, '{}'::jsonb), '{metadata}', COALESCE(${p}::jsonb, 'null'::jsonb))`, json(change.metadata));
  if (change.inputsSchemaDefinition !== undefined) set((p) => `inputs_schema_definition = ${p}::jsonb`, json(change.inputsSchemaDefinition));
  if (change.outputsSchemaDefinition !== undefined) set((p) => `outputs_schema_definition = ${p}::jsonb`, json(change.outputsSchemaDefinition));
  if (!sets.length) return 'done';
  try {
    await client.query('SAVEPOINT dataset_update');
    await client.query(`UPDATE datasets SET ${sets.join(', ')} WHERE workspace_id = $1 AND id = $2`, values);
    await client.query('RELEASE SAVEPOINT dataset_update');
    return 'done';
  } catch (error) {
    if ((error as { code?: string }).code !== '23505') throw error;
    await client.query('ROLLBACK TO SAVEPOINT dataset_update');
    return 'renamed-onto-another';
  }
}

/** Deletes a dataset with its examples and tags (foreign keys cascade). */
export async function deleteDatasetRow(db: Queryable, workspaceId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM datasets WHERE workspace_id = $1 AND id = $2', [workspaceId, id]);
  return (rowCount ?? 0) > 0;
}

/**
 * The time of a write, every version it makes starting (or ending) then. Taken once the write holds
 * its locks: a write that waited for another gets a later time (the transaction's start, now(), may
 * be earlier than the write it waited for, which would end a version before it began).
 */
export async function writeTime(client: pg.PoolClient): Promise<string> {
  const { rows } = await client.query<{ now: string }>(`SELECT ${isoSql('clock_timestamp()')} AS now`);
  return rows[0]!.now;
}

/** Marks a dataset changed at `at` (its latest version; a write that committed later with an earlier time moves it not back). */
export async function touchDataset(client: pg.PoolClient, datasetId: string, at: string): Promise<void> {
  await client.query('UPDATE datasets SET modified_at = GREATEST(modified_at, $2::timestamptz) WHERE id = $1', [datasetId, at]);
}

/** A version of an example as services return it. */
export type ExampleRow = {
  id: string;
  datasetId: string;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  sourceRunId: string | null;
  createdAt: string;
  /** When this version began. */
  modifiedAt: string;
};

const EXAMPLE_COLUMNS = `e.id, e.dataset_id AS "datasetId", e.inputs, e.outputs, e.metadata, e.source_run_id AS "sourceRunId",
  ${isoSql('e.created_at')} AS "createdAt", ${isoSql('e.valid_from')} AS "modifiedAt"`;

export type ExampleInsert = Omit<ExampleRow, 'createdAt' | 'modifiedAt' | 'datasetId'> & { createdAt: string };

/** Adds examples' first versions, from `at`; the ids of those whose id the workspace already holds are returned as taken. */
export async function insertExamples(client: pg.PoolClient, tenantId: string, datasetId: string, examples: ExampleInsert[], at: string): Promise<{ taken: string[] }> {
  const ids = examples.map((example) => example.id);
  // An example id is the workspace's, whatever its dataset (clients choose ids): adds in a workspace
  // take turns, so two datasets cannot both take one id.
  await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1::text || ':examples', 0))", [tenantId]);
  const { rows: existing } = await client.query<{ id: string }>('SELECT DISTINCT id FROM examples WHERE tenant_id = $1 AND id = ANY($2::uuid[])', [tenantId, ids]);
  if (existing.length) return { taken: existing.map((row) => row.id) };
  await client.query(
    `INSERT INTO examples (tenant_id, id, valid_from, dataset_id, inputs, outputs, metadata, source_run_id, created_at)
     SELECT $1, x.id, $2::timestamptz, $3, x.inputs, x.outputs, x.metadata, x.source_run_id, x.created_at
       FROM jsonb_to_recordset($4::jsonb) AS x(id uuid, inputs jsonb, outputs jsonb, metadata jsonb, source_run_id uuid, created_at timestamptz)`,
    [
      tenantId, at, datasetId,
      JSON.stringify(examples.map((e) => ({ id: e.id, inputs: e.inputs, outputs: e.outputs, metadata: e.metadata, source_run_id: e.sourceRunId, created_at: e.createdAt }))),
    ],
  );
  return { taken: [] };
}

/** The current versions of examples of a dataset, locked until the transaction ends. */
export async function lockCurrentExamples(client: pg.PoolClient, tenantId: string, datasetId: string | null, ids: string[]): Promise<ExampleRow[]> {
  const { rows } = await client.query<ExampleRow>(
    `SELECT ${EXAMPLE_COLUMNS} FROM examples e
      WHERE e.tenant_id = $1 AND e.id = ANY($2::uuid[]) AND e.valid_to IS NULL AND ($3::uuid IS NULL OR e.dataset_id = $3)
      FOR UPDATE`,
    [tenantId, ids, datasetId],
  );
  return rows;
}

/** Ends examples' current versions at `at` and adds the ones given, from `at` (an update). */
export async function replaceExampleVersions(client: pg.PoolClient, tenantId: string, versions: ExampleRow[], at: string): Promise<void> {
  await endExampleVersions(client, tenantId, versions.map((version) => version.id), at);
  await client.query(
    `INSERT INTO examples (tenant_id, id, valid_from, dataset_id, inputs, outputs, metadata, source_run_id, created_at)
     SELECT $1, x.id, $2::timestamptz, x.dataset_id, x.inputs, x.outputs, x.metadata, x.source_run_id, x.created_at
       FROM jsonb_to_recordset($3::jsonb) AS x(id uuid, dataset_id uuid, inputs jsonb, outputs jsonb, metadata jsonb, source_run_id uuid, created_at timestamptz)`,
    [
      tenantId, at,
      JSON.stringify(versions.map((e) => ({ id: e.id, dataset_id: e.datasetId, inputs: e.inputs, outputs: e.outputs, metadata: e.metadata, source_run_id: e.sourceRunId, created_at: e.createdAt }))),
    ],
  );
}

/** Ends examples' current versions at `at` (a delete); which datasets they were in. */
export async function endExampleVersions(client: pg.PoolClient, tenantId: string, ids: string[], at: string): Promise<string[]> {
  const { rows } = await client.query<{ datasetId: string }>(
    `UPDATE examples SET valid_to = $3 WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND valid_to IS NULL RETURNING dataset_id AS "datasetId"`,
    [tenantId, ids, at],
  );
  return [...new Set(rows.map((row) => row.datasetId))];
}

/** Drops every version of examples (a hard delete); which datasets they were in. */
export async function purgeExamples(client: pg.PoolClient, tenantId: string, ids: string[]): Promise<string[]> {
  const { rows } = await client.query<{ datasetId: string }>(
    'DELETE FROM examples WHERE tenant_id = $1 AND id = ANY($2::uuid[]) RETURNING dataset_id AS "datasetId"',
    [tenantId, ids],
  );
  return [...new Set(rows.map((row) => row.datasetId))];
}

export type ExampleFilter = {
  datasetId?: string;
  ids?: string[];
  /** Versions valid then; the current ones without. */
  asOf?: string;
  splits?: string[];
  metadata?: Record<string, unknown>;
  limit: number;
  offset: number;
};

const VALID_AT = (param: string) => `(${param}::timestamptz IS NULL AND e.valid_to IS NULL OR e.valid_from <= ${param}::timestamptz AND (e.valid_to IS NULL OR e.valid_to > ${param}::timestamptz))`;

/** A workspace's examples (of a dataset, by ids, splits and metadata) as of a time, oldest first, an offset page. */
export async function selectExamples(pool: pg.Pool, tenantId: string, filter: ExampleFilter): Promise<ExampleRow[]> {
  const { rows } = await pool.query<ExampleRow>(
    `SELECT ${EXAMPLE_COLUMNS} FROM examples e
      WHERE e.tenant_id = $1
        AND ($2::uuid IS NULL OR e.dataset_id = $2)
        AND ($3::uuid[] IS NULL OR e.id = ANY($3::uuid[]))
        AND ${VALID_AT('$4')}
        AND ($5::text[] IS NULL OR (CASE jsonb_typeof(e.metadata->'dataset_split') WHEN 'array' THEN e.metadata->'dataset_split'
                                          WHEN 'string' THEN jsonb_build_array(e.metadata->'dataset_split') ELSE '[]'::jsonb END) ?| $5::text[])
        AND ($6::jsonb IS NULL OR COALESCE(e.metadata, '{}'::jsonb) @> $6::jsonb)
      ORDER BY e.created_at, e.id
      LIMIT $7 OFFSET $8`,
    [tenantId, filter.datasetId ?? null, filter.ids ?? null, filter.asOf ?? null, filter.splits ?? null, json(filter.metadata), filter.limit, filter.offset],
  );
  return rows;
}

/** One example's version as of a time (the current one without). */
export async function findExample(pool: pg.Pool, tenantId: string, id: string, asOf?: string): Promise<ExampleRow | undefined> {
  const { rows } = await pool.query<ExampleRow>(`SELECT ${EXAMPLE_COLUMNS} FROM examples e WHERE e.tenant_id = $1 AND e.id = $2 AND ${VALID_AT('$3')}`, [
    tenantId, id, asOf ?? null,
  ]);
  return rows[0];
}

/** The splits a dataset's examples are in as of a time. */
export async function selectSplits(pool: pg.Pool, tenantId: string, datasetId: string, asOf?: string): Promise<string[]> {
  const { rows } = await pool.query<{ split: string }>(
    `SELECT DISTINCT s.split FROM examples e,
            jsonb_array_elements_text(CASE jsonb_typeof(e.metadata->'dataset_split') WHEN 'array' THEN e.metadata->'dataset_split'
                                           WHEN 'string' THEN jsonb_build_array(e.metadata->'dataset_split') ELSE '[]'::jsonb END) AS s(split)
      WHERE e.tenant_id = $1 AND e.dataset_id = $2 AND ${VALID_AT('$3')} ORDER BY 1`,
    [tenantId, datasetId, asOf ?? null],
  );
  return rows.map((row) => row.split);
}

/** The latest change of a dataset at or before a time (its version then): an example's version beginning or ending, or its creation. */
export async function versionAt(pool: pg.Pool, datasetId: string, at: string): Promise<string> {
  const { rows } = await pool.query<{ version: string }>(
    `SELECT ${isoSql(`GREATEST(d.created_at,
              (SELECT max(e.valid_from) FROM examples e WHERE e.dataset_id = d.id AND e.valid_from <= $2::timestamptz),
              (SELECT max(e.valid_to) FROM examples e WHERE e.dataset_id = d.id AND e.valid_to <= $2::timestamptz))`)} AS version
       FROM datasets d WHERE d.id = $1`,
    [datasetId, at],
  );
  return rows[0]!.version;
}

/** The ids of examples added, changed and removed between two versions. */
export async function diffVersions(pool: pg.Pool, datasetId: string, from: string, to: string): Promise<{ added: string[]; modified: string[]; removed: string[] }> {
  const { rows } = await pool.query<{ id: string; before: boolean; after: boolean; changed: boolean }>(
    `SELECT e.id,
            bool_or(${VALID_AT('$2')}) AS before,
            bool_or(${VALID_AT('$3')}) AS after,
            bool_or(e.valid_from > $2::timestamptz AND e.valid_from <= $3::timestamptz) AS changed
       FROM examples e WHERE e.dataset_id = $1 GROUP BY e.id`,
    [datasetId, from, to],
  );
  return {
    added: rows.filter((row) => !row.before && row.after).map((row) => row.id),
    modified: rows.filter((row) => row.before && row.after && row.changed).map((row) => row.id),
    removed: rows.filter((row) => row.before && !row.after).map((row) => row.id),
  };
}

/** Points a tag at a time (moving it if it pointed elsewhere). */
export async function upsertDatasetTag(db: Queryable, datasetId: string, tag: string, asOf: string): Promise<void> {
  await db.query(
    'INSERT INTO dataset_tags (dataset_id, tag, as_of) VALUES ($1, $2, $3::timestamptz) ON CONFLICT (dataset_id, tag) DO UPDATE SET as_of = EXCLUDED.as_of',
    [datasetId, tag, asOf],
  );
}

/** The time a tag points at. */
export async function findDatasetTag(pool: pg.Pool, datasetId: string, tag: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ asOf: string }>(`SELECT ${isoSql('as_of')} AS "asOf" FROM dataset_tags WHERE dataset_id = $1 AND tag = $2`, [datasetId, tag]);
  return rows[0]?.asOf;
}

/** The tags that point at a version (a change time, or any time up to the next change). */
export async function tagsOfVersion(pool: pg.Pool, datasetId: string, version: string): Promise<string[]> {
  const { rows } = await pool.query<{ tag: string }>(
    `SELECT t.tag FROM dataset_tags t WHERE t.dataset_id = $1 AND t.as_of >= $2::timestamptz
        AND NOT EXISTS (SELECT 1 FROM examples e WHERE e.dataset_id = $1
                          AND (e.valid_from > $2::timestamptz AND e.valid_from <= t.as_of OR e.valid_to > $2::timestamptz AND e.valid_to <= t.as_of))
      ORDER BY t.tag`,
    [datasetId, version],
  );
  return rows.map((row) => row.tag);
}

/** Datasets of a workspace through Prisma (GraphQL's reads: `selection` is Pothos's), newest first. */
export function findDatasetRecords(db: Database, workspaceId: string, filter: { ids?: string[]; limit: number; offset: number }, selection: Prisma.DatasetFindManyArgs = {}): Promise<Dataset[]> {
  return db.prisma.dataset.findMany({
    ...selection,
    where: { workspaceId, ...(filter.ids ? { id: { in: filter.ids } } : {}) },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: filter.limit,
    skip: filter.offset,
  });
}
