// `agent-platform serve --config langgraph.json`: one graph config served at the root of its own port
// (like `langgraph dev`), on the embedded PostgreSQL or DATABASE_URL. It is a platform process (the
// api and worker roles: its GraphQL at /graphql, where this deployment is visible, its trace tables,
// its first API key) that records the config as a local deployment and runs that deployment's agent
// server in this process, on a database of its own, answering at the root of the port: requests
// without credentials as the developer's, the platform's own calls (its GraphQL's) signed as the
// gateway signs them.
import type { Logger } from 'pino';
import { buildApp } from './platform/app.js';
import { feedbackTokenUrlRouter } from './platform/rest/feedback.routes.js';
import type { Config } from './config.js';
import { readGraphConfig } from './contracts/graph-config.js';
import { advertisedHost } from './contracts/launcher-protocol.js';
import { openPlatform, startLocalAgentServer } from './start.js';
import { recordAgentServer } from './platform/launcher/child-launcher.js';
import { registerLocalDeployment } from './platform/services/deployments/local-deployments.js';
import { authenticateApiKey } from './platform/services/tenancy/authentication.service.js';
import { localViewer, SYSTEM_VIEWER } from './viewer.js';

export type ServedConfig = {
  url: string;
  deploymentId: string;
  graphIds: string[];
  /** The first API key, on the installation's first start only. */
  firstApiKey: string | undefined;
  /** Where runs are traced, unless tracing is off. */
  tracing: { workspaceId: string; project: string } | undefined;
  /** Where graphs execute: a worker thread, or the HTTP server's thread. */
  runtime: string;
  stop(): Promise<void>;
};

/** Starts the agent server for one graph config; resolves once it listens. */
export function startServe(config: Config, logger: Logger, options: { configPath: string; dev: boolean }): Promise<ServedConfig> {
  // The worker role's schedules (usage folds, trace partitions and retention) run here too unless left out.
  return openPlatform(config, logger, { jobsStopTimeoutMs: 5000 }, async ({ wiring, deps, firstApiKey }) => {
    // The deployment belongs to the installation's first workspace (or AGENT_SERVER_TRACE_WORKSPACE_ID), which receives its traces.
    const deployment = await registerLocalDeployment({ ...deps, viewer: SYSTEM_VIEWER }, { configPath: options.configPath, workspaceId: config.agentServerTracing.workspaceId });
    const { deploymentId } = deployment;
    // Served without credentials, like `langgraph dev`; a platform key is checked only for the
    // studio's scheme under custom auth.
    const platformKeys = (apiKey: string | undefined) => authenticateApiKey(deps, apiKey, undefined);
    const agentServer = await startLocalAgentServer(deps, deployment, { anonymous: true, dev: options.dev, platformKeys });
    wiring.onStop(() => agentServer.stop());

    // A GraphQL request without a key may use this deployment but none of the platform's tenants
    // (their data needs an API key, as on the platform); with custom auth, which GraphQL does not
    // run, it needs a platform key.
    const customAuth = readGraphConfig(options.configPath).auth !== undefined;
    // Its runs' feedback urls (feedback_keys) are this port's: the token urls are answered here, ahead of the agent server.
    const app = buildApp(deps, { routers: [feedbackTokenUrlRouter(deps), agentServer.router], upgrades: [agentServer.upgrade], anonymousViewer: customAuth ? undefined : localViewer(deploymentId) });
    wiring.onStop(() => app.stop());
    const url = await app.start(config.port, config.host);
    agentServer.listening(url);
    // The platform's GraphQL (at /graphql, and any platform process's) reaches the agent server here,
    // as the gateway reaches any: recorded where the platform finds agent servers.
    const reachedAt = `http://${advertisedHost(config.host, config.publicUrl)}:${new URL(url).port}`;
    const removeRecord = await recordAgentServer(deps, { id: agentServer.runtimeId, deploymentId, url: reachedAt });
    wiring.onStop(removeRecord);
    const { tracing } = agentServer.runtime;
    return {
      url,
      deploymentId,
      graphIds: agentServer.graphIds,
      firstApiKey,
      tracing: tracing && { workspaceId: tracing.workspaceId, project: tracing.project },
      runtime: agentServer.runtime.where,
      stop: wiring.stop,
    };
  });
}
