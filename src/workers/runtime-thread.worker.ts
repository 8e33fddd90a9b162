// The body of the runtime thread (see runtime-thread.ts): connects to the database, loads the graphs
// and works the deployment's run queue until the main thread says stop.
import { parentPort, workerData } from 'node:worker_threads';
import { PgBoss } from 'pg-boss';
import { createSecretBox, resolveSecretKey } from '../crypto.js';
import { connectDatabase } from '../db.js';
import { EventBus } from '../events.js';
import { createLogger } from '../logger.js';
import type { Deps } from '../services/context.js';
import type { AgentServerContext } from '../services/runtime/deployment-scope.js';
import { readGraphConfig } from '../services/runtime/graph-config.js';
import { GraphRegistry } from '../services/runtime/graph-registry.js';
import { openPersistence } from '../services/runtime/persistence.js';
import { RunQueue } from '../services/runtime/run-queue.js';
import { startRuntime } from '../services/runtime/runtime.js';
import { SYSTEM_VIEWER } from '../services/tenancy/viewer.js';
import { createAgentRunTracer } from '../services/traces/agent-run-tracer.js';
import { bossConnection } from './boss.js';
import type { RuntimeThreadCommand, RuntimeThreadData, RuntimeThreadReport } from './runtime-thread.js';

const data = workerData as RuntimeThreadData;
const port = parentPort!;
const report = (message: RuntimeThreadReport) => port.postMessage(message);
// Structured cloning turned the key's Buffer into a Uint8Array.
const config = { ...data.config, secretKey: data.config.secretKey ? Buffer.from(data.config.secretKey) : undefined };
const logger = createLogger(config).child({ thread: 'runtime' });
const cleanup: (() => Promise<unknown>)[] = [];
const stop = async () => {
  for (const step of cleanup.reverse()) await step().catch((error: unknown) => logger.error({ err: error }, 'runtime thread shutdown step failed'));
  port.close();
};

try {
  const db = connectDatabase(data.databaseUrl, { poolSize: Math.max(config.dbPoolSize, 16), applicationName: 'agent-platform-runtime' });
  cleanup.push(() => db.close());
  const secrets = createSecretBox(resolveSecretKey({ configured: config.secretKey, dataDir: config.dataDir, embedded: !config.databaseUrl }));
  const events = new EventBus(db.pool, db.url, logger);
  await events.start();
  cleanup.push(() => events.stop());
  // The main thread's PgBoss maintains the queues; this one only fetches and completes jobs.
  const boss = new PgBoss({ ...bossConnection(db.url), application_name: 'agent-platform-runs', max: 4, useListenNotify: false, supervise: false, schedule: false });
  boss.on('error', (error: unknown) => logger.error({ err: error }, 'job queue error'));
  await boss.start();
  cleanup.push(() => boss.stop({ graceful: true, timeout: 5000 }));
  const persistence = await openPersistence(db.url, data.deploymentId, { poolSize: Math.min(config.runtimeConcurrency + 4, 40) });
  cleanup.push(() => persistence.close());
  const graphs = await GraphRegistry.load(readGraphConfig(data.configPath), persistence, logger);
  const queue = new RunQueue(boss, data.deploymentId, data.queueOrigin);
  const deps: Deps = { config, db, events, secrets, logger };
  const ctx: AgentServerContext = {
    ...deps,
    viewer: SYSTEM_VIEWER,
    deployment: { deploymentId: data.deploymentId, graphs, persistence, queue, auth: { kind: 'none' }, dev: false },
  };
  const tracer = data.tracing ? createAgentRunTracer(deps, { workspaceId: data.tracing.workspaceId }, data.tracing.project) : undefined;
  const runtime = await startRuntime(ctx, { concurrency: config.runtimeConcurrency, tracer });
  cleanup.push(() => runtime.stop());

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
