// The body of a deployment's runtime child process (child-launcher.ts). It holds only what its
// environment gives it: a database login of its own, a signing key derived for this runtime (never
// the installation's secret key) and the deployment's secrets. Two modes, from the launcher over IPC:
//   check   load every graph of the config (the build's import check), report their ids, exit
//   serve   run the deployment's runtime until told to stop, or until the launcher goes away
import { MemorySaver } from '@langchain/langgraph';
import { InMemoryStore } from '@langchain/langgraph';
import { loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { applyGraphConfigEnv, readGraphConfig } from './graph-config.js';
import { GraphRegistry } from './graph-registry.js';

/** Launcher → child. */
export type ChildCommand = 'stop';
/** Child → launcher. */
export type ChildReport = { type: 'ready'; url: string; graphIds: string[]; runtimeId: string } | { type: 'failed'; message: string };

const send = (report: ChildReport) => new Promise<void>((resolve) => (process.send ? process.send(report, () => resolve()) : resolve()));

const mode = process.env.AGENT_PLATFORM_CHILD_MODE;
const configPath = process.env.AGENT_PLATFORM_GRAPH_CONFIG!;
const deploymentId = process.env.AGENT_PLATFORM_DEPLOYMENT_ID!;

// The launcher going away (a crash included) takes the runtime with it: no orphan keeps serving.
process.on('disconnect', () => process.exit(0));

if (mode === 'check') {
  try {
    const graphConfig = readGraphConfig(configPath);
    applyGraphConfigEnv(graphConfig);
    const silent = createLogger({ logLevel: 'silent', logPretty: false });
    const graphs = await GraphRegistry.load(graphConfig, { checkpointer: new MemorySaver(), store: new InMemoryStore() }, silent);
    await send({ type: 'ready', url: '', graphIds: graphs.graphIds(), runtimeId: '' });
    process.exit(0);
  } catch (error) {
    await send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  }
} else {
  const graphConfig = readGraphConfig(configPath);
  applyGraphConfigEnv(graphConfig);
  const config = loadConfig(process.env);
  const logger = createLogger(config).child({ deploymentId, revisionId: process.env.AGENT_PLATFORM_REVISION_ID });
  let stopProcess: () => Promise<void> = async () => undefined;
  try {
    // Loaded here only: the import check (above) needs none of the platform's wiring, and starts faster without it.
    const { startStandaloneRuntime } = await import('./standalone-runtime.js');
    const { running, stop } = await startStandaloneRuntime(config, logger, config.databaseUrl, {
      deploymentId,
      configPath,
      tracing: undefined,
      revisionId: process.env.AGENT_PLATFORM_REVISION_ID,
      keyId: process.env.AGENT_PLATFORM_RUNTIME_KEY_ID,
    });
    stopProcess = stop;
    process.on('message', (command: ChildCommand) => {
      if (command === 'stop') void stopProcess().then(() => process.exit(0));
    });
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void stopProcess().then(() => process.exit(0)));
    await send({ type: 'ready', url: running.url, graphIds: running.graphIds, runtimeId: running.runtimeId });
  } catch (error) {
    logger.error({ err: error }, 'the runtime could not start');
    await send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    await stopProcess();
    process.exit(1);
  }
}
