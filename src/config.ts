// The only reader of process.env. Parsed once with zod; a bad configuration lists every problem.
import { availableParallelism } from 'node:os';
import { isIPv4 } from 'node:net';
import { resolve } from 'node:path';
import { z } from 'zod';

const ROLES = ['api', 'worker', 'runtime'] as const;
type Role = (typeof ROLES)[number];

const byteSize = z
  .string()
  .regex(/^\d+(b|kb|mb|gb)?$/i, 'expected a size such as 512kb or 10mb');

// AES keys are taken as their bytes (UTF-8), as the reference server takes LANGGRAPH_AES_KEY.
const aesKey = z
  .string()
  .refine((key) => [16, 24, 32].includes(Buffer.byteLength(key)), { message: 'must be 16, 24 or 32 bytes (AES-128, AES-192 or AES-256)' });

const EnvSchema = z.object({
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  /**
   * The login (CREATEROLE, CREATEDB, not a superuser) that makes and drops deployments' logins and
   * databases, on the server where deployments' databases are to live: the platform's (with
   * DATABASE_URL; without this setting DATABASE_URL's login does, and start-up warns if that is a
   * superuser) or another one, kept for deployments. The embedded database has its own admin login,
   * used when this is unset.
   */
  AGENT_PLATFORM_ADMIN_DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  PORT: z.coerce.number().int().min(0).max(65535).default(4100),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: z.url().optional(),
  /** Where the embedded database, keys, revisions and caches live; a relative path is from the working directory at start. */
  AGENT_PLATFORM_DATA_DIR: z.string().min(1).default('.data'),
  AGENT_PLATFORM_ROLES: z
    .string()
    .default(ROLES.join(','))
    .transform((value) => value.split(',').map((role) => role.trim()).filter(Boolean))
    .pipe(z.array(z.enum(ROLES)).min(1, 'name at least one role')),
  /** base64 of 32 bytes; generated into the data directory on the first embedded start */
  AGENT_PLATFORM_SECRET_KEY: z
    .string()
    .refine((value) => Buffer.from(value, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
    .optional(),
  AGENT_PLATFORM_BODY_LIMIT: byteSize.default('10mb'),
  /** Trace ingestion: largest request body after decompression (the SDK batches up to ~24 MB). */
  AGENT_PLATFORM_INGEST_BODY_LIMIT: byteSize.default('100mb'),
  /** Trace ingestion: largest run attachment kept in PostgreSQL; larger ones are refused (413). */
  AGENT_PLATFORM_ATTACHMENT_LIMIT: byteSize.default('20mb'),
  /** Deepest nesting of arrays and objects accepted in any JSON body (deeper: 422/400). */
  AGENT_PLATFORM_JSON_MAX_DEPTH: z.coerce.number().int().min(16).max(1000).default(128),
  /** zstd bodies: largest window a frame may declare (memory the decoder must hold); larger: 413. */
  AGENT_PLATFORM_ZSTD_WINDOW_LIMIT: byteSize.default('8mb'),
  /** Agent-server webhooks may target loopback, link-local and private addresses (off: refused, SSRF). */
  AGENT_PLATFORM_WEBHOOK_ALLOW_PRIVATE: z.stringbool().default(false),
  /** GraphQL: deepest selection set and most tokens one document may have (beyond: 400). */
  AGENT_PLATFORM_GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(2).max(100).default(15),
  AGENT_PLATFORM_GRAPHQL_MAX_TOKENS: z.coerce.number().int().min(100).max(100_000).default(2_000),
  // Pools sized to the work, not to the clients: a statement holds a connection for well under a
  // millisecond, so a handful per pool keeps a process's cores busy, and every connection is a
  // PostgreSQL backend (npm run bench:runs prints the backends a serve holds after load).
  AGENT_PLATFORM_DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(6),
  /**
   * Connections of each of an agent server's pools: its API thread's, and its runtime thread's (runs,
   * checkpoints, store, job queue). Default: one per run the runtime executes at once, at most 4 (see
   * runtimeDbPoolSize below).
   */
  AGENT_PLATFORM_RUNTIME_DB_POOL_SIZE: z.coerce.number().int().min(2).max(200).optional(),
  /**
   * Most connections a deployment's login may hold to its own database, all its runtimes together (a
   * redeploy runs two for a moment): one deployment cannot take the server's every connection.
   */
  AGENT_PLATFORM_DEPLOYMENT_DB_CONNECTIONS: z.coerce.number().int().min(5).max(10_000).default(64),
  /**
   * The embedded PostgreSQL's max_connections, and how many of them only the platform's own logins
   * may take (PostgreSQL's reserved_connections): deployments' logins share the rest, each up to
   * AGENT_PLATFORM_DEPLOYMENT_DB_CONNECTIONS, and a deployment whose limit no longer fits beside the
   * others' is not made (its build says so). On an external server these are its own settings.
   */
  AGENT_PLATFORM_EMBEDDED_MAX_CONNECTIONS: z.coerce.number().int().min(50).max(100_000).default(1000),
  AGENT_PLATFORM_RESERVED_CONNECTIONS: z.coerce.number().int().min(0).max(10_000).default(100),
  /**
   * A deployment's disk: its own folders' files (HOME, caches: its resource_spec.disk_mb wins) and its
   * database (resource_spec.database_mb wins), measured by the worker that runs it every
   * AGENT_PLATFORM_USAGE_CHECK_SECONDS. Over either, its agent server is stopped and the deployment's
   * status is OVER_LIMIT until its limit is raised (or what it holds shrinks), then it starts again.
   */
  AGENT_PLATFORM_DEPLOYMENT_FILES_LIMIT: byteSize.default('2gb'),
  AGENT_PLATFORM_DEPLOYMENT_DATABASE_LIMIT: byteSize.default('10gb'),
  AGENT_PLATFORM_USAGE_CHECK_SECONDS: z.coerce.number().min(0.2).max(3600).default(30),
  /** Temporary files one session of a deployment's login may write (sorts, hashes spilled to disk); beyond: its query fails. */
  AGENT_PLATFORM_DEPLOYMENT_TEMP_FILES: byteSize.default('2gb'),
  /** Days trace runs are kept (by start time) in a workspace that sets no retention of its own. */
  AGENT_PLATFORM_TRACE_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(400),
  /**
   * Seconds a finished job (completed, failed or cancelled) stays in the job queue before pg-boss
   * deletes it, on every queue; 0 keeps them forever. Runs keep their own rows, so a job's row is only
   * history: an hour by default keeps the queue's table small under a steady stream of runs.
   */
  AGENT_PLATFORM_JOB_RETENTION_SECONDS: z.coerce.number().int().min(0).max(365 * 86_400).default(3600),
  /**
   * Seconds between two passes of the worker role's cron clock (pg-boss `cronMonitorIntervalSeconds`):
   * a cron's tick reaches its queue within this of its minute. 30 by default, as in pg-boss; tests
   * shorten it so a real tick does not keep them waiting.
   */
  AGENT_PLATFORM_CRON_CLOCK_SECONDS: z.coerce.number().int().min(1).max(45).default(30),
  /**
   * Seconds an API process reuses a resolved API key (its user's roles, the tenant's check) before
   * reading it again; 0 reads it on every request. Revoking a key or changing roles clears every
   * process's cache at once (a notification); this bound only matters if that notification is lost.
   */
  AGENT_PLATFORM_API_KEY_CACHE_SECONDS: z.coerce.number().int().min(0).max(60).default(5),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** One readable line per entry instead of JSON; the CLI's default is whether its output is a terminal (logger.ts). */
  LOG_PRETTY: z.stringbool().default(false),
  /** Agent server: per-graph default assistant config/context, JSON `{"<graph id>": {...config, "context": {...}}}`. */
  LANGGRAPH_CONFIG: z
    .string()
    .transform((text, issue) => {
      try {
        return z.record(z.string(), z.record(z.string(), z.unknown())).parse(JSON.parse(text));
      } catch {
        issue.addIssue({ code: 'custom', message: 'expected a JSON object of objects keyed by graph id' });
        return z.NEVER;
      }
    })
    .optional(),
  /**
   * Agent server: the AES key data is encrypted with at rest (checkpoints, their writes, run stream
   * events, and the values of LANGGRAPH_AES_JSON_KEYS): 16, 24 or 32 bytes for AES-128, -192 or -256.
   */
  LANGGRAPH_AES_KEY: aesKey.optional(),
  /** Agent server: the key LANGGRAPH_AES_KEY replaced, still read (never written) while data encrypted with it remains. */
  LANGGRAPH_AES_KEY_PREVIOUS: aesKey.optional(),
  /** Agent server: comma-separated JSON keys whose values are encrypted wherever they appear in thread, assistant, run, cron and store data. */
  LANGGRAPH_AES_JSON_KEYS: z
    .string()
    .transform((text) => text.split(',').map((key) => key.trim()).filter(Boolean))
    .optional(),
  /** Trace agent-server runs into a tracing project (serve mode: the installation's default workspace). */
  AGENT_SERVER_TRACING: z.stringbool().default(true),
  /**
   * Agent server: a run's stream events and small output ride on the event bus's notifications, which
   * saves readers a read per batch. Any login of the database may LISTEN on that channel, deployed
   * code's included, so by default they do not (readers get ids and read the rows, which row-level
   * security guards); `serve`, where no deployed code connects, turns it on.
   */
  AGENT_PLATFORM_RUN_DATA_ON_EVENT_BUS: z.stringbool().default(false),
  /** serve mode: the workspace that receives traces (default: the installation's first workspace). */
  AGENT_SERVER_TRACE_WORKSPACE_ID: z.uuid().optional(),
  /** serve mode: the tracing project's name (default: the graph config's folder name). */
  AGENT_SERVER_TRACING_PROJECT: z.string().trim().min(1).max(200).optional(),
  /**
   * A deployed revision's agent server (set by its launcher): its runs' traces go to the platform's
   * public ingest API at this URL, with its deployment's trace key, into that key's project.
   */
  AGENT_PLATFORM_TRACES_URL: z.url().optional(),
  AGENT_PLATFORM_TRACES_API_KEY: z.string().min(1).optional(),
  AGENT_PLATFORM_TRACES_PROJECT: z.string().min(1).optional(),
  /** Agent runs' traces are stored by a batcher off the run's path: at most this long after the run. */
  AGENT_SERVER_TRACE_FLUSH_MS: z.coerce.number().int().min(1).max(60_000).default(50),
  /** …which queues at most this many trace operations (runs, patches); beyond that, runs wait for room. */
  AGENT_SERVER_TRACE_QUEUE: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * Agent server: opt-in rate limits (token buckets in its own database, shared by all its processes).
   * `off` (default); `shadow` counts and logs what would be refused and refuses nothing; `enforce`
   * answers 429 with Retry-After. A deployment sets it among its secrets, `serve` in its environment.
   */
  AGENT_SERVER_RATE_LIMIT: z.enum(['off', 'shadow', 'enforce']).default('off'),
  /** Requests per minute (and burst) of one caller: custom auth's identity, else the platform user the gateway let through. */
  AGENT_SERVER_RATE_LIMIT_CALLER_PER_MINUTE: z.coerce.number().min(1).max(1_000_000).default(600),
  /** Requests per minute (and burst) of the whole deployment, all callers together. */
  AGENT_SERVER_RATE_LIMIT_DEPLOYMENT_PER_MINUTE: z.coerce.number().min(1).max(10_000_000).default(6_000),
  /** Searches (the `…/search` and `…/count` routes, which read the most) per minute of one caller, besides the caller's limit. */
  AGENT_SERVER_RATE_LIMIT_SEARCH_PER_MINUTE: z.coerce.number().min(1).max(1_000_000).default(120),
  /**
   * Agent server: seconds between two keep-alives of an open SSE stream (a comment line), so proxies and
   * clients that drop an idle connection keep it. A deployed revision's agent server gets the platform's.
   */
  AGENT_PLATFORM_SSE_HEARTBEAT_SECONDS: z.coerce.number().min(0.01).max(3600).default(15),
  /** Agent server: how many runs one runtime executes at once. */
  AGENT_PLATFORM_RUNTIME_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  /**
   * How long an api process keeps serving after SIGTERM while /ok answers 503 and its answers close
   * their connections, before it stops accepting (a rolling upgrade behind a balancer: at least the
   * balancer's health-check interval, and the 5 s of HTTP keep-alive for clients connected directly).
   */
  AGENT_PLATFORM_SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).max(300).default(0),
  /**
   * Agent server: how long a stopping runtime lets its runs in progress finish before it ends them as
   * errors (it takes no new run meanwhile). A deployed revision's agent server has the default.
   */
  AGENT_PLATFORM_RUN_DRAIN_SECONDS: z.coerce.number().min(0).max(60).default(8),
  /**
   * How many attempts a run gets when the runtime executing it dies (kill -9, a replica lost): each
   * resumes from its last checkpoint; past this many it ends as `error`. 1: never executed again.
   */
  AGENT_SERVER_RUN_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  /**
   * Worker threads for trace ingestion's parsing and writes (0: in the request's thread). Two even on
   * two cores: each thread also waits on its database round trips (measured: 2 threads +15% runs/s).
   */
  AGENT_PLATFORM_INGEST_THREADS: z.coerce.number().int().min(0).max(64).default(Math.min(4, Math.max(2, availableParallelism()))),
  /**
   * Trace INSERT statements in flight at once per ingest thread (or per process without threads);
   * concurrent requests wait and share the next statement (platform/ingest/run-writer.ts).
   */
  AGENT_PLATFORM_INGEST_WRITE_CONNECTIONS: z.coerce.number().int().min(1).max(64).default(2),
  /** Runtime role: the deployments whose runtimes this process runs (comma-separated ids; `serve` adds its own). */
  AGENT_PLATFORM_RUNTIME_DEPLOYMENTS: z
    .string()
    .default('')
    .transform((value) => value.split(',').map((id) => id.trim()).filter(Boolean))
    .pipe(z.array(z.uuid())),
  /** Run each deployment's graphs in a worker thread (default) rather than on the process's main thread. */
  AGENT_PLATFORM_RUNTIME_THREAD: z.stringbool().default(true),
  /** Worker role: work the control plane's revision pipeline and run deployed runtimes (child processes). */
  AGENT_PLATFORM_CONTROL_PLANE_WORKER: z.stringbool().default(true),
  /**
   * Deployed code (a revision's dependency install, its import check and its runtime) runs in a
   * bubblewrap sandbox. `auto`: when bubblewrap works on this machine; `bubblewrap`: always (start-up
   * fails without it); `none`: never, which only AGENT_PLATFORM_ALLOW_UNSANDBOXED makes deployable.
   */
  AGENT_PLATFORM_SANDBOX: z.enum(['auto', 'bubblewrap', 'none']).default('auto'),
  /** Deploy customers' code although no sandbox can be made (it then runs with the platform's OS user's reach). */
  AGENT_PLATFORM_ALLOW_UNSANDBOXED: z.stringbool().default(false),
  /** When the platform runs as root, a deployment's sandbox runs as the OS user this plus the deployment's number. */
  AGENT_PLATFORM_SANDBOX_UID_BASE: z.coerce.number().int().min(1000).max(2 ** 31 - 2 ** 24).default(1_000_000_000),
  /** A deployment's memory limit (its resource_spec.memory_mb wins), enforced through cgroups where they can be written. */
  AGENT_PLATFORM_SANDBOX_MEMORY: byteSize.default('2gb'),
  /**
   * A deployment's CPU share in cores' worth of weight when cores are contended (its resource_spec.cpu
   * wins, and also caps it), enforced through cgroups where they can be written.
   */
  AGENT_PLATFORM_SANDBOX_CPU: z.coerce.number().min(0.1).max(256).default(1),
  /**
   * Processes and threads a deployment may run at once (its resource_spec.pids wins), enforced through
   * cgroups: an agent server runs about 30 threads, a dependency install a few hundred at its peak.
   */
  AGENT_PLATFORM_SANDBOX_PIDS: z.coerce.number().int().min(32).max(1_000_000).default(1024),
  /**
   * `isolated`: each sandbox has a network of its own that reaches the internet and not the host's
   * loopback, link-local or private ranges (where slirp4netns, nsenter and ip are installed; else the
   * build log says it is not); `host`: deployed code shares the host's network.
   */
  AGENT_PLATFORM_SANDBOX_NETWORK: z.enum(['isolated', 'host']).default('isolated'),
  /** Addresses or IPv4 ranges (comma-separated) deployed code may reach although they are private, e.g. a model server on 10.1.2.3. */
  AGENT_PLATFORM_SANDBOX_ALLOWED_NETWORKS: z
    .string()
    .default('')
    .transform((value) => value.split(',').map((range) => range.trim()).filter(Boolean))
    .pipe(z.array(z.string().refine(isNetworkRange, 'expected an IPv4 address or range, e.g. 10.1.0.0/16'))),
  /**
   * Usage API: the first instant with usage data (the spec's cloud start date by default; a
   * self-hosted installation sets when it enabled usage collection). Earlier hours are never reported.
   */
  AGENT_PLATFORM_USAGE_DATA_START: z.union([z.iso.date(), z.iso.datetime({ offset: true })]).default('2026-01-05'),
  // Bulk export: the spec's limits are the defaults; tests shrink them.
  AGENT_PLATFORM_EXPORT_RETRIES: z.coerce.number().int().min(0).max(1000).default(20),
  AGENT_PLATFORM_EXPORT_RETRY_DELAY_SECONDS: z.coerce.number().int().min(0).default(30),
  AGENT_PLATFORM_EXPORT_RUN_TIMEOUT_SECONDS: z.coerce.number().positive().default(4 * 3600),
  AGENT_PLATFORM_EXPORT_TIMEOUT_SECONDS: z.coerce.number().positive().default(72 * 3600),
  AGENT_PLATFORM_EXPORT_RUNS_PER_EXPORT: z.coerce.number().int().min(1).default(45),
  AGENT_PLATFORM_EXPORT_EXPORTS_PER_WORKSPACE: z.coerce.number().int().min(1).default(15),
  /**
   * Rows read from PostgreSQL per batch; also the Parquet row group size. 5000 by bench:export (250k
   * rows, load 7): 18.4k rows/s at 597 MiB peak RSS against 13.7k rows/s at 639 MiB with 10000.
   */
  AGENT_PLATFORM_EXPORT_BATCH_ROWS: z.coerce.number().int().min(1).max(1_000_000).default(5_000),
  /**
   * COPY bytes per batch: a run reads as many rows per batch as fit in this at the bytes per row seen
   * so far (at most BATCH_ROWS), so the memory a run holds (its batches read ahead, their Arrow
   * columns, their copy in parquet-wasm) is bounded by bytes whatever the size of a row.
   */
  AGENT_PLATFORM_EXPORT_BATCH_BYTES: byteSize.default('4mb'),
  /** A file is closed, and checkpointed, once it reaches this size. */
  AGENT_PLATFORM_EXPORT_FILE_SIZE: byteSize.default('256mb'),
  /** S3 multipart part size (S3 refuses parts under 5 MiB but the last). */
  AGENT_PLATFORM_EXPORT_PART_SIZE: byteSize.default('8mb'),
  /** How often a worker looks for scheduled windows due, timed-out exports and runs left by a dead worker. */
  AGENT_PLATFORM_EXPORT_SWEEP_SECONDS: z.coerce.number().min(0.05).default(60),
  /** A run whose executor has not shown life for this long is handed to another worker. */
  AGENT_PLATFORM_EXPORT_LEASE_SECONDS: z.coerce.number().min(0.5).default(120),
  /** A storage request that takes longer fails (and the run is retried): a stalled store must not hang a worker. */
  AGENT_PLATFORM_EXPORT_S3_TIMEOUT_SECONDS: z.coerce.number().positive().default(300),
  /** Batches of one export run read from PostgreSQL at once, each over its own connection. */
  AGENT_PLATFORM_EXPORT_READ_CONNECTIONS: z.coerce.number().int().min(1).max(8).default(2),
  /** Export runs one worker process executes at once. */
  AGENT_PLATFORM_EXPORT_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(2),
  /** Delay after a scheduled window ends before its export starts. */
  AGENT_PLATFORM_EXPORT_SPAWN_DELAY_SECONDS: z.coerce.number().int().min(0).default(600),
});

export type Config = {
  databaseUrl: string | undefined;
  adminDatabaseUrl: string | undefined;
  port: number;
  host: string;
  publicUrl: string | undefined;
  dataDir: string;
  roles: Role[];
  secretKey: Buffer | undefined;
  bodyLimit: string;
  ingestBodyLimitBytes: number;
  attachmentLimitBytes: number;
  bodyLimitBytes: number;
  jsonMaxDepth: number;
  zstdWindowLimitBytes: number;
  webhookAllowPrivate: boolean;
  runDataOnEventBus: boolean;
  /** Encryption at rest of the agent server's data (absent: stored as given). */
  encryption: { key: string; previousKey: string | undefined; jsonKeys: string[] } | undefined;
  graphqlMaxDepth: number;
  graphqlMaxTokens: number;
  dbPoolSize: number;
  runtimeDbPoolSize: number;
  deploymentDatabaseConnections: number;
  deploymentTempFileBytes: number;
  deploymentFilesLimitBytes: number;
  deploymentDatabaseLimitBytes: number;
  usageCheckSeconds: number;
  embeddedMaxConnections: number;
  reservedConnections: number;
  apiKeyCacheSeconds: number;
  jobRetentionSeconds: number;
  cronClockSeconds: number;
  traceRetentionDays: number;
  logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  logPretty: boolean;
  langgraphConfig: Record<string, Record<string, unknown>> | undefined;
  /** How long a stopping runtime lets its runs in progress finish (AGENT_PLATFORM_RUN_DRAIN_SECONDS). */
  runDrainSeconds: number;
  /** Attempts of a run whose runtime died before it is given up (AGENT_SERVER_RUN_MAX_ATTEMPTS). */
  runMaxAttempts: number;
  /** How long a stopping api process serves while not ready (AGENT_PLATFORM_SHUTDOWN_DRAIN_SECONDS). */
  shutdownDrainSeconds: number;
  runtimeConcurrency: number;
  sseHeartbeatSeconds: number;
  runtimeThread: boolean;
  controlPlaneWorker: boolean;
  sandbox: SandboxConfig;
  runtimeDeployments: string[];
  ingestThreads: number;
  ingestWriteConnections: number;
  agentServerTracing: { enabled: boolean; workspaceId: string | undefined; project: string | undefined; flushIntervalMs: number; queueCapacity: number };
  /** The agent server's opt-in rate limits (AGENT_SERVER_RATE_LIMIT*). */
  agentServerRateLimits: { mode: 'off' | 'shadow' | 'enforce'; callerPerMinute: number; deploymentPerMinute: number; searchPerMinute: number };
  /** A deployed revision's agent server: where its traces go (the platform's ingest API) and with which key. */
  deploymentTraces: { url: string; apiKey: string; project: string } | undefined;
  usageDataStart: Date;
  exports: ExportLimits;
};

/** Bulk export limits (spec "Limits"), all configurable. */
export type ExportLimits = {
  retries: number;
  retryDelaySeconds: number;
  runTimeoutSeconds: number;
  exportTimeoutSeconds: number;
  runsPerExport: number;
  exportsPerWorkspace: number;
  batchRows: number;
  batchBytes: number;
  fileSizeBytes: number;
  partSizeBytes: number;
  sweepSeconds: number;
  leaseSeconds: number;
  s3TimeoutSeconds: number;
  workerConcurrency: number;
  readConnections: number;
  spawnDelaySeconds: number;
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}

/**
 * Parses the environment (plus CLI overrides, which win) into a Config; throws ConfigError listing every
 * problem. `defaults` are a command's own defaults, used where the environment sets nothing.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Record<string, string | undefined> = {},
  defaults: Record<string, string> = {},
): Config {
  const merged: Record<string, string | undefined> = { ...defaults };
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') merged[key] = value;
  for (const [key, value] of Object.entries(overrides)) if (value !== undefined) merged[key] = value;
  // Empty variables mean "unset", as in most .env tooling.
  for (const key of Object.keys(merged)) if (merged[key] === '') delete merged[key];

  const parsed = EnvSchema.safeParse(merged);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || 'env'}: ${issue.message}`));
  }
  const value = parsed.data;
  if (!value.LANGGRAPH_AES_KEY && (value.LANGGRAPH_AES_KEY_PREVIOUS || value.LANGGRAPH_AES_JSON_KEYS?.length)) {
    throw new ConfigError(['LANGGRAPH_AES_KEY: required when LANGGRAPH_AES_KEY_PREVIOUS or LANGGRAPH_AES_JSON_KEYS is set']);
  }
  return {
    databaseUrl: value.DATABASE_URL,
    adminDatabaseUrl: value.AGENT_PLATFORM_ADMIN_DATABASE_URL,
    port: value.PORT,
    host: value.HOST,
    publicUrl: value.PUBLIC_URL?.replace(/\/$/, ''),
    // Absolute from here on: a relative one would mean another folder to each child and sandbox that
    // runs in a working directory of its own (the compile caches' warm-up, a deployment's install).
    dataDir: resolve(value.AGENT_PLATFORM_DATA_DIR),
    roles: [...new Set(value.AGENT_PLATFORM_ROLES)],
    secretKey: value.AGENT_PLATFORM_SECRET_KEY ? Buffer.from(value.AGENT_PLATFORM_SECRET_KEY, 'base64') : undefined,
    bodyLimit: value.AGENT_PLATFORM_BODY_LIMIT,
    ingestBodyLimitBytes: toBytes(value.AGENT_PLATFORM_INGEST_BODY_LIMIT),
    attachmentLimitBytes: toBytes(value.AGENT_PLATFORM_ATTACHMENT_LIMIT),
    bodyLimitBytes: toBytes(value.AGENT_PLATFORM_BODY_LIMIT),
    jsonMaxDepth: value.AGENT_PLATFORM_JSON_MAX_DEPTH,
    zstdWindowLimitBytes: toBytes(value.AGENT_PLATFORM_ZSTD_WINDOW_LIMIT),
    webhookAllowPrivate: value.AGENT_PLATFORM_WEBHOOK_ALLOW_PRIVATE,
    // A notification too large for NOTIFY is kept in event_payloads for an hour: with encryption on,
    // run data stays off the bus rather than sit there in plaintext (readers read run_events).
    runDataOnEventBus: value.AGENT_PLATFORM_RUN_DATA_ON_EVENT_BUS && !value.LANGGRAPH_AES_KEY,
    encryption: value.LANGGRAPH_AES_KEY
      ? { key: value.LANGGRAPH_AES_KEY, previousKey: value.LANGGRAPH_AES_KEY_PREVIOUS, jsonKeys: value.LANGGRAPH_AES_JSON_KEYS ?? [] }
      : undefined,
    graphqlMaxDepth: value.AGENT_PLATFORM_GRAPHQL_MAX_DEPTH,
    graphqlMaxTokens: value.AGENT_PLATFORM_GRAPHQL_MAX_TOKENS,
    dbPoolSize: value.AGENT_PLATFORM_DB_POOL_SIZE,
    // A run holds a connection only for one short statement at a time, and a thread's statements are
    // issued one event-loop turn after another: four connections keep PostgreSQL's cores as busy as
    // six did (bench:runs-paired, 32 clients: as many runs/s, less CPU per run); an agent server's
    // backends under load are these two pools, its job queues' three and its listening connection.
    runtimeDbPoolSize: value.AGENT_PLATFORM_RUNTIME_DB_POOL_SIZE ?? Math.max(2, Math.min(value.AGENT_PLATFORM_RUNTIME_CONCURRENCY, 4)),
    deploymentDatabaseConnections: value.AGENT_PLATFORM_DEPLOYMENT_DB_CONNECTIONS,
    deploymentTempFileBytes: toBytes(value.AGENT_PLATFORM_DEPLOYMENT_TEMP_FILES),
    deploymentFilesLimitBytes: toBytes(value.AGENT_PLATFORM_DEPLOYMENT_FILES_LIMIT),
    deploymentDatabaseLimitBytes: toBytes(value.AGENT_PLATFORM_DEPLOYMENT_DATABASE_LIMIT),
    usageCheckSeconds: value.AGENT_PLATFORM_USAGE_CHECK_SECONDS,
    embeddedMaxConnections: value.AGENT_PLATFORM_EMBEDDED_MAX_CONNECTIONS,
    reservedConnections: value.AGENT_PLATFORM_RESERVED_CONNECTIONS,
    apiKeyCacheSeconds: value.AGENT_PLATFORM_API_KEY_CACHE_SECONDS,
    jobRetentionSeconds: value.AGENT_PLATFORM_JOB_RETENTION_SECONDS,
    cronClockSeconds: value.AGENT_PLATFORM_CRON_CLOCK_SECONDS,
    traceRetentionDays: value.AGENT_PLATFORM_TRACE_RETENTION_DAYS,
    logLevel: value.LOG_LEVEL,
    logPretty: value.LOG_PRETTY,
    langgraphConfig: value.LANGGRAPH_CONFIG,
    runtimeConcurrency: value.AGENT_PLATFORM_RUNTIME_CONCURRENCY,
    runDrainSeconds: value.AGENT_PLATFORM_RUN_DRAIN_SECONDS,
    runMaxAttempts: value.AGENT_SERVER_RUN_MAX_ATTEMPTS,
    shutdownDrainSeconds: value.AGENT_PLATFORM_SHUTDOWN_DRAIN_SECONDS,
    sseHeartbeatSeconds: value.AGENT_PLATFORM_SSE_HEARTBEAT_SECONDS,
    runtimeThread: value.AGENT_PLATFORM_RUNTIME_THREAD,
    controlPlaneWorker: value.AGENT_PLATFORM_CONTROL_PLANE_WORKER,
    sandbox: {
      mode: value.AGENT_PLATFORM_SANDBOX,
      allowUnsandboxed: value.AGENT_PLATFORM_ALLOW_UNSANDBOXED,
      uidBase: value.AGENT_PLATFORM_SANDBOX_UID_BASE,
      memoryBytes: toBytes(value.AGENT_PLATFORM_SANDBOX_MEMORY),
      cpus: value.AGENT_PLATFORM_SANDBOX_CPU,
      pids: value.AGENT_PLATFORM_SANDBOX_PIDS,
      network: { mode: value.AGENT_PLATFORM_SANDBOX_NETWORK, allowed: value.AGENT_PLATFORM_SANDBOX_ALLOWED_NETWORKS },
    },
    runtimeDeployments: value.AGENT_PLATFORM_RUNTIME_DEPLOYMENTS,
    ingestThreads: value.AGENT_PLATFORM_INGEST_THREADS,
    ingestWriteConnections: value.AGENT_PLATFORM_INGEST_WRITE_CONNECTIONS,
    agentServerTracing: {
      enabled: value.AGENT_SERVER_TRACING,
      workspaceId: value.AGENT_SERVER_TRACE_WORKSPACE_ID,
      project: value.AGENT_SERVER_TRACING_PROJECT,
      flushIntervalMs: value.AGENT_SERVER_TRACE_FLUSH_MS,
      queueCapacity: value.AGENT_SERVER_TRACE_QUEUE,
    },
    agentServerRateLimits: {
      mode: value.AGENT_SERVER_RATE_LIMIT,
      callerPerMinute: value.AGENT_SERVER_RATE_LIMIT_CALLER_PER_MINUTE,
      deploymentPerMinute: value.AGENT_SERVER_RATE_LIMIT_DEPLOYMENT_PER_MINUTE,
      searchPerMinute: value.AGENT_SERVER_RATE_LIMIT_SEARCH_PER_MINUTE,
    },
    deploymentTraces:
      value.AGENT_PLATFORM_TRACES_URL && value.AGENT_PLATFORM_TRACES_API_KEY && value.AGENT_PLATFORM_TRACES_PROJECT
        ? { url: value.AGENT_PLATFORM_TRACES_URL.replace(/\/$/, ''), apiKey: value.AGENT_PLATFORM_TRACES_API_KEY, project: value.AGENT_PLATFORM_TRACES_PROJECT }
        : undefined,
    // A bare date is midnight UTC.
    usageDataStart: new Date(value.AGENT_PLATFORM_USAGE_DATA_START.length === 10 ? `${value.AGENT_PLATFORM_USAGE_DATA_START}T00:00:00Z` : value.AGENT_PLATFORM_USAGE_DATA_START),
    exports: {
      retries: value.AGENT_PLATFORM_EXPORT_RETRIES,
      retryDelaySeconds: value.AGENT_PLATFORM_EXPORT_RETRY_DELAY_SECONDS,
      runTimeoutSeconds: value.AGENT_PLATFORM_EXPORT_RUN_TIMEOUT_SECONDS,
      exportTimeoutSeconds: value.AGENT_PLATFORM_EXPORT_TIMEOUT_SECONDS,
      runsPerExport: value.AGENT_PLATFORM_EXPORT_RUNS_PER_EXPORT,
      exportsPerWorkspace: value.AGENT_PLATFORM_EXPORT_EXPORTS_PER_WORKSPACE,
      batchRows: value.AGENT_PLATFORM_EXPORT_BATCH_ROWS,
      batchBytes: toBytes(value.AGENT_PLATFORM_EXPORT_BATCH_BYTES),
      fileSizeBytes: toBytes(value.AGENT_PLATFORM_EXPORT_FILE_SIZE),
      partSizeBytes: Math.max(5 * 1024 ** 2, toBytes(value.AGENT_PLATFORM_EXPORT_PART_SIZE)),
      sweepSeconds: value.AGENT_PLATFORM_EXPORT_SWEEP_SECONDS,
      leaseSeconds: value.AGENT_PLATFORM_EXPORT_LEASE_SECONDS,
      s3TimeoutSeconds: value.AGENT_PLATFORM_EXPORT_S3_TIMEOUT_SECONDS,
      workerConcurrency: value.AGENT_PLATFORM_EXPORT_WORKER_CONCURRENCY,
      readConnections: value.AGENT_PLATFORM_EXPORT_READ_CONNECTIONS,
      spawnDelaySeconds: value.AGENT_PLATFORM_EXPORT_SPAWN_DELAY_SECONDS,
    },
  };
}

export type SandboxConfig = {
  mode: 'auto' | 'bubblewrap' | 'none';
  allowUnsandboxed: boolean;
  uidBase: number;
  memoryBytes: number;
  cpus: number;
  pids: number;
  network: { mode: 'isolated' | 'host'; allowed: string[] };
};

/** An IPv4 address or CIDR range. */
function isNetworkRange(text: string): boolean {
  const [address, bits, more] = text.split('/');
  return more === undefined && isIPv4(address ?? '') && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= 32));
}

/** "512kb" → bytes (units are powers of 1024, as body-parser reads them). */
function toBytes(size: string): number {
  const match = /^(\d+)(b|kb|mb|gb)?$/i.exec(size)!;
  const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(match[2] ?? 'b').toLowerCase() as 'b'];
  return Number(match[1]) * unit;
}
