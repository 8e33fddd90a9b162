// Following runs: waiting for a run to end (runs/wait, join, cancel with wait), its result, and the
// events of a run or of a thread's runs as they come (the same iterable feeds SSE and the GraphQL
// subscription). A run's stream is its run_events plus the bus's signals (run-stream.ts), so a reader
// follows it from whichever process it is in.
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import type { AuthorizedContext } from '../custom-auth/custom-auth.js';
import { selectThreadValues } from '../threads/threads.store.js';
import { openJson } from '../encryption/at-rest.js';
import { assertThread, findRunRow, getRun, toRun } from './run-reads.service.js';
import { followRunEvents, isTerminalStatus, type RunEvent, type RunStreamSignal } from './run-stream.js';
import type { RunStatus } from './runs.schemas.js';
import * as store from './runs.store.js';
import type { Run } from '../../../contracts/agent-server-api.js';

/** Resolves with the run once it has ended (or undefined if it was deleted, e.g. rolled back). */
export async function waitForRun(ctx: AgentServerContext, runId: string, signal?: AbortSignal): Promise<Run | undefined> {
  return withRunSignals(ctx, runId, signal, async (signals) => {
    const row = await findRunRow(ctx, runId);
    if (!row || isTerminalStatus(row.status)) return row && (await toRun(ctx, row));
    return followToEnd(ctx, await toRun(ctx, row), signals);
  });
}

/** Runs `work` with the run's end signals, subscribed to until it returns or `signal` aborts. */
export async function withRunSignals<T>(
  ctx: AgentServerContext,
  runId: string,
  signal: AbortSignal | undefined,
  work: (signals: AsyncGenerator<RunStreamSignal>) => Promise<T>,
): Promise<T> {
  const signals = ctx.events.subscribe('runs.stream', { key: runId, signal, resync: { runId, resync: true } });
  try {
    return await work(signals);
  } finally {
    // Unsubscribes at once (the subscription's return() does, before its generator has finished).
    void signals.return(undefined);
  }
}

/** Follows a run not yet ended (as of `run`) to its end through signals subscribed to before `run` was read. */
export async function followToEnd(ctx: AgentServerContext, run: Run, signals: AsyncGenerator<RunStreamSignal>): Promise<Run | undefined> {
  for await (const event of signals) {
    // The bus was away and may have missed its end: the row says.
    if (event.resync) {
      const row = await findRunRow(ctx, run.runId);
      if (!row || isTerminalStatus(row.status)) return row && (await toRun(ctx, row));
      continue;
    }
    if (event.status && isTerminalStatus(event.status)) {
      // Small results ride on the final signal; larger ones are read from the row.
      if (event.output !== undefined) return { ...run, status: event.status as RunStatus, output: JSON.parse(event.output) };
      break;
    }
  }
  const row = await findRunRow(ctx, run.runId);
  // The signals ended with the run still going: this server is stopping (its run goes on, on the
  // runtime that takes over; one handing over waits a while for the runs it follows first). Its end
  // is not known here: say so rather than answer an unfinished run.
  if (row && !isTerminalStatus(row.status)) throw new AppError('UNAVAILABLE', 'This agent server is stopping before the run ended; the run goes on: join it again.');
  return row && (await toRun(ctx, row));
}

/**
 * What runs/wait and join answer: the run's last `values` (or `{__error__}` when it failed); for a run
 * that produced none, the thread's values.
 */
export async function runResult(ctx: AgentServerContext, run: Run | undefined, threadId: string | null): Promise<unknown> {
  if (run?.output != null) return run.output;
  if (!threadId) return null;
  return openJson(ctx.config, { model: 'thread', field: 'values' }, await selectThreadValues(ctx.db, threadId));
}

/** Waits for a thread's run to end and returns its result (GET …/runs/{id}/join). */
export async function joinRun(ctx: AuthorizedContext, threadId: string, runId: string, signal?: AbortSignal): Promise<unknown> {
  await assertThread(ctx, threadId, 'read');
  const run = await getRun(ctx, threadId, runId);
  const done = await waitForRun(ctx, run.runId, signal);
  return runResult(ctx, done, threadId);
}

/**
 * A run's stream events after `afterSeq` (from Last-Event-ID), live until it ends. `modes` narrows to
 * some of the run's stream modes. The same iterable feeds SSE and the GraphQL subscription.
 */
export function streamRun(
  ctx: AgentServerContext,
  runId: string,
  options: { afterSeq?: number; modes?: string[]; signal?: AbortSignal } = {},
): AsyncIterable<RunEvent> {
  return followRunEvents(ctx, runId, {
    ...options,
    readStatus: async () => (await findRunRow(ctx, runId))?.status,
  });
}

/** Events of a thread's current run and every later one, until `signal` aborts (GET /threads/{id}/stream). */
export async function* streamThread(
  ctx: AuthorizedContext,
  threadId: string,
  options: { modes?: string[]; signal?: AbortSignal; lastEventId?: string } = {},
): AsyncGenerator<RunEvent & { runId: string }> {
  await assertThread(ctx, threadId, 'read');
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const statuses = ctx.events.subscribe('runs.status', { key: threadId, signal: stop.signal });
  const seen = new Set<string>();
  const [resumeRun, resumeSeq] = (options.lastEventId ?? '').split(':');
  try {
    // Under custom auth the caller's access is checked again before each later run: one who lost it
    // (the thread's metadata changed, their permission was withdrawn) gets an error event, and the end.
    const denied = async (): Promise<AppError | undefined> => {
      if (!ctx.auth || !seen.size) return undefined;
      return assertThread(ctx, threadId, 'read').then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof AppError) return error;
          throw error;
        },
      );
    };
    const follow = async function* (runId: string, afterSeq = 0): AsyncGenerator<RunEvent & { runId: string }, boolean> {
      const refusal = await denied();
      if (refusal) {
        yield { runId, seq: 0, event: 'error', data: JSON.stringify({ error: refusal.code === 'NOT_FOUND' ? 'NotFound' : 'Forbidden', message: refusal.message }) };
        return false;
      }
      seen.add(runId);
      for await (const event of streamRun(ctx, runId, { afterSeq, modes: options.modes, signal: stop.signal })) yield { ...event, runId };
      return true;
    };
    if (resumeRun && isUuid(resumeRun) && !(yield* follow(resumeRun, Number(resumeSeq) || 0))) return;
    // Runs not finished yet, oldest first; then whichever start later.
    for (;;) {
      const inflight = await store.selectThreadRunIdsInFlight(ctx.db, threadId);
      const next = inflight.find((id) => !seen.has(id));
      if (next) {
        if (!(yield* follow(next))) return;
        continue;
      }
      const { value, done } = await statuses.next();
      if (done) return;
      if (!seen.has(value.runId) && !isTerminalStatus(value.status) && !(yield* follow(value.runId))) return;
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stop.abort();
  }
}
