// A real `agent-platform serve` child process over the fixture graphs, on the test file's database
// (its platform's) and a database of its own (its agent server's). Each call copies the fixture config
// into its own folder, so each server is its own deployment (its own database of assistants, threads
// and runs) and test files can run side by side.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import type pg from 'pg';
import { inject } from 'vitest';
import { pathOf } from '../../src/agent-server/services/store/store-items.store.js';
import { storeSchema } from '../../src/database/store-schema.js';
import { createSecretBox } from '../../src/crypto.js';
import { deploymentDatabaseUrl } from '../../src/platform/services/deployments/deployment-database.js';
import { adminLoginUrl, databaseUrl } from './helpers.js';
import type { Deps } from '../../src/context.js';
import { spawnPlatform, type PlatformProcess } from './processes.js';

const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;

export type ServeProcess = PlatformProcess & {
  client: Client;
  configPath: string;
  dir: string;
  deploymentId: string;
  /** The database its agent server keeps its data in: the deployment's own (and its login), at serve as when deployed. */
  databaseUrl: string;
  /** Whether it is a deployed revision (TEST_AGENT_SERVER=deployed) rather than `serve`. */
  deployed: boolean;
  restart(): Promise<ServeProcess>;
};

/** Whether the agent-server tests run at a deployed revision's url (deployed.ts) instead of `serve`. */
export const atDeployed = process.env.TEST_AGENT_SERVER === 'deployed';

/**
 * Writes a fixture project's langgraph.json (`test/fixtures/<project>/`) naming its graphs, `ui`
 * components, `http.app`, `auth` and `encryption` by absolute path, in a fresh folder.
 */
export function fixtureConfig(project = 'graphs'): { dir: string; configPath: string } {
  const dir = mkdtempSync(join(tmpdir(), 'agent-server-test-'));
  const folder = join(FIXTURES, project);
  const config = JSON.parse(readFileSync(join(folder, 'langgraph.json'), 'utf8')) as {
    graphs: Record<string, string>;
    http?: { app?: string };
    ui?: Record<string, string>;
    auth?: { path?: string };
    encryption?: { path?: string };
  };
  for (const [id, spec] of Object.entries(config.graphs)) config.graphs[id] = resolve(folder, spec);
  for (const [id, file] of Object.entries(config.ui ?? {})) config.ui![id] = resolve(folder, file);
  if (config.http?.app) config.http.app = resolve(folder, config.http.app);
  if (config.auth?.path) config.auth.path = resolve(folder, config.auth.path);
  if (config.encryption?.path) config.encryption.path = resolve(folder, config.encryption.path);
  const configPath = join(dir, 'langgraph.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  return { dir, configPath };
}

const secretKey = randomBytes(32).toString('base64');

/** Spawns `serve --config … --port 0 --dev` and returns an SDK client for it. */
export async function startServe(options: { configPath?: string; dir?: string; project?: string; env?: Record<string, string>; readyTimeoutMs?: number } = {}): Promise<ServeProcess> {
  const { dir, configPath } = options.configPath ? { dir: options.dir ?? '', configPath: options.configPath } : fixtureConfig(options.project);
  // The same tests at a deployed revision's url, through the gateway (deployed.ts).
  if (atDeployed) {
    // Imported only in this mode: it loads the platform, which serve's tests run as child processes.
    const { startDeployed } = await import('./deployed.js');
    const deployed = await startDeployed(configPath, options.env);
    const unavailable = () => {
      throw new Error('not at a deployed revision');
    };
    const server: ServeProcess = {
      child: deployed.child,
      url: deployed.url,
      // Serve's log: a deployed revision's goes to its deploy log, at the platform's log level.
      output: () => '',
      stopGroup: unavailable,
      client: deployed.client,
      configPath,
      dir,
      deploymentId: deployed.deploymentId,
      databaseUrl: deployed.databaseUrl,
      deployed: true,
      async stop() {
        await deployed.stop();
        return 0;
      },
      // A killed agent server is started again by its launcher: the same deployment, at the same url.
      restart: async () => {
        await deployed.restarted();
        return { ...server };
      },
    };
    return server;
  }
  const child = await spawnPlatform(['serve', '--config', configPath, '--port', '0', '--dev'], {
    DATABASE_URL: databaseUrl(),
    // The login that makes its agent server's database, as a deployment's.
    AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl(),
    AGENT_PLATFORM_SECRET_KEY: secretKey,
    AGENT_PLATFORM_DATA_DIR: inject('dataDir'),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
    // Tracing has its own test (tracing.test.ts); elsewhere it would only add load.
    AGENT_SERVER_TRACING: 'false',
    // As in testConfig (helpers.ts): a real cron tick is sent within a second of its minute.
    AGENT_PLATFORM_CRON_CLOCK_SECONDS: '1',
    ...options.env,
  }, options.readyTimeoutMs);
  const deploymentId = /deployment ([0-9a-f-]{36})/.exec(child.output())![1]!;
  const client = new Client({ apiUrl: child.url, callerOptions: { maxRetries: 0 } });
  const serve: ServeProcess = {
    ...child,
    client,
    configPath,
    dir,
    deploymentId,
    databaseUrl: deploymentDatabaseUrl(databaseUrl(), createSecretBox(Buffer.from(secretKey, 'base64')), deploymentId),
    deployed: false,
    async stop(signal) {
      const code = await child.stop(signal);
      return code;
    },
    restart: () => startServe({ configPath, dir, env: options.env }),
  };
  return serve;
}

/**
 * Another worker of the server's deployment, with its own pool and job queue on its agent server's
 * database (working the job queues when `jobs`).
 */
export async function startWorker(server: ServeProcess, options: { jobs?: boolean } = {}): Promise<{ deps: Deps; stop(): Promise<void> }> {
  const { startDeploymentWorker } = await import('./deployed.js');
  return startDeploymentWorker(server.databaseUrl, options);
}

export function removeDir(dir: string) {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/** Collects every part of an SDK stream. */
export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const parts: T[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** An item's stored expiry, read straight from the deployment's store table (undefined: no such row). */
export async function storedExpiry(pool: pg.Pool, deploymentId: string, namespace: string[], key: string): Promise<Date | null | undefined> {
  const { rows } = await pool.query<{ expires_at: Date | null }>(
    `SELECT expires_at FROM "${storeSchema(deploymentId)}".store WHERE namespace_path = $1 AND key = $2`,
    [pathOf(namespace), key],
  );
  return rows[0]?.expires_at;
}
