// A deployment's runtime in a worker thread of its own (the thread launcher): graph execution
// (LangGraph's CPU work, checkpoints, stream writes) then no longer shares an event loop with the HTTP
// server, so the server keeps answering while graphs run, and a second core is used. The thread is a
// runtime like any other (its own pool, event bus and queue handle, its liveness lock, its row in
// runtimes), except that its event bus hears, and holds its liveness lock, through the main thread's
// connection (EventBus.relayTo); the main thread wakes it directly when it creates a run, instead of
// through a NOTIFY round trip.
import { MessageChannel, type MessagePort, SHARE_ENV, Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { EventBus } from '../../events.js';
import type { RuntimeSpec } from './deployment-runtime.js';
import type { AppLoopback } from './runtime-context.js';

export type RuntimeThreadData = {
  config: Config;
  databaseUrl: string;
  spec: RuntimeSpec;
  /** Whether the main thread delivers requests to the project's `http.app` (it serves it). */
  appInMainThread: boolean;
  /** The port to the main thread's event bus. */
  events: MessagePort;
  /**
   * 1 while a wake-up sent to the thread waits to be read (the thread clears it before it fetches):
   * runs created meanwhile need no message of their own, that fetch finds them. Under load most
   * runs are created while one waits, and a message each was ~1.5% of the api thread's CPU per run.
   */
  wakeSent: Int32Array;
};

/** A request for the project's `http.app` (a webhook given as a path), sent across threads. */
type AppDelivery = { id: number; path: string; method: string; headers: [string, string][]; body: string | null };

/** Main thread → runtime thread. */
export type RuntimeThreadCommand = 'wake' | 'stop' | { type: 'app-answer'; id: number; status: number };
/** Runtime thread → main thread. */
export type RuntimeThreadReport =
  | { type: 'ready'; url: string; graphIds: string[] }
  | { type: 'failed'; message: string }
  | ({ type: 'app-request' } & AppDelivery);

export type RuntimeThread = { url: string; graphIds: string[]; wake(): void; stop(): Promise<void> };

/**
 * Starts the runtime thread; resolves once it works the queue, rejects if it cannot start.
 * `appLoopback` delivers the thread's requests for the project's `http.app` to the one this thread serves.
 */
export function startRuntimeThread(
  data: Omit<RuntimeThreadData, 'appInMainThread' | 'events' | 'wakeSent'>,
  events: EventBus,
  logger: Logger,
  appLoopback?: AppLoopback,
): Promise<RuntimeThread> {
  const bus = new MessageChannel();
  // The wake-ups of runs this process created: the thread was woken in-process (wake()), and its
  // runtime skips them (their origin is its queue's), so they are not passed on: a message each way
  // per run less (the NOTIFY is for other processes' runtimes).
  const ownWakeUp = data.spec.queueOrigin && `"origin":${JSON.stringify(data.spec.queueOrigin)}`;
  events.relayTo(bus.port1, { unheard: ownWakeUp ? (name, text) => name === 'runs.queued' && text.includes(ownWakeUp) : undefined });
  const wakeSent = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  // The process environment (graph configs' `env` included) is shared with the thread.
  const worker = new Worker(new URL('../../thread-entry.mjs', import.meta.url), {
    workerData: {
      ...data,
      appInMainThread: !!appLoopback,
      events: bus.port2,
      wakeSent,
      body: new URL('../../runtime-thread.worker.ts', import.meta.url).href,
    } satisfies RuntimeThreadData & { body: string },
    transferList: [bus.port2],
    env: SHARE_ENV,
  });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  let stopping = false;
  const answerApp = async ({ id, path, method, headers, body }: AppDelivery) => {
    let status: number;
    try {
      status = (await appLoopback!(path, { method, headers, body })).status;
    } catch {
      status = 502;
    }
    worker.postMessage({ type: 'app-answer', id, status } satisfies RuntimeThreadCommand);
  };
  return new Promise<RuntimeThread>((resolve, reject) => {
    worker.on('message', (report: RuntimeThreadReport) => {
      if (report.type === 'app-request') return void answerApp(report);
      if (report.type === 'failed') return reject(new Error(report.message));
      resolve({
        url: report.url,
        graphIds: report.graphIds,
        wake: () => {
          if (Atomics.exchange(wakeSent, 0, 1) === 0) worker.postMessage('wake' satisfies RuntimeThreadCommand);
        },
        async stop() {
          stopping = true;
          worker.postMessage('stop' satisfies RuntimeThreadCommand);
          const timer = setTimeout(() => void worker.terminate(), 15_000);
          await exited;
          clearTimeout(timer);
        },
      });
    });
    worker.on('error', (error) => {
      logger.error({ err: error }, 'the runtime thread failed');
      reject(error);
    });
    void exited.then((code) => {
      if (stopping) return;
      reject(new Error(`The runtime thread exited with code ${code}`));
      // Without its runtime the process would accept runs that never execute: stop instead.
      logger.fatal({ code }, 'the runtime thread exited; stopping the process');
      process.kill(process.pid, 'SIGTERM');
    });
  });
}
