// The body of a deployment's runtime child process (child-launcher.ts). It holds only what its
// environment gives it: a database login of its own, a signing key derived for this runtime (never
// the installation's secret key) and the deployment's secrets. Its life, driven over IPC:
//   1. load every graph of the config and report `loaded` with their ids (or `failed` with the
//      loader's error): this is the build's import check;
//   2. on `serve` (with the listening socket its launcher made), start the deployment's agent server
//      on its own database (agent-server.ts) and report `ready`: the deploy takes over the process the
//      build checked, instead of starting a second cold one;
//   3. on `stop` (or when the launcher goes away), stop and exit; on `hand-over`, stop its runtime,
//      report `released`, answer what it holds (for a while), then exit.
import type { Server as NetServer, Socket } from 'node:net';
import { MemorySaver } from '@langchain/langgraph';
import { InMemoryStore } from '@langchain/langgraph';
import { loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { applyGraphConfigEnv, readGraphConfig } from '../contracts/graph-config.js';
import { loadCustomApp } from './runtime/custom-app.js';
import type { ChildCommand, ChildReport, RuntimeStopOptions } from '../contracts/launcher-protocol.js';
import { GraphRegistry } from './runtime/graph-registry.js';
import { usePlatformConnections } from './runtime/platform-connections.js';


const send = (report: ChildReport) => new Promise<void>((resolve) => (process.send ? process.send(report, () => resolve()) : resolve()));
/** The platform's own code and packages: their frames say nothing to the deployment's author. */
const PLATFORM_CODE = [new URL('../', import.meta.url).pathname, new URL('../../node_modules/', import.meta.url).pathname];

/**
 * Why the graphs could not load, for the build log: the error's message and its causes', and the
 * frames of the stack that are the repository's (its code and packages), not the platform's.
 */
const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const messages: string[] = [];
  for (let cause: unknown = error; cause instanceof Error && messages.length < 5; cause = cause.cause) {
    if (!messages.some((message) => message.includes(cause instanceof Error ? cause.message : ''))) messages.push(cause.message);
  }
  const innermost = messages.length > 1 && error.cause instanceof Error ? error.cause : error;
  const frames = (innermost.stack ?? '')
    .split('\n')
    .filter((line) => /^\s+at /.test(line) && !PLATFORM_CODE.some((folder) => line.includes(folder)) && !line.includes('node:internal') && !line.includes('/tsx/'))
    .slice(0, 8);
  return [messages.join(': '), ...frames].join('\n');
};

const configPath = process.env.AGENT_PLATFORM_GRAPH_CONFIG!;
const deploymentId = process.env.AGENT_PLATFORM_DEPLOYMENT_ID!;

// The launcher going away (a crash included) takes the runtime with it: no orphan keeps serving.
process.on('disconnect', () => process.exit(0));

let stopProcess: (options?: RuntimeStopOptions) => Promise<void> = async () => undefined;
const exitAfterStop = (options?: RuntimeStopOptions) => void stopProcess(options).then(() => process.exit(0));
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => exitAfterStop());
// Listening from the start: a message that arrives while nobody listens is lost.
let serveRequested: (listener: NetServer) => void = () => undefined;
const serveCommand = new Promise<NetServer>((resolve) => (serveRequested = resolve));
// Connections to the platform (its ingest API) asked of the launcher, by id.
const platformConnections = new Map<number, { resolve(socket: Socket): void; reject(error: Error): void }>();
let nextConnection = 0;
process.on('message', (command: ChildCommand, handle?: NetServer | Socket) => {
  if (command === 'serve' && handle) serveRequested(handle as NetServer);
  else if (command === 'stop') exitAfterStop();
  else if (command === 'hand-over') exitAfterStop({ handOver: { released: () => send({ type: 'released' }) } });
  else if (typeof command === 'object' && command.type === 'platform-connection') {
    const waiting = platformConnections.get(command.id);
    platformConnections.delete(command.id);
    if (handle && !command.error) waiting?.resolve(handle as Socket);
    else waiting?.reject(new Error(`no connection to the platform: ${command.error ?? 'none handed over'}`));
  }
});
usePlatformConnections(
  () =>
    new Promise<Socket>((resolve, reject) => {
      const id = nextConnection++;
      platformConnections.set(id, { resolve, reject });
      void send({ type: 'connect-platform', id });
    }),
);

const graphConfig = readGraphConfig(configPath);
applyGraphConfigEnv(graphConfig);
const config = loadConfig(process.env);
const logger = createLogger(config).child({ deploymentId, revisionId: process.env.AGENT_PLATFORM_REVISION_ID });

// The deployment's database is migrated with the agent server's own chain (by its own login, its
// owner) while the graphs load, so the agent server that `serve` starts finds it ready.
const databaseMigrated = import('../database/migrate.js').then(({ migrateDatabase }) => migrateDatabase(config.databaseUrl!, logger, 'agent-server'));
databaseMigrated.catch(() => undefined); // reported by serve(), if it is asked to

try {
  const silent = createLogger({ logLevel: 'silent', logPretty: false });
  const graphs = await GraphRegistry.load(graphConfig, { checkpointer: new MemorySaver(), store: new InMemoryStore() }, silent);
  // The project's HTTP app is checked with the graphs (the runtime serves it; imported once, here).
  await loadCustomApp(graphConfig, silent);
  await send({ type: 'loaded', graphIds: graphs.graphIds() });
} catch (error) {
  await send({ type: 'failed', message: describe(error) });
  process.exit(1);
}

// Loaded while the pipeline moves the revision on, so `serve` finds the agent server's wiring compiled.
const agentServer = import('./deployed-agent-server.js');
agentServer.catch(() => undefined); // reported by serve(), if it is asked to

const listener = await serveCommand;
try {
  const { startDeployedAgentServer } = await agentServer;
  await databaseMigrated;
  const server = await startDeployedAgentServer(config, logger, {
    listener,
    deploymentId,
    name: process.env.AGENT_PLATFORM_DEPLOYMENT_NAME ?? deploymentId,
    workspaceId: process.env.AGENT_PLATFORM_WORKSPACE_ID!,
    organizationId: process.env.AGENT_PLATFORM_ORGANIZATION_ID!,
    configPath,
  });
  stopProcess = server.stop;
  await send({ type: 'ready', graphIds: server.graphIds, runtimeId: server.runtimeId });
} catch (error) {
  logger.error({ err: error }, 'the agent server could not start');
  await send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  await stopProcess();
  process.exit(1);
}
