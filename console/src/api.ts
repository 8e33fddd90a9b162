// GraphQL over fetch: the console's only way to the platform. A dozen lines do what it needs (POST a
// document with the key and workspace headers, surface typed errors) without a client library.
import type { Session } from './session.js';

/** Where a filter went wrong (the platform's extensions.filter). */
export type FilterPosition = { position: number; line: number; column: number; expected: string[] };

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly filter?: FilterPosition,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type GraphQLResponse<T> = { data?: T; errors?: { message: string; extensions?: { code?: string; filter?: FilterPosition } }[] };

export async function gql<T>(session: Session, query: string, variables: Record<string, unknown> = {}, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': session.apiKey };
  if (session.workspaceId) headers['x-tenant-id'] = session.workspaceId;
  const response = await fetch('/graphql', { method: 'POST', headers, body: JSON.stringify({ query, variables }), signal, credentials: 'omit' });
  let body: GraphQLResponse<T>;
  try {
    body = (await response.json()) as GraphQLResponse<T>;
  } catch {
    throw new ApiError(`The platform answered ${response.status} ${response.statusText}.`, 'HTTP_ERROR');
  }
  const first = body.errors?.[0];
  if (first) throw new ApiError(first.message, first.extensions?.code, first.extensions?.filter);
  if (!body.data) throw new ApiError('The platform answered without data.', 'HTTP_ERROR');
  return body.data;
}
