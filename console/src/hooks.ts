// Data loading for pages: one request per change of its inputs, the previous one aborted.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, gql } from './api.js';
import type { Session } from './session.js';

export type Loaded<T> = { data: T | null; error: ApiError | null; loading: boolean; reload: () => void };

export function useGql<T>(session: Session, query: string | null, variables: Record<string, unknown> = {}): Loaded<T> {
  const [state, setState] = useState<Omit<Loaded<T>, 'reload'>>({ data: null, error: null, loading: query !== null });
  // Bumped by reload(): the same inputs asked again (the data shown meanwhile stays).
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
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
  }, [key, generation]);
  return { ...state, reload };
}

export type Submission = { busy: boolean; error: ApiError | null; submit: (event: Event) => Promise<void> };

/**
 * A form's submission: `busy` while `action` runs, `error` what it threw last (as an ApiError; the
 * action may throw one worded for its form), cleared at the next submit.
 */
export function useSubmit(action: () => Promise<void>): Submission {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (caught) {
      setError(caught instanceof ApiError ? caught : new ApiError(String(caught), undefined));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, submit };
}
