// Start-up and shutdown of one platform process: database (embedded or external), migrations,
// event bus, job queue, first-start bootstrap and the HTTP server, for the roles this process runs.
import type { Logger } from 'pino';
import { buildApp, type App } from './app.js';
import type { Config } from './config.js';
import { createSecretBox, resolveSecretKey } from './crypto.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './database/embedded-postgres.js';
import { migrateDatabase } from './database/migrate.js';
import { connectDatabase } from './db.js';
import { EventBus } from './events.js';
import type { Deps } from './services/context.js';
import { bootstrapInstallation } from './services/tenancy/tenancy.service.js';
import { type Boss, startBoss } from './workers/boss.js';
import { IngestThreads } from './workers/ingest-threads.js';

export type RunningPlatform = {
  deps: Deps;
  /** Where the API role listens (undefined without the api role). */
  url: string | undefined;
  /** The first API key, on the installation's first start only. */
  firstApiKey: string | undefined;
  stop(): Promise<void>;
};

/** Opens the database (starting the embedded one when no DATABASE_URL is set) and migrates it. */
export async function openDatabase(config: Config, logger: Logger) {
  const embedded: EmbeddedDatabase | undefined = config.databaseUrl ? undefined : await startEmbeddedPostgres(config.dataDir, logger);
  const url = config.databaseUrl ?? embedded!.url;
  try {
    await migrateDatabase(url, logger);
    const secretKey = resolveSecretKey({ configured: config.secretKey, dataDir: config.dataDir, embedded: !!embedded });
    const db = connectDatabase(url, { poolSize: config.dbPoolSize });
    return { db, embedded, secrets: createSecretBox(secretKey) };
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
}

export async function startPlatform(config: Config, logger: Logger): Promise<RunningPlatform> {
  const { db, embedded, secrets } = await openDatabase(config, logger);
  const events = new EventBus(db.pool, db.url, logger);
  // Only the API role ingests traces over HTTP.
  const ingestThreads = config.roles.includes('api') && config.ingestThreads > 0 ? new IngestThreads({ config, databaseUrl: db.url }, config.ingestThreads, logger) : undefined;
  const deps: Deps = { config, db, events, secrets, logger, ingestThreads };
  let boss: Boss | undefined;
  let app: App | undefined;

  const stop = async () => {
    // Order matters: stop taking requests, then jobs, then the bus, then the database.
    await app?.stop().catch((error: unknown) => logger.error({ err: error }, 'HTTP shutdown failed'));
    await ingestThreads?.stop();
    await db.drain(5_000);
    await boss?.stop({ graceful: true, timeout: 10_000 }).catch((error: unknown) => logger.error({ err: error }, 'job queue shutdown failed'));
    await events.stop();
    await db.close();
    await embedded?.stop();
  };

  try {
    await events.start();
    boss = await startBoss(deps, { work: config.roles.includes('worker') });
    const bootstrap = await bootstrapInstallation(deps);
    let url: string | undefined;
    if (config.roles.includes('api')) {
      app = buildApp(deps);
      url = await app.start(config.port, config.host);
    }
    logger.info({ url, roles: config.roles }, 'agent platform started');
    return { deps, url: config.publicUrl ?? url, firstApiKey: bootstrap?.key, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
