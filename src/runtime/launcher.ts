// How the runtime role starts a deployment's runtime. One small interface, so the control plane can
// add its own (a child process with a restricted environment, a container, a Kubernetes Deployment)
// without the role or the API changing: whatever runs the runtime, it records itself in the database.
import type { PgBoss } from 'pg-boss';
import type { Deps } from '../services/context.js';
import { runQueueFor } from '../services/runs/run-queue.js';
import { runDeployment, type RuntimeSpec } from './deployment-runtime.js';

/** What a launcher is asked to run: a runtime, and the control-plane revision it is of (recorded with it). */
export type LaunchSpec = Omit<RuntimeSpec, 'queueOrigin'> & { revisionId?: string };
import { startRuntimeThread } from './runtime-thread.js';

export type LaunchedRuntime = {
  /** Where it answers graph requests. */
  url: string;
  graphIds: string[];
  /** Where its graphs execute, for people reading the logs. */
  where: 'worker thread' | 'server thread' | 'child process';
  /** Its OS process, when it has one of its own (child process launcher). */
  pid?(): number | undefined;
  stop(): Promise<void>;
};

/** A runtime whose graphs are loaded but that does not serve yet (see RuntimeLauncher.prepare). */
export type PreparedRuntime = {
  graphIds: string[];
  /** Starts serving: the same process, now connected to the database and working the run queue. */
  launch(): Promise<LaunchedRuntime>;
  /** Ends it unlaunched. */
  discard(): Promise<void>;
};

export interface RuntimeLauncher {
  launch(spec: LaunchSpec): Promise<LaunchedRuntime>;
  /**
   * Loads the graphs and stops there (rejects with the loader's error): a build's import check whose
   * process the deploy takes over, so a deploy starts one cold process, not two. Launchers that
   * cannot split the two leave it out.
   */
  prepare?(spec: LaunchSpec): Promise<PreparedRuntime>;
}

/**
 * Runs each runtime in a worker thread of this process: graph execution no longer shares an event
 * loop with the HTTP server, and a second core is used. Runs enqueued by this process wake it by message.
 */
export const threadLauncher = (deps: Deps, boss: PgBoss): RuntimeLauncher => ({
  async launch(spec) {
    const queue = runQueueFor(boss, spec.deploymentId);
    const thread = await startRuntimeThread({ config: deps.config, databaseUrl: deps.db.url, spec: { ...spec, queueOrigin: queue.origin } }, deps.logger);
    queue.onLocalWake(() => thread.wake());
    return {
      url: thread.url,
      graphIds: thread.graphIds,
      where: 'worker thread',
      async stop() {
        queue.onLocalWake(undefined);
        await thread.stop();
      },
    };
  },
});

/** Runs each runtime on this process's own thread (AGENT_PLATFORM_RUNTIME_THREAD=false). */
export const inProcessLauncher = (deps: Deps, boss: PgBoss): RuntimeLauncher => ({
  async launch(spec) {
    const running = await runDeployment(deps, boss, spec);
    return { url: running.url, graphIds: running.graphIds, where: 'server thread', stop: running.stop };
  },
});
