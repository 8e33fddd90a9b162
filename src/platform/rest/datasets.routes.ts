// Datasets, examples and experiment comparison: the paths the langsmith SDK calls (createDataset,
// readDataset, listDatasets, updateDataset, deleteDataset, updateDatasetTag, readDatasetVersion,
// diffDatasetVersions, listDatasetSplits, updateDatasetSplits, uploadCsv, createExample(s),
// listExamples, readExample, updateExample(s), deleteExample(s), createComparativeExperiment), and
// POST /datasets/{id}/runs, which sets experiments side by side example by example. The SDK sends
// examples as multipart parts to /v1/platform/datasets/{id}/examples (/platform/… under /api/v1); an
// uploaded CSV or JSONL file is multipart too. Served at the root and under /api/v1 beside the traces
// router; errors are LangSmith's {detail}. Like the traces router, it matches only its own paths and
// passes everything else on.
import { type ErrorRequestHandler, type Request, Router } from 'express';
import { z } from 'zod';
import type { Deps } from '../../context.js';
import { AppError } from '../../errors.js';
import { errorHandler } from '../../http/errors.js';
import { jsonBody } from '../../http/json-body.js';
import { parseQuery } from '../../http/validate.js';
import { assertStorableText } from '../../limits/json.js';
import * as datasets from '../services/traces/datasets.service.js';
import { compareExperiments, createComparativeExperiment } from '../services/traces/experiments.service.js';
import type { ComparativeExperimentCreateInput, DatasetCreateInput, DatasetSplitsUpdateInput, ExampleCreateInput, ExampleUpdateInput, ExperimentComparisonInput } from '../services/traces/traces.schemas.js';
import { type MultipartPart, multipartBoundary, parseJsonBody, parseMultipart, readBody } from '../ingest/ingest-wire.js';
import { authenticate } from './auth.js';
import { presentComparativeExperiment, presentDataset, presentExample, presentExampleComparison } from './traces.presenters.js';
import { camelCaseKeys } from './traces.routes.js';

const list = z.union([z.string(), z.array(z.string())]).optional();

export const DatasetListQuery = z.object({
  id: list,
  name: z.string().optional(),
  name_contains: z.string().optional(),
  data_type: z.string().optional(),
  metadata: z.string().optional(),
  limit: z.string().optional(),
  offset: z.string().optional(),
});

export const ExampleListQuery = z.object({
  dataset: z.string().optional(),
  id: list,
  as_of: z.string().optional(),
  splits: list,
  metadata: z.string().optional(),
  filter: z.string().optional(),
  limit: z.string().optional(),
  offset: z.string().optional(),
  inline_s3_urls: z.string().optional(),
  select: list,
  exclude_default_fields: z.string().optional(),
});

const invalid = (loc: (string | number)[], msg: string) => new AppError('VALIDATION_FAILED', `${loc.join('.')}: ${msg}`, [{ loc, msg, type: 'value_error' }]);

/** A JSON object body, or VALIDATION_FAILED naming the body. */
function objectBody(req: Request): Record<string, unknown> {
  const body: unknown = req.body ?? {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid(['body'], 'expected a JSON object');
  return body as Record<string, unknown>;
}

/** A JSON list body of objects, or VALIDATION_FAILED naming the body. */
function listBody(req: Request): Record<string, unknown>[] {
  const body: unknown = req.body;
  if (!Array.isArray(body) || body.some((item) => typeof item !== 'object' || item === null || Array.isArray(item))) throw invalid(['body'], 'expected a list of JSON objects');
  return body as Record<string, unknown>[];
}

const asList = (value: string | string[] | undefined) => (value === undefined ? undefined : Array.isArray(value) ? value : [value]);

export function datasetsRouter(deps: Deps): Router {
  const router = Router();
  const auth = authenticate(deps);
  const json = jsonBody(deps.config, { strict: false });
  // Examples and uploaded files: bounded like a batch of runs.
  const multipartLimit = deps.config.ingestBodyLimitBytes;

  /** The parts of a multipart/form-data body (a 400 without a boundary, 413 past the limit). */
  const readParts = async (req: Request): Promise<MultipartPart[]> => {
    const boundary = multipartBoundary(req.get('content-type'));
    const { zstdWindowLimitBytes, jsonMaxDepth } = deps.config;
    const body = await readBody(req, req.get('content-encoding'), multipartLimit, { zstdWindowBytes: zstdWindowLimitBytes, jsonMaxDepth });
    return parseMultipart(body, boundary);
  };
  const partJson = (part: MultipartPart): unknown => {
    const value = parseJsonBody(part.data, deps.config.jsonMaxDepth);
    assertStorableText(value);
    return value;
  };

  router.post('/datasets', auth, ...json, async (req, res) => {
    res.json(presentDataset(await datasets.createDataset(req.ctx, camelCaseKeys(objectBody(req)) as DatasetCreateInput)));
  });

  router.get('/datasets', auth, async (req, res) => {
    const query = parseQuery(DatasetListQuery, req);
    const found = await datasets.listDatasets(req.ctx, {
      id: asList(query.id),
      name: query.name,
      nameContains: query.name_contains,
      dataType: query.data_type as never,
      metadata: query.metadata,
      limit: query.limit,
      offset: query.offset,
    });
    res.json(found.map(presentDataset));
  });

  // uploadCsv: a CSV file (or JSONL, one object a line) whose columns input_keys and output_keys name
  // become a new dataset's examples.
  router.post('/datasets/upload', auth, async (req, res) => {
    const parts = await readParts(req);
    const text = (name: string) => parts.find((part) => part.name === name)?.data.toString('utf8');
    const texts = (name: string) => parts.filter((part) => part.name === name).map((part) => part.data.toString('utf8'));
    const file = parts.find((part) => part.name === 'file');
    if (!file) throw invalid(['body', 'file'], 'required');
    const fileName = file.filename ?? 'upload.csv';
    const inputKeys = texts('input_keys');
    const outputKeys = texts('output_keys');
    if (!inputKeys.length) throw invalid(['body', 'input_keys'], 'name at least one column');
    const rows = /\.jsonl$/i.test(fileName) ? jsonlRows(file.data.toString('utf8')) : csvRows(file.data.toString('utf8'));
    for (const key of [...inputKeys, ...outputKeys]) {
      if (rows.length && !rows.every((row) => key in row)) throw invalid(['body', 'file'], `column "${key}" is missing`);
    }
    const pick = (row: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.map((key) => [key, row[key]]));
    const examples: ExampleCreateInput[] = rows.map((row) => ({ inputs: pick(row, inputKeys), outputs: outputKeys.length ? pick(row, outputKeys) : null }));
    const dataset = await datasets.createDatasetWithExamples(
      req.ctx,
      { name: text('name') ?? fileName.replace(/\.(csv|jsonl)$/i, ''), description: text('description'), dataType: text('data_type') as never, extra: { source: 'upload' } },
      examples,
    );
    res.json(presentDataset(dataset));
  });

  // Before /datasets/:id: a comparative (pairwise) experiment over experiments of one dataset.
  router.post('/datasets/comparative', auth, ...json, async (req, res) => {
    res.json(presentComparativeExperiment(await createComparativeExperiment(req.ctx, camelCaseKeys(objectBody(req)) as ComparativeExperimentCreateInput)));
  });

  router.post('/datasets/:id/runs', auth, ...json, async (req, res) => {
    const compared = await compareExperiments(req.ctx, String(req.params.id), camelCaseKeys(objectBody(req)) as ExperimentComparisonInput);
    res.json(compared.map(presentExampleComparison));
  });

  router.get('/datasets/:id', auth, async (req, res) => {
    res.json(presentDataset(await datasets.getDataset(req.ctx, String(req.params.id))));
  });

  router.patch('/datasets/:id', auth, ...json, async (req, res) => {
    res.json(presentDataset(await datasets.updateDataset(req.ctx, String(req.params.id), camelCaseKeys(objectBody(req)))));
  });

  router.delete('/datasets/:id', auth, async (req, res) => {
    await datasets.deleteDataset(req.ctx, String(req.params.id));
    res.json({});
  });

  router.put('/datasets/:id/tags', auth, ...json, async (req, res) => {
    await datasets.tagDatasetVersion(req.ctx, String(req.params.id), camelCaseKeys(objectBody(req)) as never);
    res.json({});
  });

  router.get('/datasets/:id/version', auth, async (req, res) => {
    const query = parseQuery(z.object({ as_of: z.string().optional(), tag: z.string().optional() }), req);
    const version = await datasets.readDatasetVersion(req.ctx, String(req.params.id), { asOf: query.as_of, tag: query.tag });
    res.json({ as_of: version.asOf, tags: version.tags });
  });

  router.get('/datasets/:id/versions/diff', auth, async (req, res) => {
    const query = parseQuery(z.object({ from_version: z.string().optional(), to_version: z.string().optional() }), req);
    const diff = await datasets.diffDatasetVersions(req.ctx, String(req.params.id), { fromVersion: query.from_version, toVersion: query.to_version });
    res.json({ examples_added: diff.added, examples_modified: diff.modified, examples_removed: diff.removed });
  });

  router.get('/datasets/:id/splits', auth, async (req, res) => {
    const query = parseQuery(z.object({ as_of: z.string().optional() }), req);
    res.json(await datasets.listDatasetSplits(req.ctx, String(req.params.id), query.as_of));
  });

  router.put('/datasets/:id/splits', auth, ...json, async (req, res) => {
    const body = objectBody(req);
    await datasets.updateDatasetSplits(req.ctx, String(req.params.id), { splitName: body.split_name, exampleIds: body.examples, remove: body.remove } as DatasetSplitsUpdateInput);
    res.json({});
  });

  // The SDK's multipart example paths: /v1/platform/… at the root, /platform/… under /api/v1.
  for (const prefix of ['/v1/platform', '/platform']) {
    router.post(`${prefix}/datasets/:id/examples`, auth, async (req, res) => {
      const examples = examplesFromParts(await readParts(req), partJson);
      const ids = await datasets.createExamples(req.ctx, String(req.params.id), examples.map(([id, example]) => ({ ...example, id })));
      res.status(201).json({ example_ids: ids, count: ids.length });
    });

    router.patch(`${prefix}/datasets/:id/examples`, auth, async (req, res) => {
      const examples = examplesFromParts(await readParts(req), partJson);
      const ids = await datasets.updateExamples(req.ctx, String(req.params.id), examples.map(([id, example]) => ({ ...example, id }) as ExampleUpdateInput));
      res.json({ example_ids: ids, count: ids.length });
    });

    // updateDatasetSplits: array_add / array_remove of the examples' dataset_split.
    router.patch(`${prefix}/datasets/:id/examples/metadata`, auth, ...json, async (req, res) => {
      const body = objectBody(req);
      const operations = Array.isArray(body.operations) ? (body.operations as Record<string, unknown>[]) : [];
      if (!operations.length) throw invalid(['body', 'operations'], 'required');
      for (const [index, operation] of operations.entries()) {
        const kind = String(operation?.operation ?? '').toLowerCase();
        if (operation?.key !== 'dataset_split' || (kind !== 'array_add' && kind !== 'array_remove') || !Array.isArray(operation.values)) {
          throw invalid(['body', 'operations', index], 'only array_add and array_remove of dataset_split are supported');
        }
        for (const splitName of operation.values) {
          await datasets.updateDatasetSplits(req.ctx, String(req.params.id), { splitName, exampleIds: body.example_ids, remove: kind === 'array_remove' } as DatasetSplitsUpdateInput);
        }
      }
      res.json({});
    });

    router.post(`${prefix}/datasets/examples/delete`, auth, ...json, async (req, res) => {
      const body = objectBody(req);
      const ids = body.example_ids;
      if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) throw invalid(['body', 'example_ids'], 'expected a list of example ids');
      await datasets.deleteExamples(req.ctx, ids as string[], { hard: body.hard_delete === true });
      res.json({});
    });
  }

  router.get('/examples', auth, async (req, res) => {
    const query = parseQuery(ExampleListQuery, req);
    if (query.filter !== undefined) throw invalid(['query', 'filter'], 'filter expressions over examples are not supported; use metadata');
    const found = await datasets.listExamples(req.ctx, {
      dataset: query.dataset,
      id: asList(query.id),
      asOf: query.as_of,
      splits: asList(query.splits),
      metadata: query.metadata,
      limit: query.limit,
      offset: query.offset,
    });
    res.json(found.map(presentExample));
  });

  // Older clients' JSON paths (the Python SDK's create_example without attachments, its bulk create and update).
  router.post('/examples', auth, ...json, async (req, res) => {
    const body = camelCaseKeys(objectBody(req));
    const [id] = await datasets.createExamples(req.ctx, String(body.datasetId ?? ''), [body as ExampleCreateInput]);
    res.json(presentExample(await datasets.getExample(req.ctx, id!)));
  });

  router.post('/examples/bulk', auth, ...json, async (req, res) => {
    const bodies = listBody(req).map(camelCaseKeys);
    if (!bodies.length) return void res.json([]);
    const datasetId = String(bodies[0]!.datasetId ?? '');
    if (bodies.some((body) => body.datasetId !== bodies[0]!.datasetId)) throw invalid(['body'], 'examples of one dataset a request');
    const ids = await datasets.createExamples(req.ctx, datasetId, bodies as ExampleCreateInput[]);
    res.json(await Promise.all(ids.map(async (id) => presentExample(await datasets.getExample(req.ctx, id)))));
  });

  router.patch('/examples/bulk', auth, ...json, async (req, res) => {
    await datasets.updateExamples(req.ctx, null, listBody(req).map(camelCaseKeys) as ExampleUpdateInput[]);
    res.json({});
  });

  // deleteExamples: ids in the query.
  router.delete('/examples', auth, async (req, res) => {
    const query = parseQuery(z.object({ example_ids: list }), req);
    const ids = asList(query.example_ids) ?? [];
    if (!ids.length) throw invalid(['query', 'example_ids'], 'required');
    await datasets.deleteExamples(req.ctx, ids);
    res.json({});
  });

  router.get('/examples/:id', auth, async (req, res) => {
    const query = parseQuery(z.object({ as_of: z.string().optional() }), req);
    res.json(presentExample(await datasets.getExample(req.ctx, String(req.params.id), query.as_of)));
  });

  router.patch('/examples/:id', auth, ...json, async (req, res) => {
    await datasets.updateExamples(req.ctx, null, [{ ...camelCaseKeys(objectBody(req)), id: String(req.params.id) } as ExampleUpdateInput]);
    res.json(presentExample(await datasets.getExample(req.ctx, String(req.params.id))));
  });

  router.delete('/examples/:id', auth, async (req, res) => {
    await datasets.deleteExamples(req.ctx, [String(req.params.id)]);
    res.json({});
  });

  // Only errors of this router's own routes (req.route is set once one matched) take its dialect.
  const errors = errorHandler('fastapi', deps.logger);
  router.use(((error, req, res, next) => (req.route ? errors(error, req, res, next) : next(error))) as ErrorRequestHandler);
  return router;
}

const EXAMPLE_FIELD_PARTS = new Set(['inputs', 'outputs']);

/**
 * The examples of the SDK's multipart body: `<id>` holds an example's fields (created_at, metadata,
 * split, source_run_id, use_source_run_io), `<id>.inputs` and `<id>.outputs` its inputs and reference
 * outputs. Attachments are refused (422): they are not stored.
 */
function examplesFromParts(parts: MultipartPart[], partJson: (part: MultipartPart) => unknown): [string, Record<string, unknown>][] {
  const examples = new Map<string, Record<string, unknown>>();
  const of = (id: string, loc: string) => {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) throw invalid(['body', loc], 'expected an example id (UUID)');
    let example = examples.get(id);
    if (!example) examples.set(id, (example = {}));
    return example;
  };
  for (const part of parts) {
    const dot = part.name.indexOf('.');
    const id = dot < 0 ? part.name : part.name.slice(0, dot);
    const field = dot < 0 ? undefined : part.name.slice(dot + 1);
    const example = of(id, part.name);
    const value = partJson(part);
    if (field === undefined) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(['body', part.name], 'expected a JSON object');
      Object.assign(example, camelCaseKeys(value as Record<string, unknown>));
    } else if (EXAMPLE_FIELD_PARTS.has(field)) {
      example[field] = value;
    } else if (field.startsWith('attachment') || field === 'attachments_operations') {
      throw new AppError('VALIDATION_FAILED', `body.${part.name}: example attachments are not supported`, [
        { loc: ['body', part.name], msg: 'example attachments are not supported', type: 'value_error' },
      ]);
    } else {
      throw invalid(['body', part.name], 'unknown part');
    }
  }
  return [...examples.entries()];
}

/** The rows of a CSV file (RFC 4180: quoted fields may hold commas, quotes and line breaks) as objects keyed by its header. */
function csvRows(text: string): Record<string, string>[] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (quoted) {
      if (char === '"' && body[i + 1] === '"') (field += '"'), i++;
      else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"' && field === '') quoted = true;
    else if (char === ',') record.push(field), (field = '');
    else if (char === '\n' || char === '\r') {
      if (char === '\r' && body[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      (record = []), (field = '');
    } else field += char;
  }
  if (quoted) throw invalid(['body', 'file'], 'a quoted CSV field is not closed');
  if (field !== '' || record.length) record.push(field), records.push(record);
  const [header, ...rows] = records.filter((r) => !(r.length === 1 && r[0] === ''));
  if (!header) throw invalid(['body', 'file'], 'the CSV file is empty');
  return rows.map((row, index) => {
    if (row.length !== header.length) throw invalid(['body', 'file'], `row ${index + 2} has ${row.length} fields, the header ${header.length}`);
    return Object.fromEntries(header.map((key, column) => [key, row[column]!]));
  });
}

/** The objects of a JSONL file, one a line. */
function jsonlRows(text: string): Record<string, unknown>[] {
  return text
    .split(/\r?\n/)
    .filter((line) => line.trim())
    .map((line, index) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw invalid(['body', 'file'], `line ${index + 1} is not JSON`);
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(['body', 'file'], `line ${index + 1} is not a JSON object`);
      return value as Record<string, unknown>;
    });
}
