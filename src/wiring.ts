// One way to wire a process. Every entry point (`start`, `serve`, the worker threads, `admin`, the
// tests) builds its dependencies with createDeps and stops them with the returned `stop`, so pool
// sizes, the secret key, the event bus and shutdown order cannot drift between them.
import type { MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createSecretBox, resolveSecretKey } from './crypto.js';
import { checkDatabaseLogins, openAdminLogin } from './database/admin-login.js';
import { type EmbeddedDatabase, startEmbeddedPostgres } from './database/embedded-postgres.js';
import { migrateDatabase } from './database/migrate.js';
import { connectDatabase } from './db.js';
import { EventBus } from './events.js';
import type { Deps } from './context.js';
import { ViewerCache } from './viewer-cache.js';

export type CreateDepsOptions = {
  /**
   * The URL of a database another thread or process already opened and migrated (worker threads,
   * tests). Without it the configured database is opened (the embedded one when no DATABASE_URL is
   * set) and migrated.
   */
  databaseUrl?: string;
  /** Connections of this process's pool (default: config.dbPoolSize). */
  poolSize?: number;
  applicationName?: string;
  /** Open the event bus's LISTEN connection (default true; an ingest thread only writes). */
  listen?: boolean;
  /**
   * In a worker thread: the port to its process's event bus (EventBus.relayTo), which hears and holds
   * locks for this thread's bus instead of a LISTEN connection of its own.
   */
  relay?: MessagePort;
};

export type ProcessDeps = {
  deps: Deps;
  /** Runs `step` at stop, before everything registered earlier (reverse order of start). */
  onStop(step: () => Promise<unknown>): void;
  /** Stops what was registered, then the bus, the pool and the embedded database. */
  stop(): Promise<void>;
};

type OpenedDatabase = { url: string; adminUrl: string; embedded: EmbeddedDatabase | undefined };

/**
 * Opens the database (starting the embedded one when no DATABASE_URL is set) and migrates it. The
 * admin login is AGENT_PLATFORM_ADMIN_DATABASE_URL's (on the platform's server or another), else the
 * embedded one's, else the platform's.
 */
async function openDatabase(config: Config, logger: Logger): Promise<OpenedDatabase> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(config.dataDir, logger, { maxConnections: config.embeddedMaxConnections, reservedConnections: config.reservedConnections });
  const url = config.databaseUrl ?? embedded!.url;
  // A configured admin login wins over the embedded one's: deployments' databases then live on its server.
  const adminUrl = config.adminDatabaseUrl ?? embedded?.adminUrl ?? url;
  try {
    await migrateDatabase(url, logger, 'platform');
    if (!embedded || config.adminDatabaseUrl) {
      const launchesDeployments = config.roles.includes('worker') && config.controlPlaneWorker;
      await checkDatabaseLogins({ platform: url, admin: adminUrl, adminConfigured: config.adminDatabaseUrl !== undefined }, { launchesDeployments }, logger);
    }
    return { url, adminUrl, embedded };
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
}

/** Builds a process's dependencies: database pool, secrets, event bus, the admin login and the key cache. */
export async function createDeps(config: Config, logger: Logger, options: CreateDepsOptions = {}): Promise<ProcessDeps> {
  const { url, adminUrl, embedded }: OpenedDatabase = options.databaseUrl
    ? { url: options.databaseUrl, adminUrl: config.adminDatabaseUrl ?? options.databaseUrl, embedded: undefined }
    : await openDatabase(config, logger);
  let secrets;
  try {
    // The generated key belongs to the embedded database, whichever thread or process opened it.
    secrets = createSecretBox(resolveSecretKey({ configured: config.secretKey, dataDir: config.dataDir, embedded: !config.databaseUrl }));
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
  const db = connectDatabase(url, { poolSize: options.poolSize ?? config.dbPoolSize, applicationName: options.applicationName });
  const events = new EventBus(db.pool, db.url, logger);
  const viewers = new ViewerCache(config.apiKeyCacheSeconds * 1000);
  const adminLogin = openAdminLogin(adminUrl, (message) => logger.warn(message));
  const deps: Deps = { config, db, events, secrets, logger, viewers, adminLogin };

  const steps: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const step of steps.splice(0).reverse()) await step().catch((error: unknown) => logger.error({ err: error }, 'shutdown step failed'));
    // Let requests whose clients hung up finish their queries rather than cut them off.
    await db.drain(5_000);
    await events.stop();
    await db.close().catch(() => undefined);
    await adminLogin.close().catch(() => undefined);
    await embedded?.stop();
  };
  try {
    if (options.relay) events.startRelayed(options.relay);
    else if (options.listen ?? true) await events.start();
    if (options.relay || (options.listen ?? true)) viewers.followChanges(events);
  } catch (error) {
    await stop();
    throw error;
  }
  return { deps, onStop: (step) => steps.push(step), stop };
}

/** A Config as a worker thread receives it: structured cloning turned the key's Buffer into a Uint8Array. */
export const configInThread = (config: Config): Config => ({ ...config, secretKey: config.secretKey ? Buffer.from(config.secretKey) : undefined });
