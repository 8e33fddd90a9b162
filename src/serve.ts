// `agent-platform serve --config langgraph.json`: one graph config served at the root of its own port
// (like `langgraph dev`), on the embedded PostgreSQL or DATABASE_URL. It is simply the api and runtime
// roles for one deployment, on the path `start` uses: the config is recorded as a deployment in the
// database, the runtime role runs it (in a worker thread by default) and the api answers for it from
// the database, asking the runtime what needs the graphs. The REST surface is the router the platform
// mounts per deployment; /graphql serves the platform schema, where this deployment is visible.
import type { Logger } from 'pino';
import { buildApp } from './platform/app.js';
import type { Config } from './config.js';
import { createDeps } from './wiring.js';
import { agentServerRouter } from './agent-server/rest/router.js';
import { threadStreamUpgrade } from './agent-server/rest/thread-stream.socket.js';
import { bindSdkClientsToServer, loadCustomApp } from './agent-server/runtime/custom-app.js';
import { loadCustomAuth } from './agent-server/runtime/custom-auth.js';
import { readGraphConfig } from './contracts/graph-config.js';
import { startRuntimeRole } from './agent-server/runtime/role.js';
import { bundleGraphUis } from './agent-server/runtime/ui-bundles.js';
import { registerLocalDeployment } from './agent-server/services/served-deployment/served-deployment.js';
import { hostLocalDeployments, startPlatformBoss } from './start.js';
import { startIngestThreads } from './platform/ingest/ingest-threads.js';
import { authenticateApiKey } from './platform/services/tenancy/authentication.service.js';
import { bootstrapInstallation } from './platform/services/tenancy/tenancy.service.js';
import { localViewer, SYSTEM_VIEWER } from './viewer.js';

export type AgentServer = {
  url: string;
  deploymentId: string;
  graphIds: string[];
  /** The first API key, on the installation's first start only. */
  firstApiKey: string | undefined;
  /** Where runs are traced, unless tracing is off. */
  tracing: { workspaceId: string; project: string } | undefined;
  /** Where graphs execute: a worker thread, the HTTP server's thread, or elsewhere (no runtime role). */
  runtime: 'worker thread' | 'server thread' | 'child process' | undefined;
  stop(): Promise<void>;
};

/** Starts the agent server for one graph config; resolves once it listens. */
export async function startAgentServer(config: Config, logger: Logger, options: { configPath: string; dev: boolean }): Promise<AgentServer> {
  const wiring = await createDeps(config, logger);
  const { deps } = wiring;
  startIngestThreads(wiring);
  try {
    // The worker role's schedules (event payload pruning, run recovery) run here too unless left out.
    const work = config.roles.includes('worker');
    const runsHere = config.roles.includes('runtime');
    const boss = await startPlatformBoss(deps, { work, maintain: work || runsHere });
    wiring.onStop(() => boss.stop({ graceful: true, timeout: 5000 }));
    deps.boss = boss;
    // The platform's GraphQL (at /graphql) answers for this deployment, and its runs are traced, in
    // this process; its agent server's routes are mounted at the root below, not at /deployments/<id>.
    hostLocalDeployments(deps);
    // The installation's first start creates its default tenant and key, as `start` does; the
    // deployment belongs to that workspace (or AGENT_SERVER_TRACE_WORKSPACE_ID), which receives its traces.
    const bootstrap = await bootstrapInstallation(deps);
    const system = { ...deps, viewer: SYSTEM_VIEWER };
    const deployment = await registerLocalDeployment(system, { configPath: options.configPath, workspaceId: config.agentServerTracing.workspaceId });
    const { deploymentId } = deployment;

    const runtimes = runsHere ? await startRuntimeRole(deps, boss, [deploymentId]) : undefined;
    if (runtimes) wiring.onStop(() => runtimes.stop());

    // Served without credentials, like `langgraph dev`: a GraphQL request without a key may use this
    // deployment but none of the platform's tenants (their data needs an API key, as on the platform).
    // The project's `http.app`, `ui` and `auth` are loaded here, in serve's own process (the graphs are not).
    const graphConfig = readGraphConfig(options.configPath);
    // Bound before the app loads: it may make its Client at import.
    const listeningAt = bindSdkClientsToServer();
    const customApp = await loadCustomApp(graphConfig, logger);
    const ui = await bundleGraphUis(graphConfig, logger);
    // The project's custom auth (langgraph.json `auth`) is deployment code too: its handlers run here.
    const auth = await loadCustomAuth(graphConfig, logger);
    // A platform key is checked only for the studio's scheme under custom auth.
    const target = { deploymentId, anonymous: true, dev: options.dev, platformKeys: (apiKey: string | undefined) => authenticateApiKey(deps, apiKey, undefined) } as const;
    const app = buildApp(deps, {
      routers: [agentServerRouter(deps, target, { customApp, ui, auth })],
      upgrades: [threadStreamUpgrade(deps, target, { auth })],
      // With custom auth, GraphQL (which does not run the project's handlers) needs a platform key.
      anonymousViewer: auth ? undefined : localViewer(deploymentId),
    });
    wiring.onStop(() => app.stop());
    const url = await app.start(config.port, config.host);
    listeningAt(url);
    return {
      url,
      deploymentId,
      graphIds: deployment.graphIds,
      firstApiKey: bootstrap?.key,
      tracing: runtimes?.runtimes[0]?.tracing,
      runtime: runtimes?.runtimes[0]?.where,
      stop: wiring.stop,
    };
  } catch (error) {
    await wiring.stop();
    throw error;
  }
}
