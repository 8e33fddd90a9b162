// buildApp(): Express + graphql-yoga + graphql-ws on one http.Server, with graceful stop.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { GraphQLError } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { GraphQLContext } from './graphql/builder.js';
import { createGraphQLServer, GRAPHQL_PATH, graphqlContext, toGraphQLError } from './graphql/yoga.js';
import { assertStorableText, assertValueDepth } from '../limits/json.js';
import { errorHandler, graphqlBodyErrorHandler } from '../http/errors.js';
import { consoleRouter } from './rest/console.routes.js';
import { graphqlContentType } from '../http/graphql-content-type.js';
import { jsonBody } from '../http/json-body.js';
import { requestLog } from '../http/request-log.js';
import { restRouter } from './rest/router.js';
import { deploymentsGateway, deploymentsGatewayFirst, forwardDeploymentUpgrade, isDeploymentUpgrade } from './rest/deployments-gateway.js';
import type { Deps } from '../context.js';
import type { UpgradeEndpoint } from '../http/upgrade.js';
import type { Viewer } from '../viewer.js';

type EnvelopedRoot = ReturnType<ReturnType<typeof createGraphQLServer>['getEnveloped']>;

export type App = {
  server: Server;
  /** Listens; resolves with the bound URL. */
  start(port: number, host: string): Promise<string>;
  /** Stops accepting, lets in-flight requests finish, closes subscriptions. */
  stop(): Promise<void>;
};

export type AppOptions = {
  /**
   * The surfaces this server answers besides /graphql: the web console and the platform's REST router by default; the
   * `serve` command mounts one agent server at the root instead.
   */
  routers?: RequestHandler[];
  /**
   * Who a GraphQL request without an API key acts as (the local `serve` command answers without
   * credentials, like `langgraph dev`); by default such requests get 401.
   */
  anonymousViewer?: Viewer;
  /**
   * WebSocket endpoints besides /graphql (the agent server's thread stream): each answers the upgrades
   * it owns; /graphql keeps every other one.
   */
  upgrades?: UpgradeEndpoint[];
  /**
   * The agent server's API reference, served at every deployment's url (/deployments/<id>/docs and
   * /openapi.json) by the platform itself: an entry point gives it, the platform importing nothing of
   * the agent server.
   */
  agentServerReference?: RequestHandler;
};

// How long stop() lets open requests (streams, long polls) finish before closing their connections.
const SHUTDOWN_GRACE_MS = 5_000;

export function buildApp(deps: Deps, options: AppOptions = {}): App {
  const yoga = createGraphQLServer(deps, { anonymousViewer: options.anonymousViewer });
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', true);
  // The gateway first: a request it forwards is the deployment's agent server's to log and route
  // (its X-Request-Id comes back from there); passing the platform's request logger, console and
  // routers first was ~10% of the gateway's CPU per run. What it does not forward goes on below.
  // (A deployment's url in its common shape does not even reach Express: deploymentsGatewayFirst.)
  if (!options.routers) app.use('/deployments/:deploymentId', deploymentsGateway(deps));
  app.use(requestLog(deps.logger));
  // Parsed here so the configured body limit applies to GraphQL too; yoga reads a pre-parsed body.
  // `all`, not `use`: yoga must see the full path, which `use` would strip.
  app.all(GRAPHQL_PATH, graphqlContentType, ...jsonBody(deps.config), (req, res) => yoga(req, res));
  app.use(GRAPHQL_PATH, graphqlBodyErrorHandler);
  // The platform's default surfaces: the web console at `/` and the REST APIs.
  for (const router of options.routers ?? [consoleRouter(), restRouter(deps, options.agentServerReference)]) app.use(router);
  app.use((req, res) => {
    res.status(404).json({ detail: 'Not Found' });
  });
  app.use(errorHandler('fastapi', deps.logger));

  // A deployment's url in its common shape is forwarded before Express (deploymentsGatewayFirst).
  const handle = options.routers ? app : deploymentsGatewayFirst(deps, app);
  const server = createServer((req, res) => {
    // Stopping: each answer closes its connection, so the caller's next request opens a new one,
    // which a balancer sends to another process (a kept-alive one would fail when this one closes).
    if (deps.draining) res.setHeader('Connection', 'close');
    handle(req, res);
  });
  // Node answers a request line or headers over its 16 KiB limit (e.g. a usage query naming
  // thousands of workspaces) with a bare 431; say why, in the platform API's error shape.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, detail] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? ['431 Request Header Fields Too Large', 'Request line and headers are too large (16 KiB at most).']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? ['408 Request Timeout', 'The request did not arrive in time.']
          : ['400 Bad Request', 'Malformed HTTP request.'];
    const body = JSON.stringify({ detail });
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  // One message may be as large as one HTTP body (ws's default is 100 MiB). Upgrades are handed over
  // here rather than by attaching ws to the server, so a listen error (a busy port) stays the
  // server's own, reported by start(), instead of reaching graphql-ws as a crash with a stack.
  const wsServer = new WebSocketServer({ noServer: true, path: GRAPHQL_PATH, maxPayload: deps.config.bodyLimitBytes });
  const upgrades = options.upgrades ?? [];
  server.on('upgrade', (request, socket, head) => {
    if (upgrades.some((upgrade) => upgrade.handle(request, socket, head))) return;
    // A WebSocket at a deployment's url is its own agent server's (the gateway forwards it).
    if (isDeploymentUpgrade(request.url)) return void forwardDeploymentUpgrade(deps, request, socket, head);
    wsServer.handleUpgrade(request, socket, head, (client) => wsServer.emit('connection', client, request));
  });
  // Each connection's credentials, accepted at connection_init (see onConnect).
  const connectionCredentials = new WeakMap<object, (name: string) => string | undefined>();
  const authenticate = (credentials: (name: string) => string | undefined) => graphqlContext(deps, credentials, options.anonymousViewer);
  const graphqlWs = useServer(
    {
      // onSubscribe puts yoga's enveloped execute/subscribe into rootValue.
      execute: (args) => (args.rootValue as EnvelopedRoot).execute(args),
      subscribe: (args) => (args.rootValue as EnvelopedRoot).subscribe(args),
      // A connection is authenticated at connection_init: a missing, unknown or revoked key is refused
      // there (graphql-ws closes with 4403 Forbidden), never after the acknowledgement. Each subscribe
      // authenticates its key again, so a key revoked while the socket is open gets no new operation.
      onConnect: async (ctx) => {
        // Credentials may come as connection params (browsers cannot set WebSocket headers) or headers.
        const connectionParams = Object.fromEntries(
          Object.entries(ctx.connectionParams ?? {}).map(([key, value]) => [key.toLowerCase(), typeof value === 'string' ? value : undefined]),
        );
        const headers = ctx.extra.request.headers;
        const credentials = (name: string) => connectionParams[name] ?? (headers[name] as string | undefined);
        try {
          await authenticate(credentials);
          connectionCredentials.set(ctx, credentials);
          return true;
        } catch (error) {
          if (error instanceof GraphQLError) return false;
          throw error;
        }
      },
      onSubscribe: async (ctx, _id, params) => {
        const credentials = connectionCredentials.get(ctx);
        if (!credentials) return [new GraphQLError('Unauthenticated.', { extensions: { code: 'UNAUTHENTICATED' } })];
        let authenticated: GraphQLContext;
        try {
          authenticated = await authenticate(credentials);
        } catch (error) {
          // Revoked since connection_init (or its workspace gone): an `error` message for this operation.
          if (error instanceof GraphQLError) return [error];
          throw error;
        }
        // Run graphql-ws operations through yoga's envelop pipeline, so masking and plugins apply.
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...authenticated,
          params,
        });
        // Syntax errors and limits (tokens, depth, nesting and text of variables) come back as an
        // `error` message, not a close.
        let document;
        try {
          assertValueDepth(params.variables ?? {}, deps.config.jsonMaxDepth, ['variables']);
          assertStorableText(params.variables ?? {}, ['variables']);
          document = parse(params.query);
        } catch (error) {
          const shown = error instanceof GraphQLError ? error : toGraphQLError(error);
          if (shown) return [shown];
          throw error;
        }
        const args = {
          schema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe },
        };
        const errors = validate(args.schema, args.document);
        if (errors.length) return errors;
        return args;
      },
    },
    wsServer,
  );

  return {
    server,
    start(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const { port: bound } = server.address() as AddressInfo;
          // Reachable from this machine's deployments at the loopback address when bound to every interface.
          const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
          deps.apiUrl = `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${bound}`;
          resolve(`http://${host.includes(':') ? `[${host}]` : host}:${bound}`);
        });
      });
    },
    async stop() {
      // First, for AGENT_PLATFORM_SHUTDOWN_DRAIN_SECONDS: still serving, but not ready (/ok 503) and
      // closing each connection after its answer, so balancers and clients move to other processes
      // before this one stops accepting connections.
      deps.draining = true;
      if (deps.config.shutdownDrainSeconds > 0) await new Promise((resolve) => setTimeout(resolve, deps.config.shutdownDrainSeconds * 1000));
      await graphqlWs.dispose();
      for (const upgrade of upgrades) upgrade.close();
      for (const client of wsServer.clients) client.terminate();
      wsServer.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // Streams (SSE runs, GraphQL subscriptions over SSE) never end on their own.
        setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref();
      });
    },
  };
}
