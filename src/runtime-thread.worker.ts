// The body of a runtime thread (see runtime-thread.ts): wires the thread like any process, runs the
// deployment's runtime until the main thread says stop. An entry point, so it composes: a local
// deployment's runs' traces go into the trace tables of the platform's database (its spec's tracing
// `store`), a deployed revision's to the ingest API its spec names.
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from './logger.js';
import { configInThread } from './wiring.js';
import { openPlatformTraceStore } from './platform/ingest/trace-batcher.js';
import { startStandaloneRuntime } from './agent-server/runtime/standalone-runtime.js';
import type { RuntimeThreadCommand, RuntimeThreadData, RuntimeThreadReport } from './agent-server/runtime/runtime-thread.js';

const data = workerData as RuntimeThreadData;
const port = parentPort!;
const report = (message: RuntimeThreadReport) => port.postMessage(message);
const config = configInThread(data.config);
const logger = createLogger(config).child({ thread: 'runtime', deploymentId: data.spec.deploymentId });
let stopProcess: () => Promise<void> = async () => undefined;
const stop = async () => {
  await stopProcess();
  port.close();
};

try {
  // The main thread's PgBoss maintains the queues; this one only fetches and completes jobs.
  const openTraceStore = (databaseUrl: string) => openPlatformTraceStore({ config, logger }, databaseUrl);
  const { running, stop: stopRuntime } = await startStandaloneRuntime(config, logger, data.databaseUrl, data.spec, openTraceStore);
  stopProcess = stopRuntime;

  port.on('message', (command: RuntimeThreadCommand) => {
    if (command === 'wake') running.wake();
    else if (command === 'stop') void stop();
  });
  report({ type: 'ready', url: running.url, graphIds: running.graphIds });
} catch (error) {
  logger.error({ err: error }, 'the runtime thread could not start');
  report({ type: 'failed', message: (error as Error).message });
  await stop();
}
