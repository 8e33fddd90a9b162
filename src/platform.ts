// Start-up and shutdown of one platform process: its dependencies (process.ts), the job queue,
// first-start bootstrap and, for the roles this process runs, the HTTP server.
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { createDeps } from './process.js';
import type { RunningRuntime } from './runtime/role.js';
import type { Deps } from './services/context.js';
import { bootstrapInstallation } from './services/tenancy/tenancy.service.js';
import { startPlatformBoss } from './workers/platform-jobs.js';

export type RunningPlatform = {
  deps: Deps;
  /** Where the API role listens (undefined without the api role). */
  url: string | undefined;
  /** The first API key, on the installation's first start only. */
  firstApiKey: string | undefined;
  /** The deployment runtimes this process runs (runtime role). */
  runtimes: RunningRuntime[];
  stop(): Promise<void>;
};

export async function startPlatform(config: Config, logger: Logger): Promise<RunningPlatform> {
  const wiring = await createDeps(config, logger);
  const { deps } = wiring;
  try {
    const work = config.roles.includes('worker');
    const boss = await startPlatformBoss(deps, { work, maintain: work || config.roles.includes('runtime') });
    wiring.onStop(() => boss.stop({ graceful: true, timeout: 10_000 }));
    deps.boss = boss;
    // Registered after the queue's stop, so it runs before it: runtimes end while the database is up.
    wiring.onStop(async () => deps.deployedRuntimes?.stop());
    const bootstrap = await bootstrapInstallation(deps);
    // Loaded only here: the runtime's modules (LangGraph, the checkpointer) are not every command's business.
    const runtimes = config.roles.includes('runtime')
      ? await (await import('./runtime/role.js')).startRuntimeRole(deps, boss, config.runtimeDeployments)
      : undefined;
    if (runtimes) wiring.onStop(() => runtimes.stop());
    let url: string | undefined;
    if (config.roles.includes('api')) {
      const app = buildApp(deps);
      // Stopped first: no new requests while jobs and the bus wind down.
      wiring.onStop(() => app.stop());
      url = await app.start(config.port, config.host);
    }
    logger.info({ url, roles: config.roles }, 'agent platform started');
    return { deps, url: config.publicUrl ?? url, firstApiKey: bootstrap?.key, runtimes: runtimes?.runtimes ?? [], stop: wiring.stop };
  } catch (error) {
    await wiring.stop();
    throw error;
  }
}
