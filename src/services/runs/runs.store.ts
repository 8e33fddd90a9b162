// SQL of agent_runs and run_events: the runs service orchestrates and checks permissions, this file
// talks SQL.
import type pg from 'pg';
import type { Database } from '../../db.js';
import type { MultitaskStrategy, RunKwargs, RunStatus } from './runs.schemas.js';

type Json = Record<string, unknown>;

export type RunRow = {
  id: string;
  deployment_id: string;
  thread_id: string;
  assistant_id: string;
  status: RunStatus;
  metadata: Json;
  kwargs: RunKwargs;
  multitask_strategy: MultitaskStrategy;
  output: unknown;
  attempt: number;
  worker_id: string | null;
  job_id: string | null;
  created_at: Date;
  updated_at: Date;
};

/** A thread's runs, newest first, optionally by status. */
export async function selectThreadRuns(
  db: Pick<Database, 'pool'>,
  threadId: string,
  page: { status?: RunStatus | null; limit: number; offset: number },
): Promise<RunRow[]> {
  const params: unknown[] = [threadId, page.limit, page.offset];
  const byStatus = page.status ? (params.push(page.status), ' AND status = $4') : '';
  const { rows } = await db.pool.query<RunRow>(
    `SELECT * FROM agent_runs WHERE thread_id = $1${byStatus} ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
    params,
  );
  return rows;
}

/** The newest `limit` runs of each thread of a deployment, newest first, in one statement. */
export async function selectRunsOfThreads(db: Pick<Database, 'pool'>, deploymentId: string, threadIds: readonly string[], limit: number): Promise<RunRow[]> {
  const { rows } = await db.pool.query<RunRow & { position: string }>(
    `SELECT * FROM (
       SELECT *, row_number() OVER (PARTITION BY thread_id ORDER BY created_at DESC, id DESC) AS position
         FROM agent_runs WHERE deployment_id = $1 AND thread_id = ANY($2::uuid[])
     ) ranked WHERE position <= $3 ORDER BY created_at DESC, id DESC`,
    [deploymentId, threadIds, limit],
  );
  return rows.map(({ position: _position, ...row }) => row);
}

/** A run's events after `afterSeq`, in order. */
export async function selectEventsAfter(pool: pg.Pool, runId: string, afterSeq: number): Promise<{ seq: number; event: string; data: string }[]> {
  const { rows } = await pool.query<{ seq: number; event: string; data: string }>(
    'SELECT seq, event, data FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq',
    [runId, afterSeq],
  );
  return rows;
}

/**
 * One statement for a batch of stream writes: the runs' outcomes (status, output, ended), their new
 * events, and the NOTIFY signals that tell readers, so readers never see a signal before its event.
 */
export async function writeStreamBatch(
  pool: pg.Pool,
  batch: {
    outcomes: { runId: string; status: string; output: string }[];
    events: { runId: string; seq: number; event: string; data: string }[];
    signals: [channel: string, payload: string][];
  },
): Promise<void> {
  const { outcomes, events, signals } = batch;
  await pool.query(
    `WITH outcome AS (
       UPDATE agent_runs r SET status = o.status, output = o.output::jsonb, updated_at = now(), ended_at = now()
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS o(id, status, output) WHERE r.id = o.id),
     events AS (
       INSERT INTO run_events (run_id, seq, event, data) SELECT * FROM unnest($4::uuid[], $5::int[], $6::text[], $7::text[]))
     SELECT count(pg_notify(channel, payload)) FROM unnest($8::text[], $9::text[]) AS s(channel, payload)`,
    [
      outcomes.map((outcome) => outcome.runId),
      outcomes.map((outcome) => outcome.status),
      outcomes.map((outcome) => outcome.output),
      events.map((event) => event.runId),
      events.map((event) => event.seq),
      events.map((event) => event.event),
      events.map((event) => event.data),
      signals.map(([channel]) => channel),
      signals.map(([, payload]) => payload),
    ],
  );
}

/** Deletes a run and its stream. */
export async function deleteRunAndEvents(db: Pick<Database, 'pool'>, runId: string): Promise<void> {
  await db.pool.query('DELETE FROM agent_runs WHERE id = $1', [runId]);
  await db.pool.query('DELETE FROM run_events WHERE run_id = $1', [runId]);
}
