// Live data: GraphQL subscriptions over graphql-ws on the same /graphql path. graphql-ws's client is
// dependency-free (about 4 kB gzipped) and is the protocol the platform serves; the key travels in the
// connection's init message, never in the socket's URL. One socket per signed-in key and workspace,
// opened on the first subscription and closed a few seconds after the last one ends.
import { type Client, createClient } from 'graphql-ws';
import { useEffect, useRef } from 'preact/hooks';
import { ApiError } from './api.js';
import type { Session } from './session.js';

let current: { session: string; client: Client } | undefined;

function clientFor(session: Session): Client {
  const key = `${session.apiKey}\n${session.workspaceId ?? ''}`;
  if (current?.session !== key) {
    void current?.client.dispose();
    const params: Record<string, string> = { 'X-Api-Key': session.apiKey };
    if (session.workspaceId) params['X-Tenant-Id'] = session.workspaceId;
    current = {
      session: key,
      client: createClient({
        url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
        connectionParams: params,
        lazy: true,
        lazyCloseTimeout: 3_000,
        retryAttempts: 5,
      }),
    };
  }
  return current.client;
}

type GraphQLErrorLike = { message: string; extensions?: { code?: string } };

function toApiError(error: unknown): ApiError {
  if (Array.isArray(error) && error.length > 0) {
    const first = error[0] as GraphQLErrorLike;
    return new ApiError(first.message, first.extensions?.code);
  }
  if (error instanceof Error) return new ApiError(error.message, undefined);
  // A CloseEvent: 4403 is graphql-ws's "Forbidden" (the key was refused at connection_init).
  const close = error as { code?: number; reason?: string };
  if (close?.code === 4403) return new ApiError('That API key was not accepted.', 'UNAUTHENTICATED');
  return new ApiError(`The live connection closed${close?.reason ? `: ${close.reason}` : ''}.`, 'HTTP_ERROR');
}

export type LiveHandlers<T> = { next: (data: T) => void; error?: (error: ApiError) => void; complete?: () => void };

/** Subscribes to one operation; returns the function that ends it. */
export function subscribe<T>(session: Session, query: string, variables: Record<string, unknown>, handlers: LiveHandlers<T>): () => void {
  return clientFor(session).subscribe<T>(
    { query, variables },
    {
      next: (result) => {
        if (result.errors?.length) handlers.error?.(toApiError(result.errors));
        else if (result.data) handlers.next(result.data as T);
      },
      error: (error) => handlers.error?.(toApiError(error)),
      complete: () => handlers.complete?.(),
    },
  );
}

/**
 * A subscription for as long as the component shows it and its inputs stay the same (`query` null:
 * none). The handlers may change on every render: the latest ones are called.
 */
export function useSubscription<T>(session: Session, query: string | null, variables: Record<string, unknown>, handlers: LiveHandlers<T>): void {
  const latest = useRef(handlers);
  latest.current = handlers;
  const key = JSON.stringify([session.apiKey, session.workspaceId, query, variables]);
  useEffect(() => {
    if (query === null) return;
    return subscribe<T>(session, query, variables, {
      next: (data) => latest.current.next(data),
      error: (error) => latest.current.error?.(error),
      complete: () => latest.current.complete?.(),
    });
  }, [key]);
}
