// One deployment's agent server, whatever runs it: a deployed revision's sandboxed child process
// (agent-server/main.ts), a local deployment's in the platform process that runs it (`start --role
// runtime`), or `serve`'s. Always on the deployment's own database, which it migrates as its owner: it
// records its deployment there, runs the runtime (graphs, run queue, crons and sweeps) and answers the
// agent-server API, the project's `http.app` and `ui`, to requests the platform's gateway signed
// (agent-server/rest/gateway-identity.ts) and, at `serve`, to the developer on the machine. Its host
// gives it a server to answer on: it returns its request and upgrade handlers.
import { randomUUID } from 'node:crypto';
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import express, { type Request, type Router } from 'express';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Deps } from '../context.js';
import { applyGraphConfigEnv, readGraphConfig } from '../contracts/graph-config.js';
import { gatewayIdentityHeaders } from '../contracts/gateway-protocol.js';
import type { RuntimeStopOptions, RuntimeTracing } from '../contracts/launcher-protocol.js';
import type { FeedbackUrlMaker, TraceSink } from '../contracts/trace-wire.js';
import { migrateDatabase } from '../database/migrate.js';
import type { UpgradeEndpoint } from '../http/upgrade.js';
import { corsPolicy } from '../http/cors.js';
import { SYSTEM_VIEWER } from '../viewer.js';
import { createDeps } from '../wiring.js';
import { startBoss } from './jobs/boss.js';
import type { PlatformKeyCheck } from './rest/custom-auth.js';
import { agentServerRouter } from './rest/router.js';
import { threadStreamUpgrade } from './rest/thread-stream.socket.js';
import { bindSdkClientsToServer, loadCustomApp } from './runtime/custom-app.js';
import type { AppLoopback } from './runtime/runtime-context.js';
import type { CustomApp } from './services/served-deployment/runtime-protocol.js';
import { loadCustomAuth } from './runtime/custom-auth.js';
import { loadEncryptionHandlers } from './runtime/encryption-handlers.js';
import { ingestApiFeedbackUrls } from './runtime/ingest-api-traces.js';
import { startRuntimeRole } from './runtime/role.js';
import { bundleGraphUis } from './runtime/ui-bundles.js';
import { registerServedDeployment } from './services/served-deployment/served-deployment.js';
import { scheduleUnscheduledCrons } from './services/crons/crons.service.js';

export type AgentServerSpec = {
  deploymentId: string;
  name: string;
  /** The workspace it belongs to on the platform, and that workspace's organization (whose keys may use it). */
  workspaceId: string;
  organizationId: string;
  configPath: string;
  /** Its own database, which it migrates (unless `migrated`) and owns. */
  databaseUrl: string;
  migrated?: boolean;
  /**
   * `serve`: a request the gateway did not sign is the developer's on this machine, with every right
   * (like `langgraph dev`); anywhere else it is refused. `dev` adds the test harness's endpoints.
   */
  anonymous?: boolean;
  dev?: boolean;
  /** Where the platform's API keys can be checked (`serve`: the studio's key under custom auth). */
  platformKeys?: PlatformKeyCheck;
  /**
   * Where its runs' traces go when config.deploymentTraces names no ingest API: a local deployment's
   * host stores them in the platform's trace tables (`store`, at that database), its runtime thread
   * included; undefined: its runs are not traced.
   */
  tracing?: {
    workspaceId: string;
    project: string;
    store: { databaseUrl: string; open(databaseUrl: string): TraceSink };
    /** Makes its runs' feedback urls (the host's platform stores the traces; no key is involved). */
    feedbackUrls?: FeedbackUrlMaker;
  };
  /** The platform's count of the traces ingested into its workspace (its /metrics), where its host can read it. */
  tracesIngested?: () => Promise<number>;
};

export type AgentServer = {
  /** Whom the gateway signs this server's requests for: its row in the platform's deployment_runtimes. */
  runtimeId: string;
  graphIds: string[];
  /** Its dependencies, on its own database. */
  deps: Deps;
  /** Where its graphs execute, and where its runs are traced. */
  runtime: { where: string; tracing: RuntimeTracing | undefined };
  /** Its routes, to mount at the root of a host's own app (`serve`). */
  router: Router;
  /** Answers its HTTP requests on a server of its own. */
  handle(request: IncomingMessage, response: ServerResponse): void;
  /** The upgrades it owns (the thread stream's WebSocket), on a host's server beside the host's own. */
  upgrade: UpgradeEndpoint;
  /** Answers every upgrade on a server of its own: its own, and any other as the plain request it also is. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Tells it the url it listens at once its host listens (the project's `new Client()` reaches it there). */
  listening(url: string): void;
  /**
   * Stops its runtime only (see RuntimeStopOptions), the server answering on: the first step of a
   * stop that hands the deployment over. `stop` stops the rest.
   */
  stopRuntime(options: RuntimeStopOptions): Promise<void>;
  stop(): Promise<void>;
};

/** Starts the agent server; resolves once its runtime works the run queue. */
export async function startAgentServer(config: Config, logger: Logger, spec: AgentServerSpec): Promise<AgentServer> {
  if (!spec.migrated) await migrateDatabase(spec.databaseUrl, logger, 'agent-server');
  const wiring = await createDeps(config, logger, { databaseUrl: spec.databaseUrl, poolSize: config.runtimeDbPoolSize, applicationName: 'agent-server' });
  const { deps } = wiring;
  try {
    // langgraph.json `encryption`: the project's handlers seal what this server stores, here where its
    // code runs; before the job queue starts, whose crons create runs (the config's env first, as
    // for its graphs: the handlers may read it).
    const graphConfig = readGraphConfig(spec.configPath);
    applyGraphConfigEnv(graphConfig);
    const encryption = await loadEncryptionHandlers(graphConfig, deps.config);
    const boss = await startBoss(deps, { work: true });
    wiring.onStop(() => boss.stop({ graceful: true, timeout: 5000 }));
    deps.boss = boss;
    await registerServedDeployment({ ...deps, viewer: SYSTEM_VIEWER }, spec);
    // Crons moved here from the platform's database come without their schedules.
    await scheduleUnscheduledCrons(deps);
    const runtimeId = randomUUID();
    const { enabled, project } = config.agentServerTracing;
    const sent = config.deploymentTraces;
    // A deployed revision's runs go to the platform's ingest API with its trace key, into that key's
    // project; a local deployment's host stores them itself, in a project named after it unless configured.
    const tracing: RuntimeTracing | undefined = sent
      ? { workspaceId: spec.workspaceId, project: sent.project, ingest: { url: sent.url, apiKey: sent.apiKey } }
      : enabled && spec.tracing
        ? { workspaceId: spec.tracing.workspaceId, project: project ?? spec.tracing.project, store: { databaseUrl: spec.tracing.store.databaseUrl } }
        : undefined;
    // A run created with feedback_keys ends its stream with presigned feedback urls for its trace,
    // made where the trace goes: the platform's API with the trace key, or the host's platform.
    const feedbackUrls: FeedbackUrlMaker | undefined = sent ? ingestApiFeedbackUrls(sent) : tracing ? spec.tracing?.feedbackUrls : undefined;
    // A runtime thread's webhooks given as a path go to the app this server serves (loaded below).
    let customApp: CustomApp | undefined;
    const appLoopback: AppLoopback | undefined = graphConfig.httpApp
      ? async (path, init) => {
          if (!customApp) throw new Error('The HTTP app is not loaded yet');
          return customApp.fetch(new Request(new URL(path, 'http://localhost'), init));
        }
      : undefined;
    const runtimes = await startRuntimeRole(deps, boss, { deploymentId: spec.deploymentId, configPath: spec.configPath, tracing }, spec.tracing?.store.open, appLoopback);
    wiring.onStop(() => runtimes.stop());
    const runtime = runtimes.runtimes[0]!;

    // The project's `new Client()` reaches this server, with requests its own process signs.
    const listeningAt = bindSdkClientsToServer({
      headers: (method, path) => gatewayIdentityHeaders(deps.secrets, runtimeId, { method, path }, { userId: spec.deploymentId, apiKeyId: spec.deploymentId, access: 'write' }),
    });
    customApp = await loadCustomApp(graphConfig, logger);
    const ui = await bundleGraphUis(graphConfig, logger);
    // langgraph.json `auth`: the project's handlers decide who its callers are, here where its code runs.
    const auth = await loadCustomAuth(graphConfig, logger);
    const target = { deploymentId: spec.deploymentId, runtimeId: () => runtimeId, anonymous: spec.anonymous ?? false, dev: spec.dev ?? false, platformKeys: spec.platformKeys };
    // langgraph.json `http.cors`: which browser pages of other origins may call it (any, unless it says).
    const cors = corsPolicy(graphConfig.cors);
    const router = agentServerRouter(deps, target, {
      customApp,
      ui,
      auth,
      encryption,
      cors,
      tracesIngested: spec.tracesIngested,
      feedback: feedbackUrls && tracing ? { project: tracing.project, urls: feedbackUrls } : undefined,
    });
    const app = express();
    app.disable('x-powered-by');
    app.use(router);
    // The thread stream's WebSocket (the gateway forwards upgrades with the caller's signed identity).
    const threadStream = threadStreamUpgrade(deps, target, { auth, encryption, cors });
    // Registered after the server's stop, so it runs before it: open sockets do not hold the server.
    wiring.onStop(async () => threadStream.close());
    const handleUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (threadStream.handle(request, socket, head)) return;
      // Any other upgrade is answered as the plain request it also is.
      if (head.length) socket.unshift(head);
      const response = new ServerResponse(request);
      response.assignSocket(socket as Socket);
      response.once('finish', () => socket.end());
      app(request as Request, response);
    };
    return {
      runtimeId,
      graphIds: runtime.graphIds,
      deps,
      runtime: { where: runtime.where, tracing },
      router,
      handle: (request, response) => app(request as Request, response),
      upgrade: threadStream,
      handleUpgrade,
      listening: listeningAt,
      stopRuntime: (options) => runtimes.stop(options),
      stop: wiring.stop,
    };
  } catch (error) {
    await wiring.stop();
    throw error;
  }
}
