// Start-up and shutdown of one platform process: its dependencies (wiring.ts), the job queue,
// first-start bootstrap and, for the roles this process runs, the HTTP server and the agent servers
// of the local deployments it runs. Where the platform's tree and the agent server's meet: a local
// deployment's agent server (an operator's graph config, `admin deployments create`; `serve`'s) runs
// in this process, on a database of its own as a deployed revision's does, given what only the
// platform has (its trace tables, its API keys); the platform reaches it through the gateway, as any.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { RequestHandler } from 'express';
import { type AgentServer, type AgentServerSpec, startAgentServer } from './agent-server/agent-server.js';
import { agentServerReference as agentServerReferenceRouter } from './agent-server/rest/openapi.operations.js';
import type { Config } from './config.js';
import type { Deps } from './context.js';
import { advertisedHost } from './contracts/launcher-protocol.js';
import { buildApp } from './platform/app.js';
import { openPlatformTraceStore } from './platform/ingest/trace-batcher.js';
import { startIngestThreads } from './platform/ingest/ingest-threads.js';
import { startPlatformJobs } from './platform/jobs/platform-jobs.js';
import { recordAgentServer } from './platform/launcher/child-launcher.js';
import { ensureDeploymentDatabase } from './platform/services/deployments/deployment-database.js';
import { findLocalDeployment, type LocalDeployment } from './platform/services/deployments/local-deployments.js';
import { moveSharedAgentRows } from './platform/services/deployments/shared-agent-rows.js';
import { bootstrapInstallation } from './platform/services/tenancy/tenancy.service.js';
import { createDeploymentFeedbackUrls } from './platform/services/traces/feedback.service.js';
import { countIngestedTraces } from './platform/services/usage/usage.service.js';
import { createDeps, type ProcessDeps } from './wiring.js';

/** A local deployment's agent server that this process runs (the runtime role), where it answers, and its own dependencies. */
export type RunningLocalDeployment = { deploymentId: string; url: string; graphIds: string[]; where: string; deps: Deps; stop(): Promise<void> };

export type RunningPlatform = {
  deps: Deps;
  /** Where the API role listens (undefined without the api role). */
  url: string | undefined;
  /** The first API key, on the installation's first start only. */
  firstApiKey: string | undefined;
  /** The local deployments' agent servers this process runs (runtime role). */
  runtimes: RunningLocalDeployment[];
  stop(): Promise<void>;
};

/**
 * Opens the platform as `start` and `serve` both begin: its dependencies and ingest threads, an
 * earlier version's deployments' rows moved out of its database into their own, its jobs (worked
 * where the worker role runs, scheduled otherwise), and the installation's first tenant and key on
 * its first start. Then `begin` builds the rest; what fails stops all of it.
 */
export async function openPlatform<T>(
  config: Config,
  logger: Logger,
  options: { jobsStopTimeoutMs: number },
  begin: (opened: { wiring: ProcessDeps; deps: Deps; firstApiKey: string | undefined }) => Promise<T>,
): Promise<T> {
  const wiring = await createDeps(config, logger);
  const { deps } = wiring;
  startIngestThreads(wiring);
  try {
    await moveSharedAgentRows(deps);
    const boss = await startPlatformJobs(deps, { work: config.roles.includes('worker') });
    wiring.onStop(() => boss.stop({ graceful: true, timeout: options.jobsStopTimeoutMs }));
    deps.boss = boss;
    // Registered after the queue's stop, so it runs before it: runtimes end while the database is up.
    wiring.onStop(async () => deps.deployedRuntimes?.stop());
    const bootstrap = await bootstrapInstallation(deps);
    return await begin({ wiring, deps, firstApiKey: bootstrap?.key });
  } catch (error) {
    await wiring.stop();
    throw error;
  }
}

export function startPlatform(config: Config, logger: Logger): Promise<RunningPlatform> {
  return openPlatform(config, logger, { jobsStopTimeoutMs: 10_000 }, async ({ wiring, deps, firstApiKey }) => {
    const runtimes: RunningLocalDeployment[] = [];
    if (config.roles.includes('runtime')) {
      for (const deploymentId of config.runtimeDeployments) {
        const running = await runLocalDeployment(deps, deploymentId);
        wiring.onStop(() => running.stop());
        runtimes.push(running);
      }
    }
    let url: string | undefined;
    if (config.roles.includes('api')) {
      const app = buildApp(deps, { agentServerReference: agentServerReference() });
      // Stopped first: no new requests while jobs and the bus wind down.
      wiring.onStop(() => app.stop());
      url = await app.start(config.port, config.host);
    }
    logger.info({ url, roles: config.roles }, 'agent platform started');
    return { deps, url: config.publicUrl ?? url, firstApiKey, runtimes, stop: wiring.stop };
  });
}

/** The agent server's API reference, which the platform serves at every deployment's url (buildApp's `agentServerReference`). */
export const agentServerReference = (): RequestHandler => agentServerReferenceRouter();

/**
 * Starts the agent server of a local deployment in this process, on its own database (made by the
 * admin login, as a control-plane deployment's, for a login of its own: ensureDeploymentDatabase).
 * Its runs are traced into the platform's trace tables, in its workspace, in a project named after it
 * (AGENT_SERVER_TRACING_PROJECT, AGENT_SERVER_TRACING=false).
 */
export async function startLocalAgentServer(
  deps: Deps,
  deployment: LocalDeployment,
  options: Pick<AgentServerSpec, 'anonymous' | 'dev' | 'platformKeys'> = {},
): Promise<AgentServer> {
  const database = await ensureDeploymentDatabase(deps, deployment.deploymentId, { local: true });
  const { config } = deps;
  return startAgentServer(config, deps.logger.child({ deploymentId: deployment.deploymentId }), {
    deploymentId: deployment.deploymentId,
    name: deployment.name,
    workspaceId: deployment.tenantId,
    organizationId: deployment.organizationId,
    configPath: deployment.configPath,
    databaseUrl: database.url,
    ...options,
    tracing: {
      workspaceId: deployment.tenantId,
      project: deployment.name,
      store: { databaseUrl: deps.db.url, open: (url) => openPlatformTraceStore(deps, url) },
      // Its runs' feedback urls are this platform's, where the caller reached it.
      feedbackUrls: async ({ project, runId, keys, platformUrl }) => {
        const baseUrl = platformUrl ?? config.publicUrl;
        if (!baseUrl) throw new Error('The platform’s url is not known: set PUBLIC_URL.');
        return createDeploymentFeedbackUrls(deps, { workspaceId: deployment.tenantId, project }, { runId, keys, baseUrl });
      },
    },
    tracesIngested: () => countIngestedTraces(deps, deployment.tenantId),
  });
}

/**
 * The runtime role for one local deployment (`start --role runtime --deployment <id>`): its agent
 * server on a port of its own, recorded in deployment_runtimes, where the gateway finds it.
 */
export async function runLocalDeployment(deps: Deps, deploymentId: string): Promise<RunningLocalDeployment> {
  const deployment = await findLocalDeployment(deps, deploymentId);
  const agentServer = await startLocalAgentServer(deps, deployment);
  const server = createServer((request, response) => agentServer.handle(request, response));
  server.on('upgrade', (request, socket, head) => agentServer.handleUpgrade(request, socket, head));
  const stopServer = () =>
    new Promise<void>((resolve) => {
      agentServer.upgrade.close();
      server.close(() => resolve());
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), 5000).unref();
    });
  let removeRecord: (() => Promise<void>) | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, deps.config.host, () => resolve());
    });
    const url = `http://${advertisedHost(deps.config.host, deps.config.publicUrl)}:${(server.address() as AddressInfo).port}`;
    agentServer.listening(url);
    removeRecord = await recordAgentServer(deps, { id: agentServer.runtimeId, deploymentId, url });
    deps.logger.info({ deploymentId, url }, "a local deployment's agent server started");
    return {
      deploymentId,
      url,
      graphIds: agentServer.graphIds,
      where: agentServer.runtime.where,
      deps: agentServer.deps,
      async stop() {
        // Out of deployment_runtimes first: the gateway sends it nothing more.
        await removeRecord?.();
        await stopServer();
        await agentServer.stop();
      },
    };
  } catch (error) {
    await removeRecord?.();
    await stopServer();
    await agentServer.stop();
    throw error;
  }
}
