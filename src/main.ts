// CLI entry: `agent-platform start | migrate | admin …`.
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, type Config, loadConfig } from './config.js';
import { isAppError } from './errors.js';
import { createLogger, logDefaults } from './logger.js';
import { runAdmin } from './admin.js';
import { registerDeploy } from './deploy-cli.js';
import { createDeps } from './wiring.js';
import { describeSandbox, probeSandbox } from './platform/launcher/sandbox.js';

const program = new Command('agent-platform')
  .description('Deploy and run LangGraph agents, record traces, meter usage and export traces.')
  .showHelpAfterError();

type ProcessOptions = { port?: string; host?: string; dataDir?: string; role?: string; deployment?: string[] };

function configFrom(options: ProcessOptions, defaults: Record<string, string> = {}): Config {
  return loadConfig(
    process.env,
    {
      PORT: options.port,
      HOST: options.host,
      AGENT_PLATFORM_DATA_DIR: options.dataDir,
      AGENT_PLATFORM_ROLES: options.role,
      AGENT_PLATFORM_RUNTIME_DEPLOYMENTS: options.deployment?.join(','),
    },
    { ...logDefaults(process.stdout), ...defaults },
  );
}

// `serve`: run data inline on the event bus (no deployed code connects to its database).
const SERVE_DEFAULTS = { AGENT_PLATFORM_RUN_DATA_ON_EVENT_BUS: 'true' };

const portOption = new Option('-p, --port <port>', 'HTTP port (env PORT, default 4100)').argParser((value) => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a port number');
  return value;
});
const dataDirOption = new Option('--data-dir <dir>', 'where the embedded database and keys live (env AGENT_PLATFORM_DATA_DIR, default .data)');

program
  .command('start', { isDefault: true })
  .description('start the platform (all roles by default) on the embedded or configured PostgreSQL')
  .addOption(portOption)
  .option('--host <host>', 'interface to listen on (env HOST, default 127.0.0.1)')
  .addOption(dataDirOption)
  .option('--role <roles>', 'comma-separated roles to run: api,worker,runtime (env AGENT_PLATFORM_ROLES)')
  .option('--deployment <id...>', 'runtime role: run the runtime of this deployment (repeatable; env AGENT_PLATFORM_RUNTIME_DEPLOYMENTS)')
  .action(async (options: ProcessOptions) => {
    const config = configFrom(options);
    const logger = createLogger(config);
    // Loaded per command: `admin` and `migrate` need neither the HTTP app nor the runtime.
    const { startPlatform } = await import('./start.js');
    const platform = await startPlatform(config, logger);
    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) process.exit(130); // a second signal: the operator wants out now
      stopping = true;
      logger.info({ signal }, 'shutting down');
      await platform.stop();
      logger.flush();
      process.exit(0);
    };
    // Before the lines that say it is ready: a signal sent on reading them stops it gracefully.
    onShutdownSignal(shutdown);
    printWelcome(platform.url, platform.firstApiKey, config);
    // Where this process deploys customers' code, whether it can sandbox it is said plainly.
    if (config.roles.includes('worker') && config.controlPlaneWorker) {
      const sandbox = probeSandbox(config.sandbox);
      console.log(`Deployments: ${describeSandbox(sandbox)}\n`);
      if (!sandbox.enabled) logger.warn({ reason: sandbox.reason, allowUnsandboxed: sandbox.allowUnsandboxed }, 'deployed code cannot be sandboxed on this machine');
    }
    // One line per runtime, which also tells scripts (and tests) that it is ready.
    for (const runtime of platform.runtimes) {
      console.log(`Runtime of deployment ${runtime.deploymentId} (graphs: ${runtime.graphIds.join(', ')}; in a ${runtime.where}) running at ${runtime.url}`);
    }
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .addOption(dataDirOption)
  .action(async (options: ProcessOptions) => {
    const config = configFrom(options);
    // createDeps applies pending migrations before it returns; an earlier version's deployments' rows
    // in the platform's database then move to their own databases, which lets the last ones apply.
    const { deps, stop } = await createDeps(config, createLogger({ ...config, logLevel: 'info' }), { listen: false });
    try {
      const { moveSharedAgentRows } = await import('./platform/services/deployments/shared-agent-rows.js');
      await moveSharedAgentRows(deps);
    } finally {
      await stop();
    }
  });

program
  .command('serve')
  .description('serve one graph config (langgraph.json) as an agent server at the root of its own port, runtime included')
  .requiredOption('-c, --config <path>', 'path to langgraph.json')
  .addOption(portOption)
  .option('--host <host>', 'interface to listen on (env HOST, default 127.0.0.1)')
  .addOption(dataDirOption)
  .option('--dev', 'development mode: enables POST /internal/truncate for test harnesses')
  .action(async (options: ProcessOptions & { config: string; dev?: boolean }) => {
    // The graph config's `env` is in place before anything reads the environment (LANGGRAPH_CONFIG).
    const { applyGraphConfigEnv, readGraphConfig } = await import('./contracts/graph-config.js');
    applyGraphConfigEnv(readGraphConfig(options.config));
    const config = configFrom(options, SERVE_DEFAULTS);
    const logger = createLogger(config);
    const { startServe } = await import('./serve.js');
    const server = await startServe(config, logger, { configPath: options.config, dev: options.dev ?? false });
    let stopping = false;
    const shutdown = async () => {
      if (stopping) process.exit(130); // a second signal: the operator wants out now
      stopping = true;
      await server.stop();
      logger.flush();
      process.exit(0);
    };
    // Before the lines that say it is ready: a signal sent on reading them stops it gracefully.
    onShutdownSignal(shutdown);
    // Printed before the URL line, which tells scripts (and tests) that the server is ready.
    console.log(`Graphs run in ${server.runtime === 'worker thread' ? 'a worker thread' : "the HTTP server's thread"} (AGENT_PLATFORM_RUNTIME_THREAD)`);
    console.log(`Agent server (graphs: ${server.graphIds.join(', ')}; deployment ${server.deploymentId}) running at ${server.url}`);
    if (server.tracing) console.log(`Runs are traced into project "${server.tracing.project}" of workspace ${server.tracing.workspaceId}`);
    if (server.firstApiKey) console.log(`First start: created the default organization, workspace and admin user. API key (shown once):\nAPI key: ${server.firstApiKey}`);
  });

runAdmin(program, (options: ProcessOptions) => configFrom(options));
registerDeploy(program);

/** Graceful stop on SIGINT/SIGTERM; the embedded database is stopped last, by `shutdown`. */
function onShutdownSignal(shutdown: (signal: string) => Promise<void>) {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(signal));
}

function printWelcome(url: string | undefined, firstApiKey: string | undefined, config: Config) {
  const lines = [''];
  if (url) {
    lines.push(
      `Agent Platform is running at ${url}`,
      `  Console              ${url}/`,
      `  GraphQL + GraphiQL   ${url}/graphql`,
      `  Health               ${url}/ok`,
      `  Platform REST API    ${url}/api/v1/workspaces`,
    );
  } else {
    lines.push(`Agent Platform is running (roles: ${config.roles.join(', ')}; no HTTP listener without the api role)`);
  }
  if (firstApiKey) {
    lines.push('', 'First start: created the default organization, workspace and admin user. Your API key (shown once):');
    lines.push(`API key: ${firstApiKey}`);
    if (url) lines.push('', `Try: curl -s -H "X-Api-Key: ${firstApiKey}" -H "Content-Type: application/json" \\`, `       -d '{"query":"{ viewer { user { email } workspaces { id name } } }"}' ${url}/graphql`);
  } else {
    lines.push('', 'Create more API keys with: agent-platform admin keys create --help');
  }
  console.log(`${lines.join('\n')}\n`);
}

program.parseAsync(process.argv).catch((error: unknown) => {
  const { code, port } = error as { code?: string; port?: number };
  if (code === 'EADDRINUSE') {
    console.error(`agent-platform: port ${port} is in use; choose another with --port or PORT`);
    process.exit(1);
  }
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  console.error(isAppError(error) ? `error: ${error.message}` : `agent-platform: ${(error as Error).message ?? error}`);
  process.exit(1);
});
