// The body of the runtime thread (see runtime-thread.ts): connects to the database, loads the graphs
// and works the deployment's run queue until the main thread says stop.
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../logger.js';
import { configInThread, createDeps } from '../process.js';
import type { AgentServerContext } from '../services/runtime/deployment-scope.js';
import { readGraphConfig } from '../services/runtime/graph-config.js';
import { GraphRegistry } from '../services/runtime/graph-registry.js';
import { openPersistence } from '../services/runtime/persistence.js';
import { RunQueue } from '../services/runtime/run-queue.js';
import { startRuntime } from '../services/runtime/runtime.js';
import { SYSTEM_VIEWER } from '../services/tenancy/viewer.js';
import { createAgentRunTracer } from '../services/traces/agent-run-tracer.js';
import { startBoss } from './boss.js';
import type { RuntimeThreadCommand, RuntimeThreadData, RuntimeThreadReport } from './runtime-thread.js';

const data = workerData as RuntimeThreadData;
const port = parentPort!;
const report = (message: RuntimeThreadReport) => port.postMessage(message);
const config = configInThread(data.config);
const logger = createLogger(config).child({ thread: 'runtime' });
let stopProcess: () => Promise<void> = async () => undefined;
const stop = async () => {
  await stopProcess();
  port.close();
};

try {
  const wiring = await createDeps(config, logger, {
    databaseUrl: data.databaseUrl,
    poolSize: config.runtimeDbPoolSize,
    applicationName: 'agent-platform-runtime',
    ingestThreads: false,
  });
  stopProcess = wiring.stop;
  const { deps } = wiring;
  // The main thread's PgBoss maintains the queues; this one only fetches and completes jobs.
  const boss = await startBoss(deps, { work: false, maintain: false, applicationName: 'agent-platform-runs' });
  wiring.onStop(() => boss.stop({ graceful: true, timeout: 5000 }));
  const persistence = await openPersistence(deps.db.url, data.deploymentId, { poolSize: config.checkpointerPoolSize });
  wiring.onStop(() => persistence.close());
  const graphs = await GraphRegistry.load(readGraphConfig(data.configPath), persistence);
  const queue = new RunQueue(boss, data.deploymentId, data.queueOrigin);
  const ctx: AgentServerContext = {
    ...deps,
    viewer: SYSTEM_VIEWER,
    deployment: { deploymentId: data.deploymentId, graphs, persistence, queue, auth: { kind: 'none' }, dev: false },
  };
  const tracer = data.tracing ? createAgentRunTracer(deps, { workspaceId: data.tracing.workspaceId }, data.tracing.project) : undefined;
  const runtime = await startRuntime(ctx, { concurrency: config.runtimeConcurrency, tracer });
  wiring.onStop(() => runtime.stop());

  port.on('message', (command: RuntimeThreadCommand) => {
    if (command === 'wake') queue.wakeLocal();
    else if (command === 'stop') void stop();
  });
  report({ type: 'ready' });
} catch (error) {
  logger.error({ err: error }, 'the runtime thread could not start');
  report({ type: 'failed', message: (error as Error).message });
  await stop();
}
