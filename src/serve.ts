// `agent-platform serve --config langgraph.json`: one graph config served at the root of its own port
// (like `langgraph dev`), with the runtime in a worker thread of the same process, on the embedded PostgreSQL or
// DATABASE_URL. The REST surface is the same router the platform mounts per deployment; /graphql
// serves the platform schema, where this deployment's assistants, threads and runs are visible.
import type { Logger } from 'pino';
import { basename, dirname } from 'node:path';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { createDeps } from './process.js';
import { agentServerRouter } from './rest/agent-server/router.js';
import { ensureSystemAssistants } from './services/assistants/assistants.service.js';
import type { Deps } from './services/context.js';
import { type AgentServerContext, type DeploymentScope, serveDeploymentId } from './services/runtime/deployment-scope.js';
import { readGraphConfig } from './services/runtime/graph-config.js';
import { GraphRegistry } from './services/runtime/graph-registry.js';
import { openPersistence } from './services/runtime/persistence.js';
import { RunQueue } from './services/runtime/run-queue.js';
import { startRuntime } from './services/runtime/runtime.js';
import { registerDeploymentScope } from './services/runtime/scopes.js';
import { bootstrapInstallation } from './services/tenancy/tenancy.service.js';
import { LOCAL_VIEWER, SYSTEM_VIEWER } from './services/tenancy/viewer.js';
import { createAgentRunTracer } from './services/traces/agent-run-tracer.js';
import { startBoss } from './workers/boss.js';
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
  const wiring = await createDeps(config, logger);
  const { deps } = wiring;
  const { db } = deps;
  try {
    // The worker role's schedules (event payload pruning, run recovery) run here too unless left out.
    const work = config.roles.includes('worker');
    const boss = await startBoss(deps, { work, maintain: work || runsHere });
    wiring.onStop(() => boss.stop({ graceful: true, timeout: 5000 }));
    const persistence = await openPersistence(db.url, deploymentId, { poolSize: config.checkpointerPoolSize });
    wiring.onStop(() => persistence.close());
    const graphs = await GraphRegistry.load(graphConfig, persistence);
    const scope: DeploymentScope = { deploymentId, graphs, persistence, queue: new RunQueue(boss, deploymentId), auth: { kind: 'none' }, dev: options.dev };
    const unregister = registerDeploymentScope(scope);
    wiring.onStop(async () => unregister());
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
      wiring.onStop(() => runtime.stop());
    } else if (runsHere) {
      const tracer = tracing ? createAgentRunTracer(deps, { workspaceId: tracing.workspaceId }, tracing.project) : undefined;
      const runtime = await startRuntime(ctx, { concurrency: config.runtimeConcurrency, tracer });
      wiring.onStop(() => runtime.stop());
    }

    // Served without credentials, like `langgraph dev`: a GraphQL request without a key may use this
    // deployment but none of the platform's tenants (their data needs an API key, as on the platform).
    const app = buildApp(deps, { routers: [agentServerRouter(deps, scope)], anonymousViewer: LOCAL_VIEWER });
    wiring.onStop(() => app.stop());
    const url = await app.start(config.port, config.host);
    const runtime = runsHere ? (config.runtimeThread ? 'worker thread' : 'server thread') : undefined;
    return { url, deploymentId, graphIds: graphs.graphIds(), firstApiKey: bootstrap?.key, tracing, runtime, stop: wiring.stop };
  } catch (error) {
    await wiring.stop();
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
