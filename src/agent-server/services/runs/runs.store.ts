// SQL of agent_runs and run_events: the runs service orchestrates and checks permissions, this file
// talks SQL.
import type pg from 'pg';
import type { Database } from '../../../db.js';
import type { AtRestCipher } from '../encryption/at-rest.js';
import { CHECKPOINT_SCHEMA } from '../../../database/checkpoint-schema.js';
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
  cancel_reason: string | null;
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

/** A run's events after `afterSeq`, in order (their data opened with `cipher` when stored encrypted). */
export async function selectEventsAfter(pool: pg.Pool, runId: string, afterSeq: number, cipher?: AtRestCipher): Promise<{ seq: number; event: string; data: string }[]> {
  const { rows } = await pool.query<{ seq: number; event: string; data: string }>(
    'SELECT seq, event, data FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq',
    [runId, afterSeq],
  );
  return cipher ? Promise.all(rows.map(async (row) => ({ ...row, data: await cipher.openText(row.data, { model: 'run', field: 'events' }) }))) : rows;
}

/**
 * A run's queue job, completed by the statement that records the run's outcome: `update` is pg-boss's
 * completion UPDATE with its own parameters `$1` (queue name), `$2` (job ids) and `$3` (output, null),
 * as RunQueue.completionUpdate captures it.
 */
export type JobCompletion = { update: string; queue: string; jobId: string };

/**
 * One statement for a batch of stream writes: the runs' outcomes (status, output, ended), their new
 * events, the NOTIFY signals that tell readers, so readers never see a signal before its event, and
 * the queue jobs of runs that end here (a job completed in its own statement is one more round trip
 * per run, and completing it here means it is done exactly when the outcome is stored).
 */
export async function writeStreamBatch(
  pool: pg.Pool,
  batch: {
    outcomes: { runId: string; status: string; output: string }[];
    events: { runId: string; seq: number; event: string; data: string }[];
    signals: [channel: string, payload: string][];
    jobs?: JobCompletion[];
  },
): Promise<void> {
  const { outcomes, events, signals, jobs = [] } = batch;
  const values: unknown[] = [];
  // One completion per queue (and statement shape), its parameters renumbered after the batch's nine.
  const byQueue = new Map<string, { update: string; queue: string; jobIds: string[] }>();
  for (const job of jobs) {
    const key = `${job.queue}\n${job.update}`;
    const group = byQueue.get(key) ?? { update: job.update, queue: job.queue, jobIds: [] };
    group.jobIds.push(job.jobId);
    byQueue.set(key, group);
  }
  const completions = [...byQueue.values()].map((group, i) => {
    const base = 9 + values.length;
    values.push(group.queue, group.jobIds, null);
    return `, completed_${i} AS (${group.update.replace(/\$([123])\b/g, (_, n: string) => `$${base + Number(n)}`)})`;
  });
  await pool.query(
    `WITH outcome AS (
       UPDATE agent_runs r SET status = o.status, output = o.output::jsonb, updated_at = now(), ended_at = now()
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS o(id, status, output) WHERE r.id = o.id),
     events AS (
       INSERT INTO run_events (run_id, seq, event, data) SELECT * FROM unnest($4::uuid[], $5::int[], $6::text[], $7::text[]))${completions.join('')}
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
      ...values,
    ],
  );
}

/** Deletes a run and its stream. */
export async function deleteRunAndEvents(db: Pick<Database, 'pool'>, runId: string): Promise<void> {
  await db.pool.query('DELETE FROM agent_runs WHERE id = $1', [runId]);
  await db.pool.query('DELETE FROM run_events WHERE run_id = $1', [runId]);
}

/** One run of a deployment. */
export async function selectRun(db: Pick<Database, 'pool'>, runId: string, deploymentId: string): Promise<RunRow | undefined> {
  const { rows } = await db.pool.query<RunRow>('SELECT * FROM agent_runs WHERE id = $1 AND deployment_id = $2', [runId, deploymentId]);
  return rows[0];
}

/**
 * The deployment's pending runs that have no job (runs moved here from the platform's database by an
 * earlier version's upgrade come without one, and with when it was due: `kwargs.start_after`; a run
 * created here always has its job), oldest first.
 */
export async function selectPendingRunsWithoutJob(
  db: Pick<Database, 'pool'>,
  deploymentId: string,
): Promise<{ id: string; thread_id: string; temporary: boolean; due_in_seconds: number | null }[]> {
  const { rows } = await db.pool.query<{ id: string; thread_id: string; temporary: boolean; due_in_seconds: number | null }>(
    `SELECT id, thread_id, coalesce((kwargs->>'temporary')::boolean, false) AS temporary,
            ceil(extract(epoch FROM (kwargs->>'start_after')::timestamptz - now()))::int AS due_in_seconds FROM agent_runs
      WHERE deployment_id = $1 AND status = 'pending' AND job_id IS NULL ORDER BY created_at, id`,
    [deploymentId],
  );
  return rows;
}

/** Gives a pending run without a job the job id about to be sent (in the caller's transaction); whether it was still without one. */
export async function claimRunForJob(client: pg.PoolClient, runId: string, jobId: string): Promise<boolean> {
  const { rowCount } = await client.query("UPDATE agent_runs SET job_id = $2 WHERE id = $1 AND status = 'pending' AND job_id IS NULL", [runId, jobId]);
  return rowCount === 1;
}

export type NewRun = {
  runId: string;
  deploymentId: string;
  threadId: string;
  assistantId: string;
  metadata: Json;
  /** The run's kwargs, serialised. */
  kwargs: string;
  strategy: MultitaskStrategy;
  jobId: string;
  /** The run keeps its thread: the thread turns busy and keeps the run's config. */
  stateful: boolean;
  /** What the run leaves in its thread's config, serialised. */
  threadConfig: string;
  /**
   * The metadata (as stored) of the thread the run creates when its thread does not exist yet
   * (`if_not_exists: create`), in the run's statement; unset, a stateful run needs its thread to exist.
   */
  newThreadMetadata?: Json;
};

/**
 * Inserts a run in one statement: the assistant check (no row: no such assistant here), the thread
 * turning busy with its graph and assistant noted, the run itself, and (given `jobInsert`, pg-boss's
 * insert with the job's payload as `$1`) its job and (given `notify`, with the job) the runtimes' wake-up
 * and the run's `pending` status.
 * Undefined when no run was written (unknown assistant, or for a stateful run, unknown thread).
 * Only what the database chose comes back (the times): the rest of the row is what the caller sent,
 * and reading the whole row back (17 columns, its JSON parsed again) was ~7% of the api thread's CPU
 * per runs/wait at `serve`.
 */
export async function insertRun(
  client: pg.Pool | pg.PoolClient,
  run: NewRun,
  options: { jobInsert?: { text: string; payload: string }; notify?: [channel: string, payload: string][] } = {},
): Promise<{ createdAt: Date; updatedAt: Date; jobRows?: number } | undefined> {
  const values: unknown[] = [run.runId, run.deploymentId, run.threadId, run.assistantId, run.metadata, run.kwargs, run.strategy, run.jobId, run.stateful, run.threadConfig];
  const { jobInsert, notify = [] } = options;
  if (jobInsert) {
    values.push(jobInsert.payload);
    if (notify.length) values.push(notify.map(([channel]) => channel), notify.map(([, payload]) => payload));
  }
  const newThreadMetadataParam = run.newThreadMetadata !== undefined ? values.push(run.newThreadMetadata) : undefined;
  const text = insertRunStatement(jobInsert?.text, jobInsert !== undefined && notify.length > 0, newThreadMetadataParam);
  const { rows } = await client.query<{ created_at: Date; updated_at: Date; job_rows?: number }>(text, values);
  if (!rows[0]) return undefined;
  return { createdAt: rows[0].created_at, updatedAt: rows[0].updated_at, jobRows: rows[0].job_rows };
}

// insertRun's statements, built once per job insert text (one per queue) and shape: the same text
// object for every run, so naming it as a prepared statement (prepared-statements.ts) does not hash
// its ~5 KB again, nor is it put together again, per run.
const insertRunStatements = new Map<string, Map<string, string>>();

/**
 * insertRun's statement: with pg-boss's job insert `jobInsert` (its payload `$11`), and with it the
 * NOTIFYs of `$12`, `$13` when `notifies`; creating the thread when it does not exist yet, with the
 * metadata of parameter `newThreadMetadataParam` when given.
 */
function insertRunStatement(jobInsert: string | undefined, notifies: boolean, newThreadMetadataParam: number | undefined): string {
  let built = insertRunStatements.get(jobInsert ?? '');
  const shape = `${notifies}/${newThreadMetadataParam}`;
  const cached = built?.get(shape);
  if (cached !== undefined) return cached;
  // The thread keeps the config its runs were given (over its assistant's), as the reference does:
  // state reads and writes build a factory graph with it. What a run leaves on its thread, from the
  // thread's config and metadata before it: an existing thread's (`t`) or a new empty one's (`nt`).
  const configAfter = (config: string) => `(SELECT a.config FROM a) || ${config} || $10::jsonb || jsonb_build_object('configurable',
                      coalesce((SELECT a.config->'configurable' FROM a), '{}') || coalesce(${config}->'configurable', '{}') || ($10::jsonb->'configurable'))`;
  const metadataAfter = (metadata: string) => `${metadata} || jsonb_build_object('graph_id', (SELECT graph_id FROM a), 'assistant_id', $4::text)`;
  let text = `WITH a AS (SELECT id, graph_id, config FROM agent_assistants WHERE deployment_id = $2 AND id = $4),
            t AS (UPDATE agent_threads SET status = 'busy', updated_at = now(), metadata = ${metadataAfter('metadata')}, config = ${configAfter('config')}
                  WHERE $9 AND id = $3 AND deployment_id = $2 AND EXISTS (SELECT 1 FROM a) RETURNING id)`;
  let threadWritten = 'EXISTS (SELECT 1 FROM t)';
  if (newThreadMetadataParam !== undefined) {
    // An id taken meanwhile, or by another deployment's thread, writes nothing here: no run row, and
    // the caller takes the slower path.
    text += `,
            nt AS (INSERT INTO agent_threads (id, deployment_id, status, metadata, config, updated_at)
                  SELECT $3, $2, 'busy', ${metadataAfter(`$${newThreadMetadataParam}::jsonb`)}, ${configAfter(`'{}'::jsonb`)}, now()
                  WHERE $9 AND EXISTS (SELECT 1 FROM a) AND NOT EXISTS (SELECT 1 FROM t)
                  ON CONFLICT (id) DO NOTHING RETURNING id)`;
    threadWritten += ' OR EXISTS (SELECT 1 FROM nt)';
  }
  text += `,
            r AS (INSERT INTO agent_runs (id, deployment_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, job_id, updated_at)
                  SELECT $1, $2, $3, a.id, 'pending', $5, $6, $7, $8, now() FROM a WHERE NOT $9 OR ${threadWritten}
                  RETURNING created_at, updated_at)`;
  let select = 'SELECT r.created_at, r.updated_at';
  if (jobInsert !== undefined) {
    // No run row (unknown assistant): no job either.
    text += `, j AS (${jobInsert.replaceAll('$1::text::json', '(SELECT $11::text FROM r)::text::json')})`;
    select += ', (SELECT count(*) FROM j)::int AS job_rows';
    if (notifies) select += ', (SELECT count(pg_notify(channel, payload)) FROM unnest($12::text[], $13::text[]) AS s(channel, payload)) AS notified';
  }
  const statement = `${text} ${select} FROM r`;
  if (!built) {
    if (insertRunStatements.size >= 64) insertRunStatements.clear();
    insertRunStatements.set(jobInsert ?? '', (built = new Map()));
  }
  built.set(shape, statement);
  return statement;
}

/**
 * Locks a thread's row (serialising run creation on it) and reads its runs pending or running,
 * oldest first. Undefined when the deployment has no such thread.
 */
export async function lockThreadRunsInFlight(
  client: pg.PoolClient,
  threadId: string,
  deploymentId: string,
): Promise<{ id: string; status: RunStatus }[] | undefined> {
  const locked = await client.query('SELECT 1 FROM agent_threads WHERE id = $1 AND deployment_id = $2 FOR UPDATE', [threadId, deploymentId]);
  if (!locked.rowCount) return undefined;
  // A statement of its own, after the lock: its snapshot then holds the runs of whoever had the lock
  // before (read in the locking statement, they were missing from its snapshot, taken before it waited).
  const { rows } = await client.query<{ id: string; status: RunStatus }>(
    `SELECT id, status FROM agent_runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY created_at`,
    [threadId],
  );
  return rows;
}

/**
 * Ends the pending ones of these runs: deleted (rollback) or `interrupted` for `reason`; records the
 * reason on the running ones, whose runtime ends them when it stops the graph. Returns those it ended.
 */
export async function endPendingRuns(
  db: Pick<Database, 'pool'>,
  runIds: string[],
  action: 'interrupt' | 'rollback',
  reason: string,
): Promise<{ id: string; thread_id: string }[]> {
  // The first reason given is the one kept: a run cancelled twice was stopped by the first.
  await db.pool.query(`UPDATE agent_runs SET cancel_reason = $2 WHERE id = ANY($1::uuid[]) AND status = 'running' AND cancel_reason IS NULL`, [runIds, reason]);
  const { rows } =
    action === 'rollback'
      ? await db.pool.query<{ id: string; thread_id: string }>(`DELETE FROM agent_runs WHERE id = ANY($1::uuid[]) AND status = 'pending' RETURNING id, thread_id`, [runIds])
      : await db.pool.query<{ id: string; thread_id: string }>(
          `UPDATE agent_runs SET status = 'interrupted', cancel_reason = $2, updated_at = now(), ended_at = now()
           WHERE id = ANY($1::uuid[]) AND status = 'pending' RETURNING id, thread_id`,
          [runIds, reason],
        );
  return rows;
}

/** Turns busy threads idle once none of their runs is pending or running. */
export async function idleThreadsWithoutRunsInFlight(db: Pick<Database, 'pool'>, threadIds: string[]): Promise<void> {
  await db.pool.query(
    `UPDATE agent_threads t SET status = 'idle', updated_at = now() WHERE id = ANY($1::uuid[]) AND status = 'busy'
     AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.thread_id = t.id AND r.status IN ('pending', 'running'))`,
    [threadIds],
  );
}

/** Ids of runs of a deployment, by ids (optionally on one thread), by thread and status, or by status alone. */
export async function selectRunIds(
  db: Pick<Database, 'pool'>,
  deploymentId: string,
  where: { runIds: string[]; threadId?: string } | { threadId: string; statuses: string[] } | { statuses: string[] },
): Promise<string[]> {
  let result: pg.QueryResult<{ id: string }>;
  if ('runIds' in where) {
    result = await db.pool.query<{ id: string }>(
      `SELECT id FROM agent_runs WHERE id = ANY($1::uuid[]) AND deployment_id = $2 ${where.threadId ? 'AND thread_id = $3' : ''}`,
      where.threadId ? [where.runIds, deploymentId, where.threadId] : [where.runIds, deploymentId],
    );
  } else if ('threadId' in where) {
    result = await db.pool.query<{ id: string }>('SELECT id FROM agent_runs WHERE thread_id = $1 AND deployment_id = $2 AND status = ANY($3::text[])', [
      where.threadId,
      deploymentId,
      where.statuses,
    ]);
  } else {
    result = await db.pool.query<{ id: string }>('SELECT id FROM agent_runs WHERE deployment_id = $1 AND status = ANY($2::text[])', [deploymentId, where.statuses]);
  }
  return result.rows.map((row) => row.id);
}

/** A thread's runs pending or running, oldest first. */
export async function selectThreadRunIdsInFlight(db: Pick<Database, 'pool'>, threadId: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM agent_runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY created_at`, [threadId]);
  return rows.map((row) => row.id);
}

/** Whether a thread has a run pending or running. */
export async function threadHasRunInFlight(db: Pick<Database, 'pool'>, threadId: string): Promise<boolean> {
  const { rows } = await db.pool.query(`SELECT 1 FROM agent_runs WHERE thread_id = $1 AND status IN ('pending', 'running') LIMIT 1`, [threadId]);
  return rows.length > 0;
}

/** Whether another run is pending on the run's thread. */
export async function threadHasAnotherPendingRun(db: Pick<Database, 'pool'>, runId: string): Promise<boolean> {
  const { rows } = await db.pool.query<{ waiting: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM agent_runs n JOIN agent_runs r ON r.thread_id = n.thread_id
       WHERE r.id = $1 AND n.status = 'pending' AND n.id <> r.id) AS waiting`,
    [runId],
  );
  return rows[0]?.waiting ?? false;
}

/** Deletes threads' runs (their streams go with deleteRunsEvents); returns the deleted runs' ids. */
export async function deleteThreadsRuns(db: Pick<Database, 'pool'>, threadIds: string[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(`DELETE FROM agent_runs WHERE thread_id = ANY($1::uuid[]) RETURNING id, status`, [threadIds]);
  return rows.map((row) => row.id);
}

/** Deletes the stream events of runs. */
export async function deleteRunsEvents(db: Pick<Database, 'pool'>, runIds: string[]): Promise<void> {
  await db.pool.query('DELETE FROM run_events WHERE run_id = ANY($1::uuid[])', [runIds]);
}

/** Deletes every run of a deployment and their streams. */
export async function deleteDeploymentRuns(db: Pick<Database, 'pool'>, deploymentId: string): Promise<void> {
  await db.pool.query('DELETE FROM run_events WHERE run_id IN (SELECT id FROM agent_runs WHERE deployment_id = $1)', [deploymentId]);
  await db.pool.query('DELETE FROM agent_runs WHERE deployment_id = $1', [deploymentId]);
}

export type ClaimedRun = RunRow & {
  assistant: { graph_id: string; config: Json; context: Json } | null;
  metadata_seq: number;
  /** A kept thread's latest checkpoint as the run starts (null: none yet, or a stateless run): where a rollback returns to. */
  start_checkpoint: string | null;
};

/**
 * Claims pending runs (pending → running) and reads each one's assistant and its thread's latest
 * checkpoint in the same statement,
 * which also appends each run's `metadata` event and runs `notify` (the caller's NOTIFY expressions
 * over the `claimed` and `metadata` rows, e.g. the run's stream signal).
 */
export async function claimRuns(db: Pick<Database, 'pool'>, runIds: string[], workerId: string, notify: string[]): Promise<ClaimedRun[]> {
  const { rows } = await db.pool.query<ClaimedRun & Record<string, unknown>>(
    `WITH ${claimCtes('$1::uuid[]', '$2')}
     SELECT claimed.*, metadata.seq AS metadata_seq${notify.map((expression, index) => `, ${expression} AS notified_${index}`).join('')}
     FROM claimed JOIN metadata ON metadata.id = claimed.id`,
    [runIds, workerId],
  );
  return rows.map((row) => withoutNotified(row, notify.length) as ClaimedRun);
}

/** The claim's CTEs (`claimed`, `metadata`, `appended`) for the runs `runIds` (an SQL uuid[]) by `workerId` (SQL). */
const claimCtes = (runIds: string, workerId: string) => `claimed AS (
       UPDATE agent_runs r SET status = 'running', attempt = attempt + 1, worker_id = ${workerId}, started_at = now(), updated_at = now()
       WHERE r.id = ANY(${runIds}) AND r.status = 'pending'
       RETURNING r.*, (SELECT json_build_object('graph_id', a.graph_id, 'config', a.config, 'context', a.context)
                       FROM agent_assistants a WHERE a.deployment_id = r.deployment_id AND a.id = r.assistant_id) AS assistant,
                 -- The thread's previous run has ended (per-thread order): nothing moves this before the run starts.
                 CASE WHEN r.thread_id IS NOT NULL AND (r.kwargs->>'temporary') IS DISTINCT FROM 'true' THEN
                   (SELECT k.checkpoint_id FROM ${CHECKPOINT_SCHEMA}.checkpoints k
                    WHERE k.thread_id = r.thread_id::text AND k.checkpoint_ns = '' ORDER BY k.checkpoint_id DESC LIMIT 1) END AS start_checkpoint),
     metadata AS (
       SELECT c.id, coalesce((SELECT max(e.seq) FROM run_events e WHERE e.run_id = c.id), 0) + 1 AS seq,
              '{"run_id":"' || c.id || '","attempt":' || c.attempt || '}' AS data
       FROM claimed c),
     appended AS (INSERT INTO run_events (run_id, seq, event, data) SELECT id, seq, 'metadata', data FROM metadata)`;

function withoutNotified(row: Record<string, unknown>, count: number): Record<string, unknown> {
  const rest = { ...row };
  for (let index = 0; index < count; index++) delete rest[`notified_${index}`];
  return rest;
}

/**
 * pg-boss's fetch of a queue's next jobs as RunQueue.fetchStatement captures it: its WITH list
 * (`ctes`, from `WITH`), its claiming `UPDATE … RETURNING` of the jobs, and its parameters.
 */
export type JobFetch = { ctes: string; update: string; values: unknown[] };

/**
 * Fetches a run queue's next jobs and claims their runs in one statement (pg-boss's fetch, then the
 * claim of `claimRuns` over the fetched jobs' runs): one round trip where a fetch and a claim were
 * two. Each fetched job comes back with its run, or without when the run was not pending (cancelled,
 * deleted or taken meanwhile). A unique violation of a concurrent fetch is no jobs, as for pg-boss.
 */
export async function fetchAndClaimRuns(
  db: Pick<Database, 'pool'>,
  fetch: JobFetch,
  workerId: string,
  notify: string[],
): Promise<{ job: { id: string; data: { runId: string; threadId?: string } }; claimed?: ClaimedRun }[]> {
  const worker = `$${fetch.values.length + 1}`;
  // Statements of runs not claimed come back with null `claimed` columns: their NOTIFYs are skipped.
  const notified = notify.map((expression, index) => `, CASE WHEN claimed.id IS NOT NULL THEN (${expression})::text END AS notified_${index}`).join('');
  let rows: Record<string, unknown>[];
  try {
    ({ rows } = await db.pool.query(
      `${fetch.ctes},
       fetched AS (${fetch.update}),
       ${claimCtes(`ARRAY(SELECT (f.data->>'runId')::uuid FROM fetched f)`, worker)}
       SELECT fetched.id AS fetched_job_id, fetched.data AS fetched_job_data, claimed.*, metadata.seq AS metadata_seq${notified}
       FROM fetched LEFT JOIN claimed ON claimed.id = (fetched.data->>'runId')::uuid LEFT JOIN metadata ON metadata.id = claimed.id`,
      [...fetch.values, workerId],
    ));
  } catch (error) {
    if ((error as { code?: string }).code === '23505') return [];
    throw error;
  }
  return rows.map((row) => {
    const { fetched_job_id: jobId, fetched_job_data: jobData, ...run } = withoutNotified(row, notify.length);
    return { job: { id: jobId as string, data: jobData as { runId: string; threadId?: string } }, claimed: run.id ? (run as ClaimedRun) : undefined };
  });
}

/** Records a run's outcome. */
export async function updateRunOutcome(db: Pick<Database, 'pool'>, runId: string, status: string, output: string | undefined): Promise<void> {
  await db.pool.query(`UPDATE agent_runs SET status = $2, output = $3, updated_at = now(), ended_at = now() WHERE id = $1`, [runId, status, output]);
}

/** Ends a run not yet ended as `error` (without output). */
export async function failUnendedRun(db: Pick<Database, 'pool'>, runId: string): Promise<void> {
  await db.pool.query(`UPDATE agent_runs SET status = 'error', updated_at = now(), ended_at = now() WHERE id = $1 AND status IN ('pending', 'running')`, [runId]);
}

export type RunningRun = { id: string; thread_id: string; worker_id: string; job_id: string | null; deployment_id: string; attempt: number; temporary: boolean };

/** Running runs (of one deployment, or all), except those of one worker. */
export async function selectRunningRuns(db: Pick<Database, 'pool'>, where: { deploymentId?: string; exceptWorkerId?: string }): Promise<RunningRun[]> {
  const { rows } = await db.pool.query<RunningRun>(
    `SELECT id, thread_id, worker_id, job_id, deployment_id, attempt, coalesce((kwargs->>'temporary')::boolean, false) AS temporary FROM agent_runs
     WHERE status = 'running' AND ($1::uuid IS NULL OR deployment_id = $1) AND worker_id IS DISTINCT FROM $2`,
    [where.deploymentId ?? null, where.exceptWorkerId ?? null],
  );
  return rows;
}

/** Those of these runs that are not running by `workerId` (any more): ended, deleted, or given to another attempt. */
export async function selectRunsNotRunningBy(db: Pick<Database, 'pool'>, runIds: string[], workerId: string): Promise<string[]> {
  if (!runIds.length) return [];
  const { rows } = await db.pool.query<{ id: string }>(
    `SELECT ids.id FROM unnest($1::uuid[]) AS ids(id)
      WHERE NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = ids.id AND r.status = 'running' AND r.worker_id = $2)`,
    [runIds, workerId],
  );
  return rows.map((row) => row.id);
}

/**
 * Puts a run that `workerId` left running back to `pending` (in the caller's transaction, with its
 * job going back to the queue), for the runtime that claims it next to execute again. Whether it
 * did (false: it had ended, or been taken, meanwhile).
 */
export async function requeueRunningRun(client: pg.PoolClient, runId: string, workerId: string): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE agent_runs SET status = 'pending', updated_at = now() WHERE id = $1 AND status = 'running' AND worker_id = $2`,
    [runId, workerId],
  );
  return rowCount === 1;
}

/**
 * Ends a running run as `error` with this output and appends the error as its last stream event.
 * Whether it did (false: it had ended meanwhile).
 */
export async function failRunningRun(db: Pick<Database, 'pool'>, runId: string, error: Json): Promise<boolean> {
  const { rowCount } = await db.pool.query(
    `UPDATE agent_runs SET status = 'error', output = $2, updated_at = now(), ended_at = now() WHERE id = $1 AND status = 'running'`,
    [runId, JSON.stringify({ __error__: error })],
  );
  if (!rowCount) return false;
  await db.pool.query(
    `INSERT INTO run_events (run_id, seq, event, data)
     SELECT $1, coalesce(max(seq), 0) + 1, 'error', $2 FROM run_events WHERE run_id = $1`,
    [runId, JSON.stringify(error)],
  );
  return true;
}

/** Marks a thread whose run failed: busy if it has runs pending, else `error`, with the error. */
export async function markThreadFailed(db: Pick<Database, 'pool'>, threadId: string, error: Json): Promise<void> {
  await db.pool.query(
    `UPDATE agent_threads t SET status = CASE WHEN EXISTS (SELECT 1 FROM agent_runs r WHERE r.thread_id = t.id AND r.status = 'pending') THEN 'busy' ELSE 'error' END,
       error = $2, updated_at = now() WHERE id = $1`,
    [threadId, JSON.stringify(error)],
  );
}

/** Drops stateless runs (and their streams) that ended over an hour ago. */
export async function deleteEndedStatelessRuns(db: Pick<Database, 'pool'>): Promise<void> {
  await db.pool.query(
    `WITH gone AS (DELETE FROM agent_runs WHERE (kwargs->>'temporary')::boolean
       AND status IN ('success', 'error', 'timeout', 'interrupted') AND ended_at < now() - interval '1 hour' RETURNING id)
     DELETE FROM run_events WHERE run_id IN (SELECT id FROM gone)`,
  );
}

/** Deletes a run (its stream, if any, stays: callers that may have written one use deleteRunAndEvents). */
export async function deleteRun(db: Pick<Database, 'pool'>, runId: string): Promise<void> {
  await db.pool.query('DELETE FROM agent_runs WHERE id = $1', [runId]);
}

/** A run of a thread as the thread stream follows it: its position (from 1) among the thread's runs by creation. */
export type ThreadRunPosition = { id: string; status: RunStatus; position: number; graph_id: string | null; protocol: boolean };

/** A thread's runs in the order they were created, with their positions and graphs. */
export async function selectThreadRunPositions(db: Pick<Database, 'pool'>, threadId: string, deploymentId: string): Promise<ThreadRunPosition[]> {
  const { rows } = await db.pool.query<Omit<ThreadRunPosition, 'position'> & { position: string }>(
    `SELECT r.id, r.status, row_number() OVER (ORDER BY r.created_at, r.id) AS position,
            (SELECT a.graph_id FROM agent_assistants a WHERE a.id = r.assistant_id) AS graph_id,
            coalesce((r.kwargs->>'protocol')::boolean, false) AS protocol
       FROM agent_runs r WHERE r.thread_id = $1 AND r.deployment_id = $2 ORDER BY r.created_at, r.id`,
    [threadId, deploymentId],
  );
  return rows.map((row) => ({ ...row, position: Number(row.position) }));
}

/**
 * The metadata custom-auth filters judge each of these runs by: its thread's, or its own for a run
 * whose thread has no row (a stateless run's throwaway thread).
 */
export async function selectRunsOwnerMetadata(db: Pick<Database, 'pool'>, runIds: string[]): Promise<Map<string, Record<string, unknown>>> {
  const { rows } = await db.pool.query<{ id: string; metadata: Record<string, unknown> | null }>(
    'SELECT r.id, coalesce(t.metadata, r.metadata) AS metadata FROM agent_runs r LEFT JOIN agent_threads t ON t.id = r.thread_id WHERE r.id = ANY($1::uuid[])',
    [runIds],
  );
  return new Map(rows.map((row) => [row.id, row.metadata ?? {}]));
}
