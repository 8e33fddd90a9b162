// Trace ingestion and queries: the paths the langsmith SDK calls and OTLP/HTTP's /otel/v1/traces,
// served at the root and under /api/v1 (router.ts mounts this router at both), and the v2 runs API
// (runsV2Router, under /api/v2). Errors are {error, details} (the 'ingest' dialect), except OTLP's,
// which are google.rpc.Status bodies.
//
// This router matches only its own paths and passes everything else on: it has no router-wide body
// parser or authentication, so mounting it in front of other surfaces changes nothing for them.
import { type ErrorRequestHandler, type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import { isUuid } from '../../ids.js';
import { assertStorableText } from '../../limits/json.js';
import type { Deps } from '../../context.js';
import { probeSandbox } from '../launcher/sandbox.js';
import { FilterError } from '../services/traces/filter.js';
import { ingestAsViewer } from '../ingest/ingest-as-viewer.js';
import { experimentFeedbackStats } from '../services/traces/experiments.service.js';
import * as projects from '../services/traces/projects.service.js';
import { getProjectRun, getRun, getRunForUrl, queryRuns, queryRunsV2, validateRunFilters } from '../services/traces/queries.service.js';
import type { ProjectCreateInput, RunQueryV2Input, RunRetrieveV2Input, RunUrlV2Input } from '../services/traces/traces.schemas.js';
import { traceWorkspace } from '../services/traces/workspace.js';
import { authenticate, authenticateIngest } from './auth.js';
import { afterRefusedBody, errorHandler, httpStatus } from '../../http/errors.js';
import { publicOrigin } from '../../http/public-origin.js';
import { requestLogger } from '../../http/request-log.js';
import { parseQuery } from '../../http/validate.js';
import { ingestEncoded } from '../ingest/ingest-threads.js';
import { asObject, type IngestRequest, multipartBoundary, parseJsonBody, readBody, readRawBody } from '../ingest/ingest-wire.js';
import { encodeExportResponse, encodeStatus, type OtlpEncoding, otlpEncoding } from '../ingest/otlp-wire.js';
import { presentProject, presentRun, presentRunUrl, presentRunV2 } from './traces.presenters.js';

const OTLP_TRACES_PATH = '/otel/v1/traces';

const SMALL_BODY_LIMIT = 1024 * 1024;

/**
 * Reads and parses a small JSON body (any Content-Encoding, zstd included). Bodies that are `stored`
 * (projects) must not hold strings PostgreSQL refuses (422 naming the field); queries need not (the
 * filter language answers them itself), and runs are cleaned by ingestion.
 */
async function readJson(req: Request, limit: number, use: 'stored' | 'query'): Promise<unknown> {
  const { zstdWindowLimitBytes, jsonMaxDepth } = req.ctx.config;
  const body = parseJsonBody(await readBody(req, req.get('content-encoding'), limit, { zstdWindowBytes: zstdWindowLimitBytes, jsonMaxDepth }), jsonMaxDepth);
  if (use === 'stored') assertStorableText(body);
  return body;
}

export const ProjectListQuery = z.object({
  name: z.string().optional(),
  name_contains: z.string().optional(),
  id: z.union([z.string(), z.array(z.string())]).optional(),
  limit: z.string().optional(),
  offset: z.string().optional(),
  include_stats: z.enum(['true', 'false']).optional(),
  reference_dataset: z.string().optional(),
  reference_free: z.enum(['true', 'false']).optional(),
});

/** A snake_case body with its keys in camelCase, as the traces services take their input (`name_contains` -> `nameContains`). */
export const camelCaseKeys = (body: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(body).map(([key, value]) => [key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), value]));

export function tracesRouter(deps: Deps): Router {
  const router = Router();
  const auth = authenticate(deps);
  // The routes that write runs also take a deployment's trace key (which may do nothing else).
  const ingestAuth = authenticateIngest(deps);
  const ingestLimit = deps.config.ingestBodyLimitBytes;

  /** Ingests a request body still to decode and parse, as the viewer (409 for runs already received). */
  const ingest = (req: Request, request: IngestRequest) => ingestAsViewer(req.ctx, (who) => ingestEncoded(deps, who, request));

  // What the SDK reads first: batching limits and which encodings it may use. Public, as in LangSmith.
  router.get('/info', (_req, res) => {
    const sandbox = probeSandbox(deps.config.sandbox);
    res.json({
      version: '0.1.0',
      license_expiration_time: null,
      tenant_handle: null,
      // Whether this installation sandboxes deployed code (and, if not, whether it deploys anyway).
      deployments: sandbox.enabled
        ? { sandbox: sandbox.tool, per_deployment_user: sandbox.perDeploymentUser, resource_limits: sandbox.limits.enforced }
        : { sandbox: null, unsandboxed_allowed: sandbox.allowUnsandboxed },
      batch_ingest_config: {
        use_multipart_endpoint: true,
        size_limit: 100,
        size_limit_bytes: Math.min(ingestLimit, 20 * 1024 * 1024),
        scale_up_qsize_trigger: 1000,
        scale_up_nthreads_limit: 16,
        scale_down_nempty_trigger: 4,
      },
      instance_flags: {
        gzip_body_enabled: true,
        zstd_compression_enabled: true,
        // Examples are written as multipart parts (the SDK's createExample(s) and updateExample(s)).
        dataset_examples_multipart_enabled: true,
        examples_multipart_enabled: true,
        experimental_search_enabled: false,
      },
    });
  });

  // Run bodies (up to the ingest limit) are decoded and parsed where they are stored, off this thread.
  router.post('/runs', ingestAuth, async (req, res) => {
    const body = await readRawBody(req, ingestLimit);
    await ingest(req, { format: 'run', body, contentEncoding: req.get('content-encoding'), contentType: req.get('content-type') });
    res.status(202).json({});
  });

  // The SDK's batch paths: bodies are decoded and parsed where they are stored (see ingest).
  for (const format of ['batch', 'multipart'] as const) {
    router.post(`/runs/${format}`, ingestAuth, async (req, res) => {
      const contentType = req.get('content-type');
      if (format === 'multipart') multipartBoundary(contentType); // a 400 before reading the body
      const body = await readRawBody(req, ingestLimit);
      await ingest(req, { format, body, contentEncoding: req.get('content-encoding'), contentType });
      res.status(202).json({});
    });
  }

  // OTLP/HTTP trace export (protobuf or JSON): decoded and mapped to runs where they are stored (see
  // ingest). A span sent again is the same run, so a retried export succeeds without storing twice.
  router.post(OTLP_TRACES_PATH, ingestAuth, async (req, res) => {
    const encoding = otlpEncoding(req.get('content-type'));
    if (!encoding) {
      // OTLP/HTTP: 415 for a content type it does not define; the body is drained, not read.
      req.resume();
      sendOtlp(res, 'json', 415, encodeStatus('json', 415, 'Content-Type must be application/x-protobuf or application/json.'));
      return;
    }
    const body = await readRawBody(req, ingestLimit);
    const project = req.get('langsmith-project')?.trim() || undefined;
    const result = await ingestAsViewer(
      req.ctx,
      // A project-bound key's project is the one a request naming none names (ahead of the spans' own).
      (who) => ingestEncoded(deps, who, { format: `otlp-${encoding}`, body, contentEncoding: req.get('content-encoding'), contentType: req.get('content-type'), project: project ?? who.project }),
      { duplicates: 'ignore' },
    );
    sendOtlp(res, encoding, 200, encodeExportResponse(encoding, result.rejected));
  });

  router.post('/runs/query/validate', auth, async (req, res) => {
    await traceWorkspace(req.ctx, 'workspaces:read');
    const body = asObject(await readJson(req, SMALL_BODY_LIMIT, 'query'));
    const text = (key: string) => {
      const value = body[key];
      if (value === undefined || value === null) return undefined;
      if (typeof value !== 'string') throw new AppError('VALIDATION_FAILED', `body.${key}: expected a string`, [{ loc: ['body', key], msg: 'expected a string', type: 'string_type' }]);
      return value;
    };
    validateRunFilters({ filter: text('filter'), traceFilter: text('trace_filter'), treeFilter: text('tree_filter') });
    res.json({ valid: true });
  });

  router.post('/runs/query', auth, async (req, res) => {
    const body = asObject(await readJson(req, SMALL_BODY_LIMIT, 'query'));
    const page = await queryRuns(req.ctx, camelCaseKeys(body));
    const select = Array.isArray(body.select) ? (body.select as string[]) : null;
    res.json({ runs: page.runs.map((run) => presentRun(run, select)), cursors: { next: page.nextCursor } });
  });

  router.get('/runs/:id', auth, async (req, res) => {
    res.json(presentRun(await getRun(req.ctx, String(req.params.id))));
  });

  router.patch('/runs/:id', ingestAuth, async (req, res) => {
    const id = String(req.params.id);
    if (!isUuid(id)) {
      throw new AppError('VALIDATION_FAILED', 'path.id: expected a UUID', [{ loc: ['path', 'id'], msg: 'expected a UUID', type: 'uuid_parsing' }]);
    }
    const body = await readRawBody(req, ingestLimit);
    await ingest(req, { format: 'patch', runId: id, body, contentEncoding: req.get('content-encoding'), contentType: req.get('content-type') });
    res.status(202).json({});
  });

  router.post('/sessions', auth, async (req, res) => {
    const body = asObject(await readJson(req, SMALL_BODY_LIMIT, 'stored'));
    const project = await projects.createProject(req.ctx, {
      ...(camelCaseKeys(body) as ProjectCreateInput),
      upsert: req.query.upsert === 'true',
    });
    res.json(presentProject(project));
  });

  router.get('/sessions', auth, async (req, res) => {
    const query = parseQuery(ProjectListQuery, req);
    const list = await projects.listProjects(req.ctx, {
      name: query.name,
      nameContains: query.name_contains,
      ids: query.id === undefined ? undefined : Array.isArray(query.id) ? query.id : [query.id],
      referenceDataset: query.reference_dataset,
      referenceFree: query.reference_free === undefined ? undefined : query.reference_free === 'true',
      limit: query.limit,
      offset: query.offset,
    });
    const withStats = query.include_stats === 'true' && list.length > 0;
    const stats = withStats ? await projects.projectStats(deps, list[0]!.workspaceId, list.map((p) => p.id)) : undefined;
    // An experiment's scores: its runs' feedback summed up per key.
    const feedbackStats = withStats ? await experimentFeedbackStats(req.ctx, list) : undefined;
    res.json(list.map((project, index) => presentProject(project, stats?.get(project.id), feedbackStats?.[index])));
  });

  router.get('/sessions/:id', auth, async (req, res) => {
    const project = await projects.getProject(req.ctx, String(req.params.id));
    const stats = await projects.projectStats(deps, project.workspaceId, [project.id]);
    res.json(presentProject(project, stats.get(project.id)));
  });

  router.patch('/sessions/:id', auth, async (req, res) => {
    const body = asObject(await readJson(req, SMALL_BODY_LIMIT, 'stored'));
    res.json(presentProject(await projects.updateProject(req.ctx, String(req.params.id), camelCaseKeys(body))));
  });

  router.delete('/sessions/:id', auth, async (req, res) => {
    await projects.deleteProject(req.ctx, String(req.params.id));
    res.status(202).json({});
  });

  // OTLP clients read errors as a Status in the encoding they sent; retryable ones are 429 and 503.
  const otlpErrors: ErrorRequestHandler = (error, req, res, next) => {
    if (req.route?.path !== OTLP_TRACES_PATH || res.headersSent) return next(error);
    const encoding = otlpEncoding(req.get('content-type')) ?? 'json';
    const { status, message } = httpStatus(error, requestLogger(req, deps.logger));
    const answer = () => sendOtlp(res, encoding, status, encodeStatus(encoding, status, message));
    if (status === 413) afterRefusedBody(res, answer);
    else answer();
  };
  router.use(otlpErrors);
  useIngestErrors(router, deps);
  return router;
}

/**
 * LangSmith's v2 runs API, as the SDK's client.runs.query, retrieve and getURL call it (router.ts
 * mounts it at /api/v2): the runs query's v2 form, in the traces router's error dialect.
 */
export function runsV2Router(deps: Deps): Router {
  const router = Router();
  const auth = authenticate(deps);

  // ItemsCursorPostPagination: the SDK sends the same body again with `cursor` set to next_cursor.
  router.post('/runs/query', auth, async (req, res) => {
    const body = asObject(await readJson(req, SMALL_BODY_LIMIT, 'query'));
    const page = await queryRunsV2(req.ctx, body as RunQueryV2Input);
    res.json({ items: page.runs.map((run) => presentRunV2(run, page.selects)), next_cursor: page.nextCursor });
  });

  router.get('/runs/:id', auth, async (req, res) => {
    const { run, selects } = await getProjectRun(req.ctx, String(req.params.id), req.query as RunRetrieveV2Input);
    res.json(presentRunV2(run, selects));
  });

  // The console's page of the run, where the platform answers (PUBLIC_URL, else this request's origin).
  router.get('/runs/:id/url', auth, async (req, res) => {
    const run = await getRunForUrl(req.ctx, String(req.params.id), req.query as RunUrlV2Input);
    res.json(presentRunUrl(publicOrigin(req, deps.config.publicUrl), run));
  });

  useIngestErrors(router, deps);
  return router;
}

/**
 * The error handlers of the traces routers' own routes (req.route is set once one matched): a malformed
 * filter names where it went wrong, machine-readably too; the rest take the 'ingest' dialect.
 */
function useIngestErrors(router: Router, deps: Deps): void {
  const filterErrors: ErrorRequestHandler = (error, _req, res, next) => {
    if (!(error instanceof FilterError) || res.headersSent) return next(error);
    res.status(400).json({ error: error.message, details: error.reason, ...error.position });
  };
  const ingestErrors = errorHandler('ingest', deps.logger);
  router.use(((error, req, res, next) => (req.route ? filterErrors(error, req, res, next) : next(error))) as ErrorRequestHandler);
  router.use(((error, req, res, next) => (req.route ? ingestErrors(error, req, res, next) : next(error))) as ErrorRequestHandler);
}

function sendOtlp(res: Response, encoding: OtlpEncoding, status: number, body: Buffer | Record<string, unknown>): void {
  res.status(status);
  if (encoding === 'json') res.json(body);
  else res.type('application/x-protobuf').send(body);
}
