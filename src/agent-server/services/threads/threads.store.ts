// SQL of agent_threads shared by the threads and runs services and the runtime: the cached copy of a
// thread's latest checkpoint (values, interrupts, status), which lists and GraphQL read without the graph.
import type pg from 'pg';
import { type Database, withTransaction } from '../../../db.js';
import { BOSS_SCHEMA } from '../../../queues.js';
import { CHECKPOINT_SCHEMA } from '../../../database/checkpoint-schema.js';
import type { ThreadStatus } from './threads.schemas.js';

type Json = Record<string, unknown>;

export type ThreadRow = {
  id: string;
  created_at: Date;
  updated_at: Date;
  metadata: Json;
  status: ThreadStatus;
  config: Json;
  values: Json | null;
  interrupts: Json;
  error: Json | null;
};

/** The graph a thread runs (its metadata.graph_id, when set) and its cached values. */
export async function selectThreadGraph(db: Database, threadId: string): Promise<{ graphId: string | undefined; values: unknown; config: Json } | undefined> {
  const { rows } = await db.pool.query<{ metadata: Json; values: unknown; config: Json | null }>('SELECT metadata, "values", config FROM agent_threads WHERE id = $1', [threadId]);
  if (!rows[0]) return undefined;
  const graphId = rows[0].metadata?.graph_id;
  return { graphId: typeof graphId === 'string' ? graphId : undefined, values: rows[0].values, config: rows[0].config ?? {} };
}

/**
 * Writes the thread's cached state and derives its status: error when `error` is set, busy while runs
 * wait, interrupted when the graph stopped with work left (`hasNext`), else idle.
 */
export async function writeThreadCache(
  db: Database,
  threadId: string,
  cache: { values: unknown; interrupts: Json; error: unknown; hasNext: boolean },
  /** `pg_notify` arguments sent by the same statement (e.g. a run's end, once the thread shows it). */
  notify: [channel: string, payload: string][] = [],
): Promise<ThreadRow | undefined> {
  const { rows } = await db.pool.query<ThreadRow>(
    `WITH updated AS (
       UPDATE agent_threads SET "values" = $2, interrupts = $3, error = $4, updated_at = now(),
         status = CASE WHEN $4::jsonb IS NOT NULL THEN 'error'
                       WHEN EXISTS (SELECT 1 FROM agent_runs WHERE thread_id = $1 AND status IN ('pending', 'running')) THEN 'busy'
                       WHEN $5 THEN 'interrupted' ELSE 'idle' END
       WHERE id = $1 RETURNING *)
     SELECT updated.*, (SELECT count(pg_notify(channel, payload)) FROM unnest($6::text[], $7::text[]) AS s(channel, payload)) AS notified FROM updated`,
    [
      threadId,
      JSON.stringify(cache.values ?? null),
      cache.interrupts,
      cache.error ? JSON.stringify(cache.error) : null,
      cache.hasNext,
      notify.map(([channel]) => channel),
      notify.map(([, payload]) => payload),
    ],
  );
  if (!rows[0]) return undefined;
  const { notified: _notified, ...row } = rows[0] as ThreadRow & { notified?: unknown };
  return row as ThreadRow;
}

/** A thread's cached values (null for an unknown thread). */
export async function selectThreadValues(db: Pick<Database, 'pool'>, threadId: string): Promise<unknown> {
  const { rows } = await db.pool.query<{ values: unknown }>('SELECT "values" FROM agent_threads WHERE id = $1', [threadId]);
  return rows[0]?.values ?? null;
}

/** The deployment's thread's metadata; undefined when it has no such thread. */
export async function selectThreadMetadata(db: Pick<Database, 'pool'>, threadId: string, deploymentId: string): Promise<Json | undefined> {
  const { rows } = await db.pool.query<{ metadata: Json | null }>('SELECT metadata FROM agent_threads WHERE id = $1 AND deployment_id = $2', [threadId, deploymentId]);
  return rows[0] ? (rows[0].metadata ?? {}) : undefined;
}

/** Inserts an empty thread (with `metadata`); false when the id is already taken (by another deployment's thread, or one created at this instant). */
export async function insertEmptyThread(client: pg.PoolClient, threadId: string, deploymentId: string, metadata: Json = {}): Promise<boolean> {
  const created = await client.query(
    `INSERT INTO agent_threads (id, deployment_id, metadata, updated_at) VALUES ($1, $2, $3, now()) ON CONFLICT (id) DO NOTHING`,
    [threadId, deploymentId, metadata],
  );
  return created.rowCount === 1;
}

/**
 * Marks as swept now the deployments with a sweep interval (langgraph.json `checkpointer.ttl
 * .sweep_interval_minutes`) whose interval has passed, and returns them: their threads are due for a
 * sweep. A deployment without an interval is swept every time (each minute). Ten seconds of slack:
 * the schedule's ticks are a minute apart give or take the job's pickup delay.
 */
export async function claimThreadSweeps(db: Pick<Database, 'pool'>): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `UPDATE served_deployments SET threads_swept_at = now()
      WHERE thread_sweep_interval_minutes IS NOT NULL
        AND (threads_swept_at IS NULL OR threads_swept_at + make_interval(mins => thread_sweep_interval_minutes) <= now() + interval '10 seconds')
      RETURNING id`,
  );
  return rows.map((row) => row.id);
}

/**
 * Deletes up to `limit` threads whose TTL has run out (minutes since their last update; the thread's
 * own, else its deployment's default TTL), with their runs, stream events, checkpoints and run-queue
 * jobs, in one transaction; returns their ids. Threads of a deployment with a sweep interval are
 * swept only when it is in `dueDeployments` (see claimThreadSweeps). A thread with a pending or
 * running run is kept (its run updates it when it ends, which restarts the TTL). The thread rows are
 * locked first and locked ones skipped: creating a run locks its thread, so a run started during a
 * sweep either committed first (and is seen here) or waits and finds no thread.
 */
export async function deleteExpiredThreads(db: Pick<Database, 'pool'>, limit: number, dueDeployments: string[] = []): Promise<string[]> {
  return withTransaction(db, async (client) => {
    const { rows } = await client.query<{ id: string }>(
      `SELECT t.id FROM agent_threads t JOIN served_deployments d ON d.id = t.deployment_id
        WHERE COALESCE(t.ttl_minutes, d.thread_default_ttl_minutes) IS NOT NULL
          AND t.updated_at + make_interval(secs => COALESCE(t.ttl_minutes, d.thread_default_ttl_minutes) * 60) <= now()
          AND (d.thread_sweep_interval_minutes IS NULL OR d.id = ANY($2::uuid[]))
          AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.thread_id = t.id AND r.status IN ('pending', 'running'))
        ORDER BY t.updated_at LIMIT $1 FOR UPDATE OF t SKIP LOCKED`,
      [limit, dueDeployments],
    );
    const ids = rows.map((row) => row.id);
    if (!ids.length) return ids;
    const { rows: runs } = await client.query<{ id: string; job_id: string | null }>('DELETE FROM agent_runs WHERE thread_id = ANY($1::uuid[]) RETURNING id, job_id', [ids]);
    await client.query('DELETE FROM run_events WHERE run_id = ANY($1::uuid[])', [runs.map((run) => run.id)]);
    const jobIds = runs.flatMap((run) => (run.job_id ? [run.job_id] : []));
    if (jobIds.length) await client.query(`DELETE FROM ${BOSS_SCHEMA}.job WHERE id = ANY($1::uuid[])`, [jobIds]);
    for (const table of ['checkpoint_writes', 'checkpoint_blobs', 'checkpoints']) {
      await client.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.${table} WHERE thread_id = ANY($1::text[])`, [ids]);
    }
    await client.query('DELETE FROM agent_threads WHERE id = ANY($1::uuid[])', [ids]);
    return ids;
  });
}
