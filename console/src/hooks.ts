// Data loading for pages: one request per change of its inputs, the previous one aborted.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, gql } from './api.js';
import type { Session } from './session.js';

export type Loaded<T> = { data: T | null; error: ApiError | null; loading: boolean };

export function useGql<T>(session: Session, query: string | null, variables: Record<string, unknown> = {}): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: null, error: null, loading: query !== null });
  const key = JSON.stringify([session.apiKey, session.workspaceId, query, variables]);
  useEffect(() => {
    if (query === null) return;
    const controller = new AbortController();
    setState((previous) => ({ data: previous.data, error: null, loading: true }));
    gql<T>(session, query, variables, controller.signal).then(
      (data) => setState({ data, error: null, loading: false }),
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setState({ data: null, error: error instanceof ApiError ? error : new ApiError(String(error), undefined), loading: false });
      },
    );
    return () => controller.abort();
  }, [key]);
  return state;
}
