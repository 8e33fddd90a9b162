// The runtime of one deployment, wherever a launcher starts it (its own worker thread, or the agent
// server's thread): loads the deployment's graphs with LangGraph's checkpointer and store, works its
// run queue, answers the API's graph requests, and records itself in its database's runtimes for as
// long as it runs, so any of the agent server's processes can find it.
import type { PgBoss } from 'pg-boss';
import type { LaunchSpec } from '../../contracts/launcher-protocol.js';
import type { TraceSink } from '../../contracts/trace-wire.js';
import type { Deps } from '../../context.js';
import { deleteRuntime, insertRuntime } from '../services/served-deployment/served-deployment.store.js';
import { RunQueue, runQueueFor } from '../services/runs/run-queue.js';
import { createAgentRunTracer } from './agent-run-tracer.js';
import { installLinearCallbackManagerCopyForGraphs } from './callback-manager-copy.js';
import { installRunConfigCarrierForGraphs } from './run-config-carrier.js';
import { loadCustomApp } from './custom-app.js';
import { applyGraphConfigEnv, readGraphConfig } from '../../contracts/graph-config.js';
import { GraphRegistry } from './graph-registry.js';
import { IngestApiTraceSink } from './ingest-api-traces.js';
import { openPersistence } from './persistence.js';
import { loadEncryptionHandlers } from './encryption-handlers.js';
import { encryptionOf } from '../services/encryption/at-rest.js';
import { setUpDeploymentDatabase } from '../services/served-deployment/database-setup.js';
import { loadStoreEmbedder } from './store-embedder.js';
import type { AppLoopback, RuntimeContext } from './runtime-context.js';
import { startRuntime } from './runtime.js';
import { startRuntimeServer } from './runtime-server.js';

export type RuntimeSpec = Omit<LaunchSpec, 'revisionId'> & {
  /**
   * The origin of the queue object an api role in the launching process enqueues through, when this
   * runtime runs in a thread of that process: runs created there wake it by message, so it skips
   * their `runs.queued` NOTIFY.
   */
  queueOrigin?: string;
};

export type RunningDeployment = {
  runtimeId: string;
  /** Where it answers graph requests. */
  url: string;
  graphIds: string[];
  /** Fetches runs now (a run was created in this process). */
  wake(): void;
  /** Stops it; `handOver`: another runtime takes the deployment over (its runs cut short go back to the queue). */
  stop(options?: { handOver?: boolean }): Promise<void>;
};

/**
 * Starts the runtime of one deployment on this process's dependencies and job queue; its runs' traces
 * go to the platform's ingest API, or where `openTraceStore` stores them (its host's trace tables).
 */
export async function runDeployment(
  deps: Deps,
  boss: PgBoss,
  spec: RuntimeSpec,
  openTraceStore?: (databaseUrl: string) => TraceSink,
  /** The `http.app` the agent server serves, when this runtime is not in its thread (runtime-thread.ts). */
  appLoopback?: AppLoopback,
): Promise<RunningDeployment> {
  const steps: (() => Promise<unknown>)[] = [];
  let handOver = false;
  const stop = async (options: { handOver?: boolean } = {}) => {
    handOver = options.handOver ?? false;
    for (const step of steps.splice(0).reverse()) await step().catch((error: unknown) => deps.logger.error({ err: error }, 'runtime shutdown step failed'));
  };
  try {
    const config = readGraphConfig(spec.configPath);
    // Deployment code, like its graphs: the embedding function is loaded here, never in the API (with
    // the config's env, which it may read as graphs do).
    applyGraphConfigEnv(config);
    const embedder = await loadStoreEmbedder(config);
    await setUpDeploymentDatabase(deps.db, spec.deploymentId, config);
    // Before persistence: the checkpointer seals with the project's handlers when it has them.
    await loadEncryptionHandlers(config, deps.config);
    const persistence = await openPersistence(deps.db, spec.deploymentId, { embedder, encryption: encryptionOf(deps.config) });
    const graphs = await GraphRegistry.load(config, persistence, deps.logger);
    // In the api's own process the api's queue object is shared, so runs created here wake this runtime directly.
    const queue = spec.queueOrigin ? new RunQueue(boss, spec.deploymentId, spec.queueOrigin) : runQueueFor(boss, spec.deploymentId);
    // Traces are queued by runs and stored by the batcher; it is closed (what is queued stored) after
    // the runtime stopped, once its last run ended.
    const tracing = spec.tracing;
    const sink = tracing?.ingest ? new IngestApiTraceSink(tracing.ingest, deps.logger) : tracing?.store ? openTraceStore?.(tracing.store.databaseUrl) : undefined;
    if (spec.tracing && !sink) deps.logger.warn({ deploymentId: spec.deploymentId }, 'tracing is on but this process has nowhere to send traces: runs are not traced');
    if (sink) steps.push(() => sink.close());
    const ctx: RuntimeContext = { ...deps, deployment: { deploymentId: spec.deploymentId, graphs, persistence, queue, traces: sink } };
    const tracer = spec.tracing && sink ? createAgentRunTracer(deps, { workspaceId: spec.tracing.workspaceId }, spec.tracing.project, sink) : undefined;
    // Traced runs copy their callback manager at every step: in linear time on the graphs' LangChain too.
    if (tracer) await installLinearCallbackManagerCopyForGraphs(config.graphs.map((graph) => graph.file));
    // Every runnable a run calls carries its config without building a RunTree of its own, on the graphs' LangChain too.
    await installRunConfigCarrierForGraphs(config.graphs.map((graph) => graph.file));
    let recorded: Parameters<typeof insertRuntime>[1] | undefined;
    // A database outage freed its liveness lock, and a sweep may have removed its row meanwhile.
    const livenessRetaken = async () => {
      if (recorded) await insertRuntime(deps.db, recorded);
    };
    const runtime = await startRuntime(ctx, { concurrency: deps.config.runtimeConcurrency, drainMs: deps.config.runDrainSeconds * 1000, tracer, livenessRetaken });
    let runtimeStopped: Promise<void> | undefined;
    const stopRuntime = () => (runtimeStopped ??= runtime.stop({ handOver }));
    steps.push(stopRuntime);
    // A run's webhook given as a path is delivered to the project's app, as the reference server
    // delivers it to itself: the very app the agent server serves (its module state, a payload it
    // keeps, is that one's), through the launcher when this runtime has a thread of its own, else
    // loaded here (in the agent server's thread, the same module).
    const customApp = !appLoopback && config.httpApp ? await loadCustomApp(config, deps.logger) : undefined;
    if (appLoopback && config.httpApp) ctx.deployment.loopback = appLoopback;
    else if (customApp) ctx.deployment.loopback = async (path, init) => customApp.fetch(new Request(new URL(path, 'http://localhost'), init));
    const server = await startRuntimeServer(ctx, runtime.workerId, deps.config.host);
    steps.push(() => server.stop());
    recorded = { id: runtime.workerId, deploymentId: spec.deploymentId, url: server.url };
    await insertRuntime(deps.db, recorded);
    steps.push(() => deleteRuntime(deps.db, runtime.workerId));
    // First at stop: it fetches no more runs and finishes its own before it leaves runtimes,
    // so a deploy that waits for the previous revision's row to go knows it takes no new run.
    steps.push(stopRuntime);
    return { runtimeId: runtime.workerId, url: server.url, graphIds: graphs.graphIds(), wake: () => queue.wakeLocal(), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
