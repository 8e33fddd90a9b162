// The graph config file (`langgraph.json`): which graphs a deployment serves and the environment they
// run in, read as the hosted platform and the reference server read it. Parsed with zod so a bad file
// names every problem at once; what it says that this server does not do (Docker-only fields, an env
// file that is not there) comes back as `notes` for the build log, and a Python project is refused.
import { closeSync, constants, existsSync, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { dirname, extname, isAbsolute, relative, resolve } from 'node:path';
import { z } from 'zod';
import { AppError } from '../errors.js';

const GraphSpec = z.union([
  z.string().regex(/^[^:]+(:[A-Za-z_$][\w$]*)?$/, 'expected "./path/to/file.ts:exportName"'),
  z.object({ path: z.string(), description: z.string().optional() }),
]);

/** `checkpointer.ttl`: threads expire (deleted with everything they own) as on the hosted platform. */
const CheckpointerTtl = z.object({
  strategy: z.literal('delete').default('delete'),
  /** Minutes after its last update a thread given no TTL of its own is deleted. */
  default_ttl: z.number().positive().max(525_600_00).optional(),
  /** How often the sweep looks for expired threads. */
  sweep_interval_minutes: z.number().int().min(1).max(525_600).optional(),
});

/** A regular expression, as `allow_origin_regex` gives one. */
const Pattern = z.string().refine((text) => {
  try {
    new RegExp(text);
    return true;
  } catch {
    return false;
  }
}, 'expected a regular expression');

/**
 * `http.cors`: which browser pages of other origins may call the agent server, with the reference's
 * field names (`langgraph dev`'s and the hosted Agent Server's).
 */
const HttpCors = z
  .object({
    allow_origins: z.array(z.string().min(1)).optional(),
    allow_origin_regex: Pattern.optional(),
    allow_methods: z.array(z.string().regex(/^([A-Za-z]+|\*)$/, 'expected an HTTP method or "*"')).optional(),
    allow_headers: z.array(z.string().regex(/^([!#$%&'*+.^_`|~\w-]+|\*)$/, 'expected a header name or "*"')).optional(),
    allow_credentials: z.boolean().optional(),
    expose_headers: z.array(z.string().regex(/^[!#$%&'*+.^_`|~\w-]+$/, 'expected a header name')).optional(),
    max_age: z.number().int().min(0).optional(),
  })
  .passthrough();

const GraphConfigFile = z
  .object({
    graphs: z.record(z.string().min(1), GraphSpec).refine((graphs) => Object.keys(graphs).length > 0, 'name at least one graph'),
    env: z.union([z.record(z.string(), z.string()), z.string()]).optional(),
    dependencies: z.array(z.string()).optional(),
    store: z
      .object({
        index: z
          .object({
            /** `"./path/to/file.ts:export"` (a function of texts or an Embeddings object), or `"<provider>:<model>"`. */
            embed: z.string().min(1),
            dims: z.number().int().min(1).max(16_000),
            fields: z.array(z.string().min(1)).min(1).optional(),
          })
          .passthrough()
          .optional(),
        ttl: z
          .object({
            default_ttl: z.number().positive().nullish(),
            refresh_on_read: z.boolean().nullish(),
            sweep_interval_minutes: z.number().int().min(1).nullish(),
          })
          .passthrough()
          .optional(),
      })
      .passthrough()
      .optional(),
    checkpointer: z.object({ ttl: CheckpointerTtl.nullish() }).passthrough().optional(),
    http: z.object({ cors: HttpCors.optional() }).passthrough().optional(),
    ui: z.record(z.string().min(1), z.string().min(1)).optional(),
    ui_config: z.object({ shared: z.array(z.string()).optional() }).optional(),
    node_version: z.union([z.string(), z.number()]).optional(),
    python_version: z.union([z.string(), z.number()]).optional(),
    auth: z
      .object({
        path: z.string().regex(/^[^:]+(:[A-Za-z_$][\w$]*)?$/, 'expected "./path/to/auth.ts:exportName"').optional(),
        disable_studio_auth: z.boolean().optional(),
        allow_langsmith_api_keys: z.boolean().optional(),
      })
      .passthrough()
      .optional(),
    encryption: z
      .object({ path: z.string().regex(/^[^:]+(:[A-Za-z_$][\w$]*)?$/, 'expected "./path/to/encryption.ts:exportName"') })
      .passthrough()
      .optional(),
  })
  .passthrough();

export type GraphEntry = { graphId: string; file: string; exportName: string; description?: string };

/** `http.cors` of langgraph.json, as read: what http/cors.ts makes its policy of. */
export type CorsOptions = {
  /** Origins allowed (`*`: any); with neither this nor `allowOriginRegex`, any. */
  allowOrigins?: string[];
  /** A regular expression an allowed origin matches as a whole. */
  allowOriginRegex?: string;
  /** Methods a page may use (`*`: any); the reference's list by default. */
  allowMethods?: string[];
  /** Request headers a page may send (`*`: any); by default whatever its preflight asks for. */
  allowHeaders?: string[];
  /** Whether a page may send cookies and read the answer to a request that carried them. */
  allowCredentials?: boolean;
  /** Answer headers a page's script may read, besides those the SDK reads (always exposed). */
  exposeHeaders?: string[];
  /** Seconds a browser may keep a preflight's answer. */
  maxAge?: number;
};

export type GraphConfig = {
  /** Absolute path of the config file. */
  path: string;
  /** Folder that relative paths in the file are resolved against. */
  root: string;
  graphs: GraphEntry[];
  /** Environment variables for graph code (from the `env` object or file). */
  env: Record<string, string>;
  /** `http.app`: the project's own routes, `"./path/to/file.ts:export"` (a Hono app). */
  httpApp?: string;
  /** `ui`: generative UI components per graph, `{"<graph id>": "./path/to/ui.tsx"}`, and `ui_config`. */
  ui?: { components: Record<string, string>; shared?: string[] };
  /** `http.cors`: the agent server's policy for browser pages of other origins; undefined: any origin may call it. */
  cors?: CorsOptions;
  /** `store`: the long-term store's embedding index and time to live. */
  store?: StoreConfig;
  /** `auth`: the project's `Auth` object (`@langchain/langgraph-sdk/auth`), by absolute file and export; undefined: no custom auth. */
  auth?: { file: string; exportName: string; disableStudioAuth: boolean; allowPlatformKeys: boolean };
  /** `encryption`: the project's encryption handlers (encryption at rest), by absolute file and export; undefined: none. */
  encryption?: { file: string; exportName: string };
  /** `checkpointer.ttl`: the default TTL of threads (minutes) and the sweep's interval; undefined: unset. */
  threadTtl: { defaultMinutes?: number; sweepIntervalMinutes?: number };
  /** `dependencies`: the folders whose packages the graphs need, absolute (the config's own folder when it names none). */
  dependencies: string[];
  /** What the file asks that this server does differently or not at all, one sentence each, for the build log. */
  notes: string[];
};

/** Fields of langgraph.json that only shape the hosted platform's Docker image. */
const DOCKER_ONLY_FIELDS = ['dockerfile_lines', 'base_image', 'image_distro', 'api_version', 'pip_config_file', 'pip_installer', 'keep_pkg_tools'];
/** What a graph file of LangGraph.js is named (a spec without a folder and without one of these is a Python module path). */
const SCRIPT_EXTENSIONS = ['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.jsx'];
/** The most an env file may hold: it is read before anything of the repository runs. */
const ENV_FILE_LIMIT_BYTES = 1024 * 1024;

type StoreConfig = z.infer<typeof GraphConfigFile>['store'];

/**
 * Reads and validates a graph config file; throws VALIDATION_FAILED naming every problem, and for a
 * Python project (this server runs LangGraph.js graphs), or an env file or dependency outside
 * `confineTo` (the repository, when the platform reads a deployment's config: nothing of the host's is
 * read on its behalf; a sandboxed reader, or serve's, needs no bound).
 */
export function readGraphConfig(configPath: string, options: { confineTo?: string } = {}): GraphConfig {
  const path = resolve(configPath);
  if (!existsSync(path)) throw AppError.badRequest(`Graph config not found: ${path}`);
  let raw: unknown;
  try {
    raw = JSON.parse(readBoundedFile(path, ENV_FILE_LIMIT_BYTES));
  } catch (error) {
    throw AppError.badRequest(`Graph config ${path} is not valid JSON: ${(error as Error).message}`);
  }
  refusePython(raw);
  const parsed = GraphConfigFile.safeParse(raw);
  if (!parsed.success) throw AppError.fromZod(parsed.error, 'langgraph.json');
  const root = dirname(path);
  const confineTo = options.confineTo ?? '/';
  const notes: string[] = [];
  const graphs = Object.entries(parsed.data.graphs).map(([graphId, spec]) => {
    const text = typeof spec === 'string' ? spec : spec.path;
    const [file, exportName] = text.split(':', 2) as [string, string | undefined];
    return {
      graphId,
      file: resolve(root, file),
      exportName: exportName || 'default',
      description: typeof spec === 'string' ? undefined : spec.description,
    };
  });
  const env = typeof parsed.data.env === 'string' ? readEnvFile(root, parsed.data.env, confineTo, notes) : (parsed.data.env ?? {});
  const dependencies = (parsed.data.dependencies ?? ['.']).map((dependency) => {
    const folder = resolve(root, dependency);
    if (!within(confineTo, folder)) throw AppError.badRequest(`langgraph.json: dependency "${dependency}" is outside the repository`);
    return folder;
  });
  const httpApp = typeof parsed.data.http?.app === 'string' ? parsed.data.http.app : undefined;
  const cors = corsOptionsOf(parsed.data.http?.cors);
  const ui = parsed.data.ui ? { components: parsed.data.ui, shared: parsed.data.ui_config?.shared } : undefined;
  const ttl = parsed.data.checkpointer?.ttl;
  const threadTtl = { defaultMinutes: ttl?.default_ttl, sweepIntervalMinutes: ttl?.sweep_interval_minutes };
  const authPath = parsed.data.auth?.path;
  const auth = authPath
    ? { ...fileExport(root, authPath), disableStudioAuth: parsed.data.auth?.disable_studio_auth ?? false, allowPlatformKeys: parsed.data.auth?.allow_langsmith_api_keys ?? false }
    : undefined;
  const encryption = parsed.data.encryption ? fileExport(root, parsed.data.encryption.path) : undefined;
  checkNodeVersion(parsed.data.node_version, notes);
  const dockerOnly = DOCKER_ONLY_FIELDS.filter((field) => (raw as Record<string, unknown>)[field] !== undefined);
  if (dockerOnly.length) notes.push(`${dockerOnly.join(', ')} only shape the hosted platform's Docker image: ignored here (deployed code runs in a sandbox on this machine)`);
  return { path, root, graphs, env, httpApp, cors, ui, store: parsed.data.store, threadTtl, auth, encryption, dependencies, notes };
}

/** `http.cors` as the agent server's middleware takes it. */
function corsOptionsOf(cors: z.infer<typeof HttpCors> | undefined): CorsOptions | undefined {
  if (!cors) return undefined;
  return {
    allowOrigins: cors.allow_origins,
    allowOriginRegex: cors.allow_origin_regex,
    allowMethods: cors.allow_methods?.map((method) => method.toUpperCase()),
    allowHeaders: cors.allow_headers,
    allowCredentials: cors.allow_credentials,
    exposeHeaders: cors.expose_headers,
    maxAge: cors.max_age,
  };
}

/**
 * BAD_REQUEST for a Python LangGraph project, before anything installs: `python_version`, or a graph
 * given as a Python file or module path (`agent.graphs.agent:graph`, no file extension).
 */
function refusePython(raw: unknown): void {
  if (!raw || typeof raw !== 'object') return;
  const config = raw as { python_version?: unknown; graphs?: Record<string, unknown> };
  const specs = Object.values(config.graphs ?? {}).map((spec) => (typeof spec === 'string' ? spec : typeof (spec as { path?: unknown })?.path === 'string' ? (spec as { path: string }).path : ''));
  const python = specs.find((spec) => {
    const file = spec.split(':', 1)[0]!;
    return extname(file) === '.py' || (!file.includes('/') && !SCRIPT_EXTENSIONS.includes(extname(file)));
  });
  if (config.python_version !== undefined || python) {
    const why = config.python_version !== undefined ? `python_version ${String(config.python_version)}` : `graph "${python}"`;
    throw AppError.badRequest(`This is a Python LangGraph project (${why}): this platform runs LangGraph.js graphs (TypeScript or JavaScript) only`);
  }
}

/**
 * `node_version`: deployed code runs on this server's Node. A major above it is refused (the graphs
 * may use what it lacks); one at or below it is served, said in the build log when it differs.
 */
function checkNodeVersion(asked: string | number | undefined, notes: string[]): void {
  if (asked === undefined) return;
  const major = Number(String(asked).replace(/^v/, '').split('.')[0]);
  const running = Number(process.versions.node.split('.')[0]);
  if (!Number.isInteger(major)) throw AppError.badRequest(`langgraph.json: node_version "${String(asked)}" is not a Node.js major version`);
  if (major > running) throw AppError.badRequest(`langgraph.json asks for Node.js ${major}; this platform runs deployed code on Node.js ${process.versions.node}`);
  if (major < running) notes.push(`node_version ${major}: served by Node.js ${process.versions.node}, which runs what Node.js ${major} runs`);
}

/** Whether `path` (after links) lies inside `root`. */
function within(root: string, path: string): boolean {
  const real = (at: string) => (existsSync(at) ? realpathSync(at) : resolve(at));
  const rel = relative(real(root), real(path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** `"./file.ts:name"` resolved against the config's folder (the default export when no name is given). */
function fileExport(root: string, spec: string): { file: string; exportName: string } {
  const [file, exportName] = spec.split(':', 2) as [string, string | undefined];
  return { file: resolve(root, file), exportName: exportName || 'default' };
}

/**
 * Copies the config's `env` into the process environment, where graph code and the server's own
 * settings (LANGGRAPH_CONFIG) read it; the operator's own environment wins over the file.
 */
export function applyGraphConfigEnv(config: Pick<GraphConfig, 'env'>, env: NodeJS.ProcessEnv = process.env): void {
  for (const [key, value] of Object.entries(config.env)) if (env[key] === undefined) env[key] = value;
}

/**
 * The config's `env` file, a dotenv file (KEY=VALUE lines, `#` comments, optional quotes). One that is
 * not there (kept out of git, as it should be) gives nothing, noted: the deployment's secrets are how
 * values reach it, as the reference server carries on without one. It must lie inside `confineTo` and
 * be a regular file of at most a megabyte (it is read before anything else of the repository).
 */
function readEnvFile(root: string, name: string, confineTo: string, notes: string[]): Record<string, string> {
  const path = resolve(root, name);
  if (!within(confineTo, path)) throw AppError.badRequest(`langgraph.json: env file "${name}" is outside the repository`);
  if (!existsSync(path)) {
    notes.push(`env file "${name}" is not in the repository (kept out of git): continuing without it; the deployment's secrets give its variables`);
    return {};
  }
  const env: Record<string, string> = {};
  for (const line of readBoundedFile(path, ENV_FILE_LIMIT_BYTES).split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith('#')) continue;
    env[match[1]!] = match[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return env;
}

/**
 * A regular file's text, refused (BAD_REQUEST) when it is anything else or larger than `limit` bytes.
 * Opened without blocking: a named pipe in its place would otherwise hold the reader forever.
 */
function readBoundedFile(path: string, limit: number): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw AppError.badRequest(`${path} is not a regular file`);
    if (stat.size > limit) throw AppError.badRequest(`${path} is larger than ${limit / 1024 / 1024} MB`);
    const buffer = Buffer.alloc(stat.size);
    let read = 0;
    while (read < stat.size) {
      const count = readSync(fd, buffer, read, stat.size - read, read);
      if (count === 0) break;
      read += count;
    }
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
