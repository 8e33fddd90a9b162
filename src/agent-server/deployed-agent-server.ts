// A deployed revision's agent server, in its sandboxed child process (agent-server/main.ts): the agent
// server `serve` runs (agent-server.ts), on the deployment's own database and behind the platform's
// gateway, serving on the listening socket its launcher made.
import { createServer } from 'node:http';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { startAgentServer } from './agent-server.js';

export type DeployedAgentServerSpec = {
  /** The listening socket it serves on, made by its launcher in the host's network (its own reaches nothing of the host's). */
  listener: NetServer;
  deploymentId: string;
  name: string;
  workspaceId: string;
  organizationId: string;
  configPath: string;
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
  // is the deployment's own, which reads every row of it anyway. Not with encryption at rest: a large
  // notification waits in event_payloads, which would hold run data in plaintext.
  const config: Config = { ...configured, runtimeThread: false, runDataOnEventBus: !configured.encryption, agentServerTracing: { ...configured.agentServerTracing, enabled: false } };
  // Migrated already (agent-server/main.ts, while the graphs loaded): the agent server owns its database.
  const agentServer = await startAgentServer(config, logger, { ...spec, databaseUrl: config.databaseUrl!, migrated: true });
  const server = createServer((request, response) => agentServer.handle(request, response));
  server.on('upgrade', (request, socket, head) => agentServer.handleUpgrade(request, socket, head));
  // Connections to the launcher's socket are this server's; a second listener, on its own network's
  // loopback, serves the project's `new Client()` (the launcher's address is not reachable from in here).
  spec.listener.on('connection', (socket: Socket) => server.emit('connection', socket));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
  } catch (error) {
    await agentServer.stop();
    throw error;
  }
  agentServer.listening(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return {
    runtimeId: agentServer.runtimeId,
    graphIds: agentServer.graphIds,
    async stop() {
      // Open sockets (the thread stream's) first: they would hold the server.
      agentServer.upgrade.close();
      await new Promise<void>((resolve) => {
        spec.listener.close();
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 5000).unref();
      });
      await agentServer.stop();
    },
  };
}
