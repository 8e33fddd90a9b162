// `agent-platform serve --config langgraph.json`: one graph config served at the root of its own port
// (like `langgraph dev`), with the runtime in a worker thread of the same process, on the embedded PostgreSQL or
// DATABASE_URL. The REST surface is the same router the platform mounts per deployment; /graphql
// serves the platform schema, where this deployment's assistants, threads and runs are visible.
import { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import { basename, dirname } from 'node:path';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { EventBus } from './events.js';
import { openDatabase } from './platform.js';
import { agentServerRouter } from './rest/agent-server/router.js';
import { ensureSystemAssistants } from './services/assistants/assistants.service.js';
import type { Deps } from './services/context.js';
import { type AgentServerContext, type DeploymentScope, serveDeploymentId } from './services/runtime/deployment-scope.js';
import { loadCustomApp } from './services/runtime/custom-app.js';
import { readGraphConfig } from './services/runtime/graph-config.js';
import { bundleGraphUis } from './services/runtime/ui-bundles.js';
import { GraphRegistry } from './services/runtime/graph-registry.js';
import { openPersistence } from './services/runtime/persistence.js';
import { RunQueue } from './services/runtime/run-queue.js';
import { startRuntime } from './services/runtime/runtime.js';
import { registerDeploymentScope } from './services/runtime/scopes.js';
import { bootstrapInstallation } from './services/tenancy/tenancy.service.js';
import { LOCAL_VIEWER, SYSTEM_VIEWER } from './services/tenancy/viewer.js';
import { createAgentRunTracer } from './services/traces/agent-run-tracer.js';
import { bossConnection } from './workers/boss.js';
import { startRuntimeThread } from './workers/runtime-thread.js';

export type AgentServer = {
  url: string;
  deploymentId: string;
  graphIds: string[];
  /** The first API key, on the installation's first start only. */
  firstApiKey: string | undefined;
  /** Where runs are traced, unless tracing is off. */
  tracing: { workspaceId: string; project: string } | undefined;
  /** Where graphs execute: a worker thread, the HTTP server's thread, or elsewhere (no runtime role). */
  runtime: 'worker thread' | 'server thread' | undefined;
  stop(): Promise<void>;
};

/** Starts the agent server for one graph config; resolves once it listens. */
export async function startAgentServer(config: Config, logger: Logger, options: { configPath: string; dev: boolean }): Promise<AgentServer> {
  const graphConfig = readGraphConfig(options.configPath);
  const deploymentId = serveDeploymentId(graphConfig.path);
  const runsHere = config.roles.includes('runtime');
  const { db, embedded, secrets } = await openDatabase({ ...config, dbPoolSize: Math.max(config.dbPoolSize, 24) }, logger);
  const events = new EventBus(db.pool, db.url, logger);
  const deps: Deps = { config, db, events, secrets, logger };
  const boss = new PgBoss({
    ...bossConnection(db.url),
    application_name: 'agent-platform-runs',
    max: 8,
    // Runtimes are woken by the platform's own `runs.queued` event (see runtime.ts).
    useListenNotify: false,
    supervise: runsHere,
    schedule: false,
  });
  boss.on('error', (error: unknown) => logger.error({ err: error }, 'job queue error'));
  const cleanup: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const step of cleanup.reverse()) await step().catch((error: unknown) => logger.error({ err: error }, 'shutdown step failed'));
    await db.close().catch(() => undefined);
    await embedded?.stop();
  };
  try {
    await events.start();
    cleanup.push(() => events.stop());
    await boss.start();
    cleanup.push(() => boss.stop({ graceful: true, timeout: 5000 }));
    const persistence = await openPersistence(db.url, deploymentId, { poolSize: Math.min(config.runtimeConcurrency + 4, 40) });
    cleanup.push(() => persistence.close());
    const graphs = await GraphRegistry.load(graphConfig, persistence, logger);
    const scope: DeploymentScope = { deploymentId, graphs, persistence, queue: new RunQueue(boss, deploymentId), auth: { kind: 'none' }, dev: options.dev };
    const unregister = registerDeploymentScope(scope);
    cleanup.push(async () => unregister());
    const ctx: AgentServerContext = { ...deps, viewer: SYSTEM_VIEWER, deployment: scope };
    await scope.queue.ensure();
    await ensureSystemAssistants(ctx, config.langgraphConfig);
    // The installation's first start creates its default tenant and key, as `start` does, so traces
    // of this server's runs can be read with the platform's APIs.
    const bootstrap = await bootstrapInstallation(deps);
    const tracing = await tracingTarget(deps, graphConfig.path);
    if (runsHere && config.runtimeThread) {
      const runtime = await startRuntimeThread(
        { config, databaseUrl: db.url, configPath: graphConfig.path, deploymentId, queueOrigin: scope.queue.origin, tracing },
        logger,
      );
      scope.queue.onLocalWake(() => runtime.wake());
      cleanup.push(() => runtime.stop());
    } else if (runsHere) {
      const tracer = tracing ? createAgentRunTracer(deps, { workspaceId: tracing.workspaceId }, tracing.project) : undefined;
      const runtime = await startRuntime(ctx, { concurrency: config.runtimeConcurrency, tracer });
      cleanup.push(() => runtime.stop());
    }

    // Served without credentials, like `langgraph dev`: a GraphQL request without a key may use this
    // deployment but none of the platform's tenants (their data needs an API key, as on the platform).
    const customApp = await loadCustomApp(graphConfig, logger);
    const ui = await bundleGraphUis(graphConfig, logger);
    const app = buildApp(deps, { routers: [agentServerRouter(deps, scope, { customApp, ui })], anonymousViewer: LOCAL_VIEWER });
    cleanup.push(() => app.stop());
    const url = await app.start(config.port, config.host);
    const runtime = runsHere ? (config.runtimeThread ? 'worker thread' : 'server thread') : undefined;
    return { url, deploymentId, graphIds: graphs.graphIds(), firstApiKey: bootstrap?.key, tracing, runtime, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The workspace and project that receive this server's traces: configured, or the installation's first workspace. */
async function tracingTarget(deps: Deps, configPath: string) {
  const { enabled, workspaceId, project } = deps.config.agentServerTracing;
  if (!enabled) return undefined;
  const workspace = workspaceId
    ? await deps.db.prisma.workspace.findUnique({ where: { id: workspaceId } })
    : await deps.db.prisma.workspace.findFirst({ orderBy: [{ organization: { createdAt: 'asc' } }, { createdAt: 'asc' }] });
  if (!workspace) throw new Error(`AGENT_SERVER_TRACE_WORKSPACE_ID: workspace ${workspaceId} not found.`);
  return { workspaceId: workspace.id, project: project ?? basename(dirname(configPath)) };
}
