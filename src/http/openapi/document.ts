// OpenAPI 3.1 documents built from the zod schemas the services validate with (z.toJSONSchema, input
// side), so the reference cannot drift from what the server accepts. Each surface lists its operations
// (agent-server.operations.ts, openapi.operations.ts): a new routes file joins its surface's list in
// one line, and test/platform/rest/openapi.test.ts fails for any mounted route the list leaves out.
import { z } from 'zod';

type JsonSchema = Record<string, unknown>;
type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export type Operation = {
  method: HttpMethod;
  /** The path as the express router mounts it (`/threads/:threadId`, optional `{/:namespace}`). */
  path: string;
  summary: string;
  tag: string;
  /** The zod schema the service parses the JSON body with. */
  body?: z.ZodType;
  /** The zod object schema of the query string. */
  query?: z.ZodObject;
  /** What a success answers: JSON (the default), a server-sent event stream, plain text or nothing. */
  response?: { status?: number; kind?: 'json' | 'sse' | 'text' | 'empty' | 'html'; description?: string };
};

export type Surface = {
  title: string;
  version: string;
  description: string;
  tags: { name: string; description: string }[];
  operations: Operation[];
  /** How callers authenticate, if they must: an API key in a header. */
  apiKeyHeader?: string;
};

/** A JSON Schema (2020-12, as OpenAPI 3.1 takes it) of what the schema accepts as input. */
const inputSchema = (schema: z.ZodType): JsonSchema => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return rest;
};

/**
 * `/threads/:threadId/x{/:ns}` → the OpenAPI paths it stands for: `/threads/{thread_id}/x` and
 * `/threads/{thread_id}/x/{ns}`. Parameters are named in snake_case, as LangGraph's published
 * OpenAPI names them, so clients generated from either document agree.
 */
export function openApiPaths(expressPath: string): string[] {
  const optional = /\{([^{}]*)\}/.exec(expressPath);
  if (optional) {
    const without = expressPath.replace(optional[0], '');
    const withIt = expressPath.replace(optional[0], optional[1]!);
    return [...openApiPaths(without), ...openApiPaths(withIt)];
  }
  return [expressPath.replace(/:(\w+)/g, (_match, name: string) => `{${name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)}}`) || '/'];
}

function responses(operation: Operation): JsonSchema {
  const { status = 200, kind = 'json', description = 'Success' } = operation.response ?? {};
  const content =
    kind === 'json'
      ? { 'application/json': { schema: {} } }
      : kind === 'sse'
        ? { 'text/event-stream': { schema: { type: 'string' } } }
        : kind === 'text'
          ? { 'text/plain': { schema: { type: 'string' } } }
          : kind === 'html'
            ? { 'text/html': { schema: { type: 'string' } } }
            : undefined;
  return {
    [String(status)]: { description, ...(content ? { content } : {}) },
    '4XX': { description: 'Bad input, unknown resource or missing permission, with a message saying which.' },
  };
}

function parameters(path: string, operation: Operation): JsonSchema[] {
  const inPath = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  const query = operation.query ? inputSchema(operation.query) : undefined;
  const required = new Set((query?.required as string[] | undefined) ?? []);
  const inQuery = Object.entries((query?.properties as Record<string, JsonSchema> | undefined) ?? {}).map(([name, schema]) => ({
    name,
    in: 'query',
    required: required.has(name),
    schema,
  }));
  return [...inPath, ...inQuery];
}

/** The OpenAPI 3.1 document of a surface; `serverUrl` is where it is mounted (`/`, `/deployments/<id>`). */
export function openApiDocument(surface: Surface, serverUrl: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of surface.operations) {
    for (const path of openApiPaths(operation.path)) {
      const params = parameters(path, operation);
      const method = operation.method;
      (paths[path] ??= {})[method] = {
        tags: [operation.tag],
        summary: operation.summary,
        operationId: `${method}${path.replace(/[^A-Za-z0-9]+(\w?)/g, (_match, next: string) => next.toUpperCase())}`,
        ...(params.length ? { parameters: params } : {}),
        ...(operation.body ? { requestBody: { required: true, content: { 'application/json': { schema: inputSchema(operation.body) } } } } : {}),
        responses: responses(operation),
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: surface.title, version: surface.version, description: surface.description },
    servers: [{ url: serverUrl || '/' }],
    tags: surface.tags,
    paths,
    ...(surface.apiKeyHeader
      ? {
          components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: surface.apiKeyHeader } } },
          security: [{ apiKey: [] }],
        }
      : {}),
  };
}
