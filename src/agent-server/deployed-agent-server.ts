// A deployed revision's agent server, in its sandboxed child process (agent-server/main.ts): the agent
// server `serve` runs (agent-server.ts), on the deployment's own database and behind the platform's
// gateway, serving on the listening socket its launcher made.
import { createServer } from 'node:http';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { HAND_OVER_FOLLOW_MS, type RuntimeStopOptions } from '../contracts/launcher-protocol.js';
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

export type DeployedAgentServer = { runtimeId: string; graphIds: string[]; stop(options?: RuntimeStopOptions): Promise<void> };

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
  // The requests it is answering, which a stop that hands over waits for (the gateway's connections
  // come from the launcher's socket: the server's close() does not wait for them).
  let inFlight = 0;
  let allAnswered: (() => void) | undefined;
  const server = createServer((request, response) => {
    inFlight++;
    response.once('close', () => {
      if (--inFlight === 0) allAnswered?.();
    });
    agentServer.handle(request, response);
  });
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
    async stop(options = {}) {
      // Open sockets (the thread stream's) first: they would hold the server.
      agentServer.upgrade.close();
      // No new connections; the requests it holds are answered for a while, then cut.
      spec.listener.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const { handOver } = options;
      if (handOver) {
        // Handing over: its runtime drains and lets go first, so the one taking over works the run
        // queue (the runs cut short here among its runs) while this server still answers the
        // runs.wait, joins and streams it holds, which follow their runs wherever they execute.
        await agentServer.stopRuntime({ handOver });
        // Connections whose request was answered meanwhile (kept alive by the gateway) are closed as they idle.
        const idle = setInterval(() => server.closeIdleConnections(), 250);
        const answered = new Promise<void>((resolve) => {
          allAnswered = resolve;
          if (inFlight === 0) resolve();
        });
        await Promise.race([answered, new Promise((resolve) => setTimeout(resolve, HAND_OVER_FOLLOW_MS).unref())]);
        clearInterval(idle);
        server.closeAllConnections();
        await closed;
      } else {
        const cut = setTimeout(() => server.closeAllConnections(), 5000);
        await closed;
        clearTimeout(cut);
      }
      await agentServer.stop();
    },
  };
}
