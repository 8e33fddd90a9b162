// What every service function receives: the process's dependencies plus who is asking.
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { AdminLogin } from './database/admin-login.js';
import type { SecretBox } from './crypto.js';
import type { Database } from './db.js';
import type { EventBus } from './events.js';
import type { PgBoss } from 'pg-boss';
import type { IngestRequest, Ingester, IngestResult } from './contracts/trace-wire.js';
import type { ViewerCache } from './viewer-cache.js';
import type { Viewer } from './viewer.js';

/** Process-wide dependencies, built once at start-up. */
export type Deps = {
  config: Config;
  db: Database;
  events: EventBus;
  secrets: SecretBox;
  logger: Logger;
  /** The login that makes and drops deployments' database logins (connects on first use). */
  adminLogin: AdminLogin;
  /** API keys resolved recently in this process (authenticateApiKey); cleared on tenancy changes. */
  viewers: ViewerCache;
  /** Where trace ingestion does its CPU work; absent: in the request's thread. */
  ingestThreads?: { ingest(who: Ingester, request: IngestRequest): Promise<IngestResult> };
  /**
   * Where this process's api role listens, once it does: deployed agent servers it launches send their
   * traces there when no PUBLIC_URL says where the platform answers.
   */
  apiUrl?: string;
  /** The process's job queue, once started (agent-server requests enqueue runs on it). */
  boss?: PgBoss;
  /** The control-plane runtimes this process launched (worker role); stopped before the job queue. */
  deployedRuntimes?: LaunchedRuntimes;
  /** Set when the api role begins to stop: /ok answers 503 and answers close their connections (buildApp's stop). */
  draining?: boolean;
};

/**
 * The deployed runtimes a worker launched, as the rest of the process sees them (the launcher lives
 * in runtime/, which services do not import): the one serving a revision, and stopping them all.
 */
type LaunchedRuntimes = {
  runtimeOf(revisionId: string): { url: string; graphIds: string[]; pid?(): number | undefined } | undefined;
  stop(): Promise<void>;
};

/** A service call: dependencies plus the authenticated viewer (or the system, for the admin CLI). */
export type ServiceContext = Deps & { viewer: Viewer };
