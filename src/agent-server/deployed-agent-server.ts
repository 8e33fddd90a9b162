// A deployed revision's agent server, in its sandboxed child process (agent-server/main.ts): what `serve`
// is for one graph config, on the deployment's own database and behind the platform's gateway. It
// migrates that database as its owner, records its deployment there, runs the runtime (graphs, run
// queue, crons and sweeps) and serves the agent-server API, the project's `http.app` and `ui` on a port
// of its own, answering only requests the gateway signed (agent-server/rest/gateway-identity.ts).
import { randomUUID } from 'node:crypto';
import { createServer, ServerResponse } from 'node:http';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import express from 'express';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { readGraphConfig } from '../contracts/graph-config.js';
import { createDeps } from '../wiring.js';
import { gatewayIdentityHeaders, RUNTIME_DEPLOYMENT_URL_HEADER } from '../contracts/gateway-protocol.js';
import { agentServerRouter } from './rest/router.js';
import { threadStreamUpgrade } from './rest/thread-stream.socket.js';
import { registerOwnDeployment } from './services/served-deployment/served-deployment.js';
import { SYSTEM_VIEWER } from '../viewer.js';
import { startBoss } from './jobs/boss.js';
import { bindSdkClientsToServer, loadCustomApp } from './runtime/custom-app.js';
import { loadCustomAuth } from './runtime/custom-auth.js';
import { startRuntimeRole } from './runtime/role.js';
import { bundleGraphUis } from './runtime/ui-bundles.js';

export type DeployedAgentServerSpec = {
  /** The listening socket it serves on, made by its launcher in the host's network (its own reaches nothing of the host's). */
  listener: NetServer;
  deploymentId: string;
  name: string;
  workspaceId: string;
  organizationId: string;
  configPath: string;
  revisionId: string | undefined;
};

export type DeployedAgentServer = { runtimeId: string; graphIds: string[]; stop(): Promise<void> };

/** Starts it on `config.databaseUrl` (the deployment's database, migrated); resolves once it serves. */
export async function startDeployedAgentServer(configured: Config, logger: Logger, spec: DeployedAgentServerSpec): Promise<DeployedAgentServer> {
  // Its runs are never traced into its own database: traces belong to the platform, which its launcher
  // gave a URL and a trace key for (config.deploymentTraces; agent-server/runtime/ingest-api-traces.ts).
  // Its graphs run on this process's thread: a runtime worker thread (as `serve` has) cost ~3 s of
  // start (create -> DEPLOYED p50 8.4 s against 5.6 s) and gave no throughput through the gateway
  // (runs/s x0.80 of serve's against x0.84; bench:deploy, bench:runs). The process is the deployment's own.
  // Run data rides on its event bus as on `serve` (config.runDataOnEventBus: a waited run's output on
  // its final signal, a stream's events on their notifications), which saves a read of the run row per
  // runs/wait and of the events per stream batch: the bus is its own database's, where the only login
  // is the deployment's own, which reads every row of it anyway.
  const config: Config = { ...configured, runtimeThread: false, runDataOnEventBus: true, agentServerTracing: { ...configured.agentServerTracing, enabled: false } };
  // Migrated already (agent-server/main.ts, while the graphs loaded): the agent server owns its database.
  const databaseUrl = config.databaseUrl!;
  const wiring = await createDeps(config, logger, { databaseUrl, poolSize: config.runtimeDbPoolSize, applicationName: 'agent-server' });
  const { deps } = wiring;
  try {
    const boss = await startBoss(deps, { work: true, applicationName: 'agent-server-jobs' });
    wiring.onStop(() => boss.stop({ graceful: true, timeout: 5000 }));
    deps.boss = boss;
    await registerOwnDeployment({ ...deps, viewer: SYSTEM_VIEWER }, spec);
    const runtimes = await startRuntimeRole(deps, boss, [spec.deploymentId]);
    wiring.onStop(() => runtimes.stop());
    // Whom the gateway signs this server's requests for (and its row in the platform's deployment_runtimes).
    const running = { runtimeId: randomUUID(), graphIds: runtimes.runtimes[0]!.graphIds };

    const graphConfig = readGraphConfig(spec.configPath);
    // The project's `new Client()` reaches this server, with requests its own process signs.
    const listeningAt = bindSdkClientsToServer({
      headers: (method, path) => gatewayIdentityHeaders(deps.secrets, running.runtimeId, { method, path }, { userId: spec.deploymentId, apiKeyId: spec.deploymentId, access: 'write' }),
    });
    const customApp = await loadCustomApp(graphConfig, logger);
    const ui = await bundleGraphUis(graphConfig, logger);
    // langgraph.json `auth`: the project's handlers decide who its callers are, here where its code runs.
    const auth = await loadCustomAuth(graphConfig, logger);
    const app = express();
    app.disable('x-powered-by');
    const target = { deploymentId: spec.deploymentId, behindGateway: { runtimeId: () => running.runtimeId } };
    app.use(
      agentServerRouter(
        deps,
        target,
        // The UI's links and A2A cards point at the deployment's url as the caller reached it, which the gateway sends.
        { customApp, ui, urlOf: (req) => req.get(RUNTIME_DEPLOYMENT_URL_HEADER), auth },
      ),
    );
    const server = createServer(app);
    // The thread stream's WebSocket (the gateway forwards upgrades with the caller's signed identity).
    const threadStream = threadStreamUpgrade(deps, target, { auth });
    server.on('upgrade', (request, socket, head) => {
      if (threadStream.handle(request, socket, head)) return;
      // Any other upgrade is answered as the plain request it also is (as without this listener).
      if (head.length) socket.unshift(head);
      const response = new ServerResponse(request);
      response.assignSocket(socket as Socket);
      response.once('finish', () => socket.end());
      app(request, response);
    });
    // Connections to the launcher's socket are this server's; a second listener, on its own network's
    // loopback, serves the project's `new Client()` (the launcher's address is not reachable from in here).
    spec.listener.on('connection', (socket: Socket) => server.emit('connection', socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    wiring.onStop(
      () =>
        new Promise<void>((resolve) => {
          spec.listener.close();
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 5000).unref();
        }),
    );
    // Registered after the server's stop, so it runs before it: open sockets do not hold the server.
    wiring.onStop(async () => threadStream.close());
    listeningAt(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return { runtimeId: running.runtimeId, graphIds: running.graphIds, stop: wiring.stop };
  } catch (error) {
    await wiring.stop();
    throw error;
  }
}
