// buildApp(): Express + graphql-yoga + graphql-ws on one http.Server, with graceful stop.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Router } from 'express';
import { useServer } from 'graphql-ws/use/ws';
import { pinoHttp } from 'pino-http';
import { WebSocketServer } from 'ws';
import { createGraphQLServer, GRAPHQL_PATH, graphqlContext } from './graphql/yoga.js';
import { errorHandler, graphqlBodyErrorHandler } from './rest/middleware/errors.js';
import { restRouter } from './rest/router.js';
import type { Deps } from './services/context.js';
import type { Viewer } from './services/tenancy/viewer.js';

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
   * The surfaces this server answers besides /graphql: the platform's REST router by default; the
   * `serve` command mounts one agent server at the root instead.
   */
  routers?: Router[];
  /**
   * Who a GraphQL request without an API key acts as (the local `serve` command answers without
   * credentials, like `langgraph dev`); by default such requests get 401.
   */
  anonymousViewer?: Viewer;
};

// How long stop() lets open requests (streams, long polls) finish before closing their connections.
const SHUTDOWN_GRACE_MS = 5_000;

export function buildApp(deps: Deps, options: AppOptions = {}): App {
  const yoga = createGraphQLServer(deps, { anonymousViewer: options.anonymousViewer });
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', true);
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id = typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug'),
      serializers: {
        req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
      },
    }),
  );
  // Parsed here so the configured body limit applies to GraphQL too; yoga reads a pre-parsed body.
  // `all`, not `use`: yoga must see the full path, which `use` would strip.
  app.all(GRAPHQL_PATH, express.json({ limit: deps.config.bodyLimit }), (req, res) => yoga(req, res));
  app.use(GRAPHQL_PATH, graphqlBodyErrorHandler);
  for (const router of options.routers ?? [restRouter(deps)]) app.use(router);
  app.use((req, res) => {
    res.status(404).json({ detail: 'Not Found' });
  });
  app.use(errorHandler('fastapi', deps.logger));

  const server = createServer(app);
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
  const wsServer = new WebSocketServer({ server, path: GRAPHQL_PATH });
  const graphqlWs = useServer(
    {
      // onSubscribe puts yoga's enveloped execute/subscribe into rootValue.
      execute: (args) => (args.rootValue as EnvelopedRoot).execute(args),
      subscribe: (args) => (args.rootValue as EnvelopedRoot).subscribe(args),
      onSubscribe: async (ctx, _id, params) => {
        // Credentials may come as connection params (browsers cannot set WebSocket headers) or headers.
        const connectionParams = Object.fromEntries(
          Object.entries(ctx.connectionParams ?? {}).map(([key, value]) => [key.toLowerCase(), typeof value === 'string' ? value : undefined]),
        );
        const headers = ctx.extra.request.headers;
        const authenticated = await graphqlContext(
          deps,
          (name) => connectionParams[name] ?? (headers[name] as string | undefined),
          options.anonymousViewer,
        );
        // Run graphql-ws operations through yoga's envelop pipeline, so masking and plugins apply.
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...authenticated,
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
          resolve(`http://${host.includes(':') ? `[${host}]` : host}:${bound}`);
        });
      });
    },
    async stop() {
      await graphqlWs.dispose();
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
