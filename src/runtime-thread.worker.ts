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
import type { AppLoopback } from './agent-server/runtime/runtime-context.js';

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
  // The project's app the main thread serves answers this thread's requests for it (a webhook's
  // status is all a delivery reads).
  const answers = new Map<number, (status: number) => void>();
  let nextId = 0;
  const appLoopback: AppLoopback | undefined = data.appInMainThread
    ? (path, init) =>
        new Promise<Response>((resolve, reject) => {
          const id = nextId++;
          const signal = init.signal ?? undefined;
          const onAbort = () => {
            answers.delete(id);
            reject(signal?.reason);
          };
          signal?.addEventListener('abort', onAbort, { once: true });
          answers.set(id, (status) => {
            signal?.removeEventListener('abort', onAbort);
            resolve(new Response(null, { status }));
          });
          const headers = [...new Headers(init.headers).entries()];
          report({ type: 'app-request', id, path, method: init.method ?? 'GET', headers, body: typeof init.body === 'string' ? init.body : null });
        })
    : undefined;
  const { running, stop: stopRuntime } = await startStandaloneRuntime(config, logger, data.databaseUrl, data.spec, openTraceStore, appLoopback, data.events);
  stopProcess = stopRuntime;

  port.on('message', (command: RuntimeThreadCommand) => {
    if (command === 'wake') {
      // Cleared before the fetch the wake-up starts: a run created after this sends another.
      Atomics.store(data.wakeSent, 0, 0);
      running.wake();
    } else if (command === 'stop') void stop();
    else if (command.type === 'app-answer') {
      answers.get(command.id)?.(command.status);
      answers.delete(command.id);
    }
  });
  report({ type: 'ready', url: running.url, graphIds: running.graphIds });
} catch (error) {
  logger.error({ err: error }, 'the runtime thread could not start');
  report({ type: 'failed', message: (error as Error).message });
  await stop();
}
