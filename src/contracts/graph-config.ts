// The graph config file (`langgraph.json`): which graphs a deployment serves and the environment they
// run in. Parsed with zod so a bad file names every problem at once.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
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
    http: z.object({}).passthrough().optional(),
    ui: z.record(z.string().min(1), z.string().min(1)).optional(),
    ui_config: z.object({ shared: z.array(z.string()).optional() }).optional(),
    node_version: z.string().optional(),
    auth: z
      .object({
        path: z.string().regex(/^[^:]+(:[A-Za-z_$][\w$]*)?$/, 'expected "./path/to/auth.ts:exportName"').optional(),
        disable_studio_auth: z.boolean().optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough();

export type GraphEntry = { graphId: string; file: string; exportName: string; description?: string };

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
  /** `store`: the long-term store's embedding index and time to live. */
  store?: StoreConfig;
  /** `auth`: the project's `Auth` object (`@langchain/langgraph-sdk/auth`), by absolute file and export; undefined: no custom auth. */
  auth?: { file: string; exportName: string; disableStudioAuth: boolean };
  /** `checkpointer.ttl`: the default TTL of threads (minutes) and the sweep's interval; undefined: unset. */
  threadTtl: { defaultMinutes?: number; sweepIntervalMinutes?: number };
};

type StoreConfig = z.infer<typeof GraphConfigFile>['store'];

/** Reads and validates a graph config file; throws VALIDATION_FAILED naming every problem. */
export function readGraphConfig(configPath: string): GraphConfig {
  const path = resolve(configPath);
  if (!existsSync(path)) throw AppError.badRequest(`Graph config not found: ${path}`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw AppError.badRequest(`Graph config ${path} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = GraphConfigFile.safeParse(raw);
  if (!parsed.success) throw AppError.fromZod(parsed.error, 'langgraph.json');
  const root = dirname(path);
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
  const env = typeof parsed.data.env === 'string' ? readEnvFile(resolve(root, parsed.data.env)) : (parsed.data.env ?? {});
  const httpApp = typeof parsed.data.http?.app === 'string' ? parsed.data.http.app : undefined;
  const ui = parsed.data.ui ? { components: parsed.data.ui, shared: parsed.data.ui_config?.shared } : undefined;
  const ttl = parsed.data.checkpointer?.ttl;
  const threadTtl = { defaultMinutes: ttl?.default_ttl, sweepIntervalMinutes: ttl?.sweep_interval_minutes };
  const authPath = parsed.data.auth?.path;
  const auth = authPath ? { ...fileExport(root, authPath), disableStudioAuth: parsed.data.auth?.disable_studio_auth ?? false } : undefined;
  return { path, root, graphs, env, httpApp, ui, store: parsed.data.store, threadTtl, auth };
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

/** A dotenv file: KEY=VALUE lines, `#` comments, optional quotes. */
function readEnvFile(path: string): Record<string, string> {
  if (!existsSync(path)) throw AppError.badRequest(`env file not found: ${path}`);
  const env: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith('#')) continue;
    env[match[1]!] = match[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return env;
}
