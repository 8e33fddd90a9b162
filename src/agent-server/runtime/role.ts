// The runtime of the deployment an agent server serves (agent-server.ts): its graphs and run queue,
// started through a launcher (a worker thread of its own by default, or the server's own thread).
import type { PgBoss } from 'pg-boss';
import type { Deps } from '../../context.js';
import type { LaunchedRuntime, LaunchSpec, RuntimeLauncher, RuntimeStopOptions } from '../../contracts/launcher-protocol.js';
import type { TraceSink } from '../../contracts/trace-wire.js';
import { inProcessLauncher, threadLauncher } from './launcher.js';
import type { AppLoopback } from './runtime-context.js';

type RunningRuntime = LaunchedRuntime & Pick<LaunchSpec, 'deploymentId' | 'tracing'>;
export type RunningRuntimes = { runtimes: RunningRuntime[]; stop(options?: RuntimeStopOptions): Promise<void> };

/**
 * Starts the deployment's runtime; resolves once it works its queue. `openTraceStore` stores its
 * runs' traces where the spec's tracing says `store` (its host's: a local deployment's).
 */
export async function startRuntimeRole(
  deps: Deps,
  boss: PgBoss,
  spec: Omit<LaunchSpec, 'revisionId'>,
  openTraceStore?: (databaseUrl: string) => TraceSink,
  /** The project's `http.app` as the agent server serves it, for a runtime thread's webhooks given as a path. */
  appLoopback?: AppLoopback,
  launcher: RuntimeLauncher = deps.config.runtimeThread ? threadLauncher(deps, boss, appLoopback) : inProcessLauncher(deps, boss, openTraceStore),
): Promise<RunningRuntimes> {
  const runtimes: RunningRuntimes['runtimes'] = [];
  const stop = async (options?: RuntimeStopOptions) => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop(options).catch((error: unknown) => deps.logger.error({ err: error }, 'a runtime did not stop cleanly'))));
  };
  const launched = await launcher.launch(spec);
  runtimes.push({ ...launched, deploymentId: spec.deploymentId, tracing: spec.tracing });
  deps.logger.info({ deploymentId: spec.deploymentId, url: launched.url, where: launched.where }, 'deployment runtime started');
  return { runtimes, stop };
}
