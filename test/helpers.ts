// Test plumbing: the real platform (HTTP server, event bus, database) in-process on a free port.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { inject } from 'vitest';
import { buildApp } from '../src/app.js';
import { type Config, loadConfig } from '../src/config.js';
import { createDeps } from '../src/process.js';
import type { Deps, ServiceContext } from '../src/services/context.js';
import { SYSTEM_VIEWER } from '../src/services/tenancy/viewer.js';
import { type Boss, startBoss } from '../src/workers/boss.js';

export const databaseUrl = () => inject('databaseUrl');

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig(
    {},
    {
      DATABASE_URL: databaseUrl(),
      PORT: '0',
      AGENT_PLATFORM_DATA_DIR: inject('dataDir'),
      AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
      AGENT_PLATFORM_DB_POOL_SIZE: '4',
      // One ingest thread per test platform: the thread path is what users run, and one starts faster.
      AGENT_PLATFORM_INGEST_THREADS: '1',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      // Test files share one database and its job queues: only the control-plane tests, which turn it
      // on, work revision builds and run deployed runtimes (another file's worker would take them).
      AGENT_PLATFORM_CONTROL_PLANE_WORKER: 'false',
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

/** The API role (and optionally the worker role's job queue) in this process, over the shared test database. */
export async function startTestPlatform(options: { config?: Record<string, string>; jobs?: boolean } = {}): Promise<TestPlatform> {
  const config = testConfig(options.config);
  const logger = pino({ level: config.logLevel });
  // Global setup migrated the shared database already.
  const wiring = await createDeps(config, logger, { databaseUrl: config.databaseUrl });
  const { deps } = wiring;
  // Agent-server requests enqueue runs on the job queue; `jobs` also works the worker role's jobs.
  const boss = await startBoss(deps, { work: options.jobs ?? false });
  wiring.onStop(() => boss.stop({ graceful: false, close: true }));
  deps.boss = boss;
  const app = buildApp(deps);
  wiring.onStop(() => app.stop());
  const url = await app.start(0, '127.0.0.1');
  return { deps, url, boss, system: { ...deps, viewer: SYSTEM_VIEWER }, stop: wiring.stop };
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
