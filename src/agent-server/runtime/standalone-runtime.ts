// A deployment's runtime wired on its own, as a runtime thread is: its own pool, a pg-boss that only
// fetches and completes jobs (the process's worker role maintains the queues), and an event bus that
// hears through its process's (`relay`).
import type { MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { createDeps } from '../../wiring.js';
import type { TraceSink } from '../../contracts/trace-wire.js';
import { startBoss } from '../jobs/boss.js';
import { runDeployment, type RunningDeployment, type RuntimeSpec } from './deployment-runtime.js';
import type { AppLoopback } from './runtime-context.js';

/** Starts the runtime; `stop` ends it and its wiring. On a failed start, whatever was wired is stopped. */
export async function startStandaloneRuntime(
  config: Config,
  logger: Logger,
  databaseUrl: string | undefined,
  spec: RuntimeSpec,
  /** Stores its runs' traces where its spec's tracing says `store` (a local deployment's host's trace tables). */
  openTraceStore?: (databaseUrl: string) => TraceSink,
  appLoopback?: AppLoopback,
  /** The port to the process's event bus (EventBus.relayTo). */
  relay?: MessagePort,
): Promise<{ running: RunningDeployment; stop: () => Promise<void> }> {
  const wiring = await createDeps(config, logger, {
    databaseUrl,
    poolSize: config.runtimeDbPoolSize,
    applicationName: 'agent-platform-runtime',
    relay,
  });
  try {
    const boss = await startBoss(wiring.deps, { work: false, maintain: false });
    wiring.onStop(() => boss.stop({ graceful: true, timeout: 5000 }));
    const running = await runDeployment(wiring.deps, boss, spec, openTraceStore, appLoopback);
    wiring.onStop(() => running.stop());
    return { running, stop: wiring.stop };
  } catch (error) {
    await wiring.stop();
    throw error;
  }
}
