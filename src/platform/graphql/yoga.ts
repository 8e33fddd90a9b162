// graphql-yoga over the Pothos schema: HTTP (GET/POST), SSE subscriptions, GraphiQL (bundled, no CDN),
// and the context factory that authenticates every operation the same way REST does.
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { GraphQLError, parse } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { AppError, appErrorFromDatabase, isAppError } from '../../errors.js';
import { assertDocumentNesting } from '../../limits/graphql-document.js';
import { boundForLog } from '../../logger.js';
import { unstorableTextFromDatabase } from '../../limits/json.js';
import type { Deps } from '../../context.js';
import { FilterError } from '../services/traces/filter.js';
import type { Viewer } from '../../viewer.js';
import { authenticateApiKey } from '../services/tenancy/authentication.service.js';
import type { GraphQLContext } from './builder.js';
import { schema } from './schema.js';

export const GRAPHQL_PATH = '/graphql';

/**
 * Parses with graphql-js's `maxTokens` after checking the document's nesting: a longer or deeper
 * document is a syntax error (400) before the recursive parser sees it.
 */
function limitDocuments(maxTokens: number, maxNesting: number): Plugin {
  return {
    onParse({ setParseFn }) {
      setParseFn((source, options) => {
        assertDocumentNesting(typeof source === 'string' ? source : source.body, maxNesting);
        return parse(source, { ...options, maxTokens });
      });
    },
  };
}

// Longest error message echoed to a client (and so into logs): messages quoting input stay readable.
const MAX_ECHOED_MESSAGE = 1_000;

/** A GraphQL error of the request's own making (parse, validation, variable coercion), no server failure. */
const isClientError = (value: unknown): boolean =>
  value instanceof GraphQLError && (!value.originalError || value.originalError instanceof GraphQLError);

function capMessage(error: GraphQLError): GraphQLError {
  if (error.message.length <= MAX_ECHOED_MESSAGE) return error;
  return new GraphQLError(`${error.message.slice(0, MAX_ECHOED_MESSAGE)}… (${error.message.length} characters, shortened)`, {
    nodes: error.nodes,
    path: error.path,
    extensions: error.extensions,
  });
}

const HTTP_STATUS: Partial<Record<AppError['code'], number>> = { UNAUTHENTICATED: 401, FORBIDDEN: 403, BAD_REQUEST: 400 };

/** Header lookup that works for Fetch Headers and graphql-ws connection params alike (any case). */
export type HeaderSource = (name: string) => string | undefined;

/** Authenticates a GraphQL operation; failures become GraphQL errors with the REST status codes. */
export async function graphqlContext(deps: Deps, header: HeaderSource, anonymousViewer?: Viewer): Promise<GraphQLContext> {
  if (anonymousViewer && !header('x-api-key')) return { ...deps, viewer: anonymousViewer };
  try {
    const viewer = await authenticateApiKey(deps, header('x-api-key'), header('x-tenant-id'));
    return { ...deps, viewer };
  } catch (error) {
    throw toGraphQLError(error) ?? error;
  }
}

export function toGraphQLError(error: unknown): GraphQLError | undefined {
  const original = (error as GraphQLError)?.originalError ?? error;
  const appError = isAppError(error) ? error : isAppError(original) ? original : (appErrorFromDatabase(original) ?? unstorableTextFromDatabase(original));
  if (!(appError instanceof AppError)) return undefined;
  const status = HTTP_STATUS[appError.code];
  return new GraphQLError(appError.message, {
    extensions: {
      code: appError.code,
      ...(Array.isArray(appError.details) ? { issues: appError.details } : {}),
      // Where a filter went wrong, so a client can point at it (a console underlines the position).
      ...(appError instanceof FilterError ? { filter: appError.position } : {}),
      ...(status ? { http: { status } } : {}),
    },
  });
}

/**
 * `anonymousViewer`: who a request without an API key acts as (the local `serve` command); by default
 * such requests are refused with 401.
 */
export function createGraphQLServer(deps: Deps, options: { anonymousViewer?: Viewer } = {}): YogaServerInstance<Partial<GraphQLContext>, GraphQLContext> {
  return createYoga<Partial<GraphQLContext>, GraphQLContext>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    landingPage: false,
    graphiql: {
      title: 'Agent Platform GraphQL',
      // GraphiQL speaks graphql-ws for subscriptions on the same path.
      subscriptionsProtocol: 'WS',
      defaultEditorToolsVisibility: 'headers',
      headers: JSON.stringify({ 'X-Api-Key': '<your API key>' }, null, 2),
      defaultQuery: '{\n  viewer {\n    user { email }\n    organization { name planTier }\n    workspaces { id name }\n  }\n}\n',
    },
    renderGraphiQL,
    // graphql-js parses and validates recursively: a document nested thousands deep overflows the
    // stack. Nesting and tokens (graphql-js's own limit) bound what the parser sees; the depth limit
    // what validation and execution see (introspection, GraphiQL's own deep query, is exempt).
    plugins: [
      limitDocuments(deps.config.graphqlMaxTokens, deps.config.jsonMaxDepth),
      // Reported as a validation error (a 400 like any other), not thrown out of validation.
      maxDepthPlugin({
        n: deps.config.graphqlMaxDepth,
        ignoreIntrospection: true,
        flattenFragments: true,
        propagateOnRejection: false,
        onReject: [(context, error) => context?.reportError(error)],
      }),
    ],
    // graphql-ws operations arrive already authenticated (src/platform/app.ts passes their context in); HTTP
    // requests are authenticated here from their headers.
    context: (initial) =>
      initial.viewer
        ? (initial as GraphQLContext)
        : graphqlContext(deps, (name) => initial.request.headers.get(name) ?? undefined, options.anonymousViewer),
    // Yoga logs the errors of each request, whose messages may quote a variable's value whole: each
    // argument is bounded. An error that is only the client's (GraphQL's own, not a server failure)
    // is no error of the server's.
    logging: {
      debug: (...args) => deps.logger.debug({ args: args.map(boundForLog) }, 'graphql'),
      info: (...args) => deps.logger.info({ args: args.map(boundForLog) }, 'graphql'),
      warn: (...args) => deps.logger.warn({ args: args.map(boundForLog) }, 'graphql'),
      error: (...args) =>
        args.every(isClientError) ? deps.logger.info({ args: args.map(boundForLog) }, 'graphql') : deps.logger.error({ args: args.map(boundForLog) }, 'graphql'),
    },
    maskedErrors: {
      // AppErrors are expected and safe to show; anything else is masked (no stack, SQL or secret).
      maskError(error, message) {
        const shown = toGraphQLError(error);
        if (shown) return shown;
        // Parse, validation and variable-coercion errors are GraphQL's own: safe to show, but a
        // coercion error quotes the variable's value, which can be megabytes: shown shortened.
        if (isClientError(error)) return capMessage(error as GraphQLError);
        deps.logger.error({ err: (error as GraphQLError)?.originalError ?? error }, 'unexpected GraphQL error');
        return new GraphQLError(message, { extensions: { code: 'INTERNAL_SERVER_ERROR' } });
      },
    },
  });
}
