// Test plumbing: the real platform (HTTP server, event bus, database) in-process on a free port.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { inject } from 'vitest';
import { type Config, loadConfig } from '../../src/config.js';
import type { Deps, ServiceContext } from '../../src/context.js';
import type { Boss } from '../../src/queues.js';
import { SYSTEM_VIEWER } from '../../src/viewer.js';
import type { buildTenant } from './factories.js';

// The platform's modules are imported when a test starts a platform in its process, not with this file:
// most test files take only a URL or a call helper from here and run the platform as child processes,
// and loading the whole platform cost each of them seconds of import time (of a 15-minute suite).
const platformModules = async () => {
  const [{ buildApp }, { createDeps }, { authenticateApiKey }, { agentServerReference, runLocalDeployment }, { startPlatformJobs }, { registerLocalDeployment }, { newId }, { startIngestThreads }, { buildTenant }] =
    await Promise.all([
      import('../../src/platform/app.js'),
      import('../../src/wiring.js'),
      import('../../src/platform/services/tenancy/authentication.service.js'),
      import('../../src/start.js'),
      import('../../src/platform/jobs/platform-jobs.js'),
      import('../../src/platform/services/deployments/local-deployments.js'),
      import('../../src/ids.js'),
      import('../../src/platform/ingest/ingest-threads.js'),
      import('./factories.js'),
    ]);
  return { buildApp, createDeps, authenticateApiKey, agentServerReference, runLocalDeployment, startPlatformJobs, registerLocalDeployment, newId, startIngestThreads, buildTenant };
};

/** This test file's own database (test/support/file-database.ts), copied from the migrated template. */
export const databaseUrl = () => {
  const url = process.env.TEST_FILE_DATABASE_URL;
  if (!url) throw new Error('TEST_FILE_DATABASE_URL is unset: test/support/file-database.ts runs first as a vitest setup file');
  return url;
};

/** The login that makes deployments' logins, on this test file's database (AGENT_PLATFORM_ADMIN_DATABASE_URL). */
export const adminLoginUrl = () => {
  const url = process.env.TEST_FILE_ADMIN_DATABASE_URL;
  if (!url) throw new Error('TEST_FILE_ADMIN_DATABASE_URL is unset: test/support/file-database.ts runs first as a vitest setup file');
  return url;
};

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig(
    {},
    {
      DATABASE_URL: databaseUrl(),
      AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl(),
      PORT: '0',
      AGENT_PLATFORM_DATA_DIR: inject('dataDir'),
      AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
      AGENT_PLATFORM_DB_POOL_SIZE: '4',
      // One ingest thread per test platform: the thread path is what users run, and one starts faster.
      AGENT_PLATFORM_INGEST_THREADS: '1',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      // Revision builds and deployed runtimes are slow to start: only the control-plane tests turn
      // the pipeline on.
      AGENT_PLATFORM_CONTROL_PLANE_WORKER: 'false',
      // A cron clock pass each second (30 s in production): a real tick reaches its queue within a
      // second of its minute instead of keeping a test waiting.
      AGENT_PLATFORM_CRON_CLOCK_SECONDS: '1',
      ...overrides,
    },
  );
}

export type TestPlatform = {
  deps: Deps;
  url: string;
  system: ServiceContext;
  boss?: Boss;
  stop(): Promise<void>;
};

/** The API role (and optionally the worker role's job queue) in this process, over the test file's database. */
export async function startTestPlatform(options: { config?: Record<string, string>; jobs?: boolean } = {}): Promise<TestPlatform> {
  const { createDeps, startIngestThreads, startPlatformJobs, buildApp, agentServerReference } = await platformModules();
  const config = testConfig(options.config);
  const logger = pino({ level: config.logLevel });
  // The file's database is a copy of the migrated template.
  const wiring = await createDeps(config, logger, { databaseUrl: config.databaseUrl });
  startIngestThreads(wiring);
  const { deps } = wiring;
  // The platform's job queue; `jobs` also works the worker role's jobs.
  const boss = await startPlatformJobs(deps, { work: options.jobs ?? false });
  wiring.onStop(() => boss.stop({ graceful: false, close: true }));
  deps.boss = boss;
  const app = buildApp(deps, { agentServerReference: agentServerReference() });
  wiring.onStop(() => app.stop());
  const url = await app.start(0, '127.0.0.1');
  return { deps, url, boss, system: { ...deps, viewer: SYSTEM_VIEWER }, stop: wiring.stop };
}

/**
 * A local deployment of the platform (a graph config, as `admin deployments create` records one) whose
 * agent server runs in this process on its own database, as `start --role runtime --deployment <id>`
 * runs it, answering at the platform's /deployments/<id> through the gateway. `deps`: the agent
 * server's own, on its database (its services' context with a viewer).
 */
export async function startTestLocalDeployment(
  platform: TestPlatform,
  input: { configPath: string; workspaceId: string; deploymentId?: string },
): Promise<{ deploymentId: string; deps: Deps; system: ServiceContext; stop(): Promise<void> }> {
  const { registerLocalDeployment, newId, runLocalDeployment } = await platformModules();
  const { deploymentId } = await registerLocalDeployment(platform.system, { deploymentId: newId(), ...input });
  const running = await runLocalDeployment(platform.deps, deploymentId);
  return { deploymentId, deps: running.deps, system: { ...running.deps, viewer: SYSTEM_VIEWER }, stop: running.stop };
}

/** A service context acting as an API key's holder (a tenant's `adminKey`, say), optionally in one workspace. */
async function contextOfKey(platform: TestPlatform, key: string, workspaceId?: string): Promise<ServiceContext> {
  const { authenticateApiKey } = await platformModules();
  return { ...platform.deps, viewer: await authenticateApiKey(platform.deps, key, workspaceId) };
}

export type Tenant = Awaited<ReturnType<typeof buildTenant>>;

/** A test platform, a fresh tenant in it, and a service context acting as that tenant's admin key. */
export async function startTenantPlatform(options: Parameters<typeof startTestPlatform>[0] = {}): Promise<{ platform: TestPlatform; tenant: Tenant; ctx: ServiceContext }> {
  const platform = await startTestPlatform(options);
  const { buildTenant } = await platformModules();
  const tenant = await buildTenant(platform.system);
  return { platform, tenant, ctx: await contextOfKey(platform, tenant.adminKey) };
}

/**
 * A JSON call to the platform at `url` (a POST when it has a body, else a GET, unless `method` says),
 * with an API key and tenant when given: its status and parsed body.
 */
export async function callPlatform(
  url: string,
  path: string,
  init: { method?: string; key?: string; tenant?: string; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(init.key ? { 'x-api-key': init.key } : {}),
      ...(init.tenant ? { 'x-tenant-id': init.tenant } : {}),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** POSTs a GraphQL operation with an API key (and optional tenant) and returns status and body. */
export async function graphql(
  url: string,
  query: string,
  options: { key?: string; tenant?: string; variables?: Record<string, unknown> } = {},
): Promise<{ status: number; body: { data?: any; errors?: { message: string; extensions?: Record<string, any> }[] } }> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.key ? { 'x-api-key': options.key } : {}),
      ...(options.tenant ? { 'x-tenant-id': options.tenant } : {}),
    },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: response.status, body: await response.json() };
}
