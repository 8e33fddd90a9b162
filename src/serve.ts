// `agent-platform serve --config langgraph.json`: one graph config served at the root of its own port
// (like `langgraph dev`), with the runtime in the same process, on the embedded PostgreSQL or
// DATABASE_URL. The REST surface is the same router the platform mounts per deployment; /graphql
// serves the platform schema, where this deployment's assistants, threads and runs are visible.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { useServer } from 'graphql-ws/use/ws';
import { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { Config } from './config.js';
import { EventBus } from './events.js';
import { createGraphQLServer, GRAPHQL_PATH } from './graphql/yoga.js';
import { openDatabase } from './platform.js';
import { agentServerRouter } from './rest/agent-server/router.js';
import { ensureSystemAssistants } from './services/assistants/assistants.service.js';
import type { Deps } from './services/context.js';
import { type AgentServerContext, type DeploymentScope, serveDeploymentId } from './services/runtime/deployment-scope.js';
import { readGraphConfig } from './services/runtime/graph-config.js';
import { GraphRegistry } from './services/runtime/graph-registry.js';
import { openPersistence } from './services/runtime/persistence.js';
import { RunQueue } from './services/runtime/run-queue.js';
import { type Runtime, startRuntime } from './services/runtime/runtime.js';
import { registerDeploymentScope } from './services/runtime/scopes.js';
import { SYSTEM_VIEWER } from './services/tenancy/viewer.js';
import { BOSS_SCHEMA } from './workers/boss.js';

export type AgentServer = { url: string; deploymentId: string; graphIds: string[]; stop(): Promise<void> };

/** Starts the agent server for one graph config; resolves once it listens. */
export async function startAgentServer(config: Config, logger: Logger, options: { configPath: string; dev: boolean }): Promise<AgentServer> {
  const graphConfig = readGraphConfig(options.configPath);
  const deploymentId = serveDeploymentId(graphConfig.path);
  const runsHere = config.roles.includes('runtime');
  const { db, embedded, secrets } = await openDatabase({ ...config, dbPoolSize: Math.max(config.dbPoolSize, 24) }, logger);
  const events = new EventBus(db.pool, db.url, logger);
  const deps: Deps = { config, db, events, secrets, logger };
  const boss = new PgBoss({
    connectionString: db.url,
    schema: BOSS_SCHEMA,
    application_name: 'agent-platform-runs',
    max: 8,
    // Runtimes are woken by the platform's own `runs.queued` event (see runtime.ts).
    useListenNotify: false,
    supervise: runsHere,
    schedule: false,
  });
  boss.on('error', (error: unknown) => logger.error({ err: error }, 'job queue error'));
  const cleanup: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const step of cleanup.reverse()) await step().catch((error: unknown) => logger.error({ err: error }, 'shutdown step failed'));
    await db.close().catch(() => undefined);
    await embedded?.stop();
  };
  try {
    await events.start();
    cleanup.push(() => events.stop());
    await boss.start();
    cleanup.push(() => boss.stop({ graceful: true, timeout: 5000 }));
    const persistence = await openPersistence(db.url, deploymentId, { poolSize: Math.min(config.runtimeConcurrency + 4, 40) });
    cleanup.push(() => persistence.close());
    const graphs = await GraphRegistry.load(graphConfig, persistence);
    const scope: DeploymentScope = { deploymentId, graphs, persistence, queue: new RunQueue(boss, deploymentId), auth: { kind: 'none' }, dev: options.dev };
    const unregister = registerDeploymentScope(scope);
    cleanup.push(async () => unregister());
    const ctx: AgentServerContext = { ...deps, viewer: SYSTEM_VIEWER, deployment: scope };
    await scope.queue.ensure();
    await ensureSystemAssistants(ctx, config.langgraphConfig);
    let runtime: Runtime | undefined;
    if (runsHere) {
      runtime = await startRuntime(ctx, { concurrency: config.runtimeConcurrency });
      cleanup.push(() => runtime!.stop());
    }

    const yoga = createGraphQLServer(deps);
    const app = express();
    app.disable('x-powered-by');
    // Served without auth, like the REST surface: every operation acts as the platform itself.
    app.all(GRAPHQL_PATH, express.json({ limit: config.bodyLimit }), (req, res) => yoga(req, res, { ...deps, viewer: SYSTEM_VIEWER }));
    app.use(agentServerRouter(deps, scope));
    const server = createServer(app);
    const wsServer = new WebSocketServer({ server, path: GRAPHQL_PATH });
    type Enveloped = ReturnType<typeof yoga.getEnveloped>;
    const graphqlWs = useServer(
      {
        execute: (args) => (args.rootValue as Enveloped).execute(args),
        subscribe: (args) => (args.rootValue as Enveloped).subscribe(args),
        onSubscribe: async (wsCtx, _id, params) => {
          const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
            ...wsCtx,
            ...deps,
            viewer: SYSTEM_VIEWER,
            req: wsCtx.extra.request,
            socket: wsCtx.extra.socket,
            params,
          });
          const args = {
            schema,
            operationName: params.operationName,
            document: parse(params.query),
            variableValues: params.variables,
            contextValue: await contextFactory(),
            rootValue: { execute, subscribe },
          };
          const errors = validate(args.schema, args.document);
          return errors.length ? errors : args;
        },
      },
      wsServer,
    );
    cleanup.push(async () => {
      await graphqlWs.dispose();
      for (const client of wsServer.clients) client.terminate();
      wsServer.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    });
    const url = await new Promise<string>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        const { port } = server.address() as AddressInfo;
        resolve(`http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`);
      });
    });
    return { url, deploymentId, graphIds: graphs.graphIds(), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
