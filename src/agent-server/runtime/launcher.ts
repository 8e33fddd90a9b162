// The agent server's own launchers of its runtime (graphs, run queue): a worker thread, or its own
// thread. The platform's launcher of a deployment's whole agent server (a sandboxed child process) is
// platform/launcher/child-launcher.ts; both implement contracts/launcher-protocol.ts.
import type { PgBoss } from 'pg-boss';
import type { Deps } from '../../context.js';
import { runQueueFor } from '../services/runs/run-queue.js';
import { runDeployment } from './deployment-runtime.js';
import type { AppLoopback } from './runtime-context.js';
import { startRuntimeThread } from './runtime-thread.js';
import type { RuntimeLauncher } from '../../contracts/launcher-protocol.js';
import type { TraceSink } from '../../contracts/trace-wire.js';

/**
 * Runs each runtime in a worker thread of this process: graph execution no longer shares an event
 * loop with the HTTP server, and a second core is used. Runs enqueued by this process wake it by message.
 */
export const threadLauncher = (deps: Deps, boss: PgBoss, appLoopback?: AppLoopback): RuntimeLauncher => ({
  async launch(spec) {
    const queue = runQueueFor(boss, spec.deploymentId);
    const thread = await startRuntimeThread({ config: deps.config, databaseUrl: deps.db.url, spec: { ...spec, queueOrigin: queue.origin } }, deps.events, deps.logger, appLoopback);
    queue.onLocalWake(() => thread.wake());
    return {
      url: thread.url,
      graphIds: thread.graphIds,
      where: 'worker thread',
      // A runtime thread is not handed over (its runs cut short end as errors): its agent server is
      // `serve`'s or a local deployment's, which nothing takes over.
      async stop(options) {
        queue.onLocalWake(undefined);
        await thread.stop();
        await options?.handOver?.released();
      },
    };
  },
});

/** Runs each runtime on this process's own thread (AGENT_PLATFORM_RUNTIME_THREAD=false). */
export const inProcessLauncher = (deps: Deps, boss: PgBoss, openTraceStore?: (databaseUrl: string) => TraceSink): RuntimeLauncher => ({
  async launch(spec) {
    const running = await runDeployment(deps, boss, spec, openTraceStore);
    return {
      url: running.url,
      graphIds: running.graphIds,
      where: 'server thread',
      async stop(options) {
        await running.stop({ handOver: options?.handOver !== undefined });
        await options?.handOver?.released();
      },
    };
  },
});
