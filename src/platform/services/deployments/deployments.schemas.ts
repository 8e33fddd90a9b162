// Input schemas of the control plane (deployments and revisions), named after the API nouns, and the
// revision vocabulary shared by its layers.
import { isAbsolute, normalize } from 'node:path';
import { z } from 'zod';

/** Every revision status (DECISIONS); the normal path is the first seven, in order. */
const REVISION_STATUSES = [
  'CREATING',
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
  'DEPLOYED',
  'CREATE_FAILED',
  'BUILD_FAILED',
  'DEPLOY_FAILED',
  'SKIPPED',
  'INTERRUPTED',
  'UNKNOWN',
] as const;
export type RevisionStatus = (typeof REVISION_STATUSES)[number];

/** Statuses after which the pipeline does nothing more with a revision. */
export const FINISHED_REVISION_STATUSES: readonly RevisionStatus[] = ['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN'];

// OVER_LIMIT: stopped for outgrowing its disk limits (launcher/deployment-usage.ts), beside the spec's set.
const DEPLOYMENT_STATUSES = ['AWAITING_DATABASE', 'READY', 'UNUSED', 'AWAITING_DELETE', 'UNKNOWN', 'OVER_LIMIT'] as const;

/**
 * Environment names a secret may not take: what the agent server itself is configured with, and what
 * changes how node or git behave. A secret is an environment variable of the deployment's agent server.
 */
const RESERVED_SECRET_NAMES = /^(DATABASE_URL|PATH|HOME|NODE_.*|AGENT_PLATFORM_.*|GIT_.*|npm_.*|LD_.*|PORT|HOST|LOG_.*)$/i;

// `git clone` receives the URL as one argv element (never a shell), but a value starting with `-`
// would be read as an option, and shell metacharacters in a repository address are a sign of an
// attempt rather than a real URL, so both are refused outright.
const SHELL_METACHARACTERS = /[\s;&|`$<>(){}[\]'"\\*?!#]/;

const repoUrl = z
  .string()
  .min(1)
  .max(2048)
  .refine((value) => !value.startsWith('-') && !SHELL_METACHARACTERS.test(value) && !value.includes('::'), {
    message: 'repo_url must be a git URL or path without spaces or shell metacharacters',
  });

// A branch, tag or commit: git's ref-name rules, and never an option.
const repoRef = z
  .string()
  .min(1)
  .max(255)
  .regex(/^(?!-)(?!.*\.\.)(?!.*@\{)[A-Za-z0-9._/+-]+$/, 'repo_ref must be a branch, tag or commit name')
  .refine((value) => !value.endsWith('.lock') && !value.endsWith('/') && !value.startsWith('/'), { message: 'repo_ref must be a branch, tag or commit name' });

// A file inside the repository: relative, and not escaping it once normalised (symlinks are checked
// again after the clone).
const graphConfigPath = z
  .string()
  .min(1)
  .max(1024)
  .refine((value) => !isAbsolute(value) && !value.includes('\0') && !normalize(value).startsWith('..'), {
    message: 'graph_config_path must be a path inside the repository',
  });

const SecretInput = z.object({
  name: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a secret name is an environment variable name (letters, digits, underscore)')
    .refine((name) => !RESERVED_SECRET_NAMES.test(name), { message: 'this name is reserved by the runtime' }),
  value: z.string().max(65_536),
});

const secrets = z
  .array(SecretInput)
  .max(100)
  .refine((list) => new Set(list.map((secret) => secret.name)).size === list.length, { message: 'secret names must be unique' });

/** The most agent servers one deployment runs (resource_spec.replicas, or min_scale as the hosted platform names it). */
export const MAX_REPLICAS = 8;
const ResourceSpec = z
  .record(z.string(), z.unknown())
  .refine(
    (spec) => [spec.replicas, spec.min_scale].every((asked) => asked === undefined || asked === null || (typeof asked === 'number' && Number.isInteger(asked) && asked >= 1 && asked <= MAX_REPLICAS)),
    { message: `replicas (min_scale) must be a whole number from 1 to ${MAX_REPLICAS}` },
  );

const SourceConfigFields = {
  integration_id: z.uuid().nullish(),
  repo_url: repoUrl,
  deployment_type: z.enum(['dev', 'prod']).nullish(),
  build_on_push: z.boolean().optional(),
  custom_url: z.string().max(2048).nullish(),
  resource_spec: ResourceSpec.nullish(),
};

// `langgraph_config_path` is accepted as an alias of `graph_config_path` (DECISIONS).
const withConfigPathAlias = (value: unknown) => {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    if (record.graph_config_path === undefined && record.langgraph_config_path !== undefined) {
      return { ...record, graph_config_path: record.langgraph_config_path };
    }
  }
  return value;
};

const SourceRevisionConfig = z.preprocess(
  withConfigPathAlias,
  z.object({
    repo_ref: repoRef,
    graph_config_path: graphConfigPath,
    image_uri: z.string().max(2048).nullish(),
  }),
);

const SourceRevisionConfigPatch = z.preprocess(
  withConfigPathAlias,
  z.object({
    repo_ref: repoRef.optional(),
    graph_config_path: graphConfigPath.optional(),
    image_uri: z.string().max(2048).nullish(),
  }),
);

export const DeploymentCreate = z.object({
  name: z.string().min(1).max(255),
  // `external_docker` is a known source that this installation refuses with 400 (DECISIONS).
  source: z.enum(['github', 'external_docker']),
  source_config: z.object(SourceConfigFields),
  source_revision_config: SourceRevisionConfig,
  secrets: secrets.default([]),
});

export const DeploymentPatch = z.object({
  // Immutable fields are recognised so they can be refused with 400 rather than ignored.
  name: z.unknown().optional(),
  source: z.unknown().optional(),
  source_config: z
    .object({
      integration_id: z.unknown().optional(),
      repo_url: z.unknown().optional(),
      deployment_type: z.unknown().optional(),
      build_on_push: z.boolean().optional(),
      custom_url: z.string().max(2048).nullish(),
      resource_spec: ResourceSpec.nullish(),
    })
    .optional(),
  source_revision_config: SourceRevisionConfigPatch.optional(),
  secrets: secrets.optional(),
});

const limit = z.coerce.number().int().min(1).max(100).default(20);
const offset = z.coerce.number().int().min(0).max(1_000_000).default(0);

export const DeploymentListQuery = z.object({
  limit,
  offset,
  name_contains: z.string().max(255).optional(),
  status: z.enum(DEPLOYMENT_STATUSES).optional(),
  deployment_ids: z
    .string()
    .max(100 * 37)
    .transform((value) => value.split(',').map((id) => id.trim()).filter(Boolean))
    .pipe(z.array(z.uuid()).max(100))
    .optional(),
});

export const PageQuery = z.object({ limit, offset });

export const RevisionLogsQuery = z.object({
  type: z.enum(['build', 'deploy']).default('build'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset,
});
export type RevisionLogsQueryInput = z.input<typeof RevisionLogsQuery>;
