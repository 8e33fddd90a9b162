// SQL on LangGraph's checkpoint tables (schema `langgraph`, created by its Postgres saver; keyed by
// thread id, which is unique across deployments). Used by the threads service (delete, copy) and by
// the runtime (rollback, a run's starting point), on whichever pool the caller holds.
import type pg from 'pg';
import { CHECKPOINT_SCHEMA } from '../../../database/checkpoint-schema.js';

/** Deletes every checkpoint of the threads (all namespaces). */
export async function deleteThreadCheckpoints(pool: pg.Pool, threadIds: string[]): Promise<void> {
  if (!threadIds.length) return;
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoint_writes WHERE thread_id = ANY($1::text[])`, [threadIds]);
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoint_blobs WHERE thread_id = ANY($1::text[])`, [threadIds]);
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = ANY($1::text[])`, [threadIds]);
}

/** Removes the checkpoints a run wrote after `afterCheckpointId` (checkpoint ids sort by time). */
export async function deleteCheckpointsAfter(pool: pg.Pool, threadId: string, afterCheckpointId: string | null): Promise<void> {
  const after = afterCheckpointId ?? '';
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoint_writes WHERE thread_id = $1 AND checkpoint_id > $2`, [threadId, after]);
  await pool.query(`DELETE FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = $1 AND checkpoint_id > $2`, [threadId, after]);
}

/** Copies every checkpoint of one thread to another (thread copy). */
export async function copyThreadCheckpoints(pool: pg.Pool, fromThreadId: string, toThreadId: string): Promise<void> {
  for (const table of ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes']) {
    const { rows } = await pool.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
      [CHECKPOINT_SCHEMA, table],
    );
    const columns = rows.map((row) => row.column_name);
    const select = columns.map((column) => (column === 'thread_id' ? '$2' : `"${column}"`)).join(', ');
    await pool.query(
      `INSERT INTO ${CHECKPOINT_SCHEMA}.${table} (${columns.map((c) => `"${c}"`).join(', ')}) SELECT ${select} FROM ${CHECKPOINT_SCHEMA}.${table} WHERE thread_id = $1`,
      [fromThreadId, toThreadId],
    );
  }
}

/** Rows and the bytes they hold, as stored (pg_column_size: after PostgreSQL's compression). */
type StoredSize = { rows: number; bytes: number };
export type ThreadStorage = { checkpoints: StoredSize; channel_values: StoredSize & { channels: Record<string, StoredSize> }; pending_writes: StoredSize };

/**
 * What a thread's checkpoints occupy, in one statement: checkpoint rows (the checkpoint and its
 * metadata), channel values (a row per channel version, by channel) and pending writes (all namespaces).
 */
export async function threadStorage(pool: pg.Pool, threadId: string): Promise<ThreadStorage> {
  const { rows } = await pool.query<{ section: keyof ThreadStorage; channel: string | null; rows: string; bytes: string }>(
    `SELECT 'checkpoints' AS section, NULL AS channel, count(*) AS rows, coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0) AS bytes
       FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = $1
     UNION ALL
     SELECT 'channel_values', channel, count(*), coalesce(sum(coalesce(pg_column_size(blob), 0)), 0)
       FROM ${CHECKPOINT_SCHEMA}.checkpoint_blobs WHERE thread_id = $1 GROUP BY channel
     UNION ALL
     SELECT 'pending_writes', NULL, count(*), coalesce(sum(pg_column_size(blob)), 0)
       FROM ${CHECKPOINT_SCHEMA}.checkpoint_writes WHERE thread_id = $1`,
    [threadId],
  );
  const storage: ThreadStorage = { checkpoints: { rows: 0, bytes: 0 }, channel_values: { rows: 0, bytes: 0, channels: {} }, pending_writes: { rows: 0, bytes: 0 } };
  for (const row of rows) {
    const size = { rows: Number(row.rows), bytes: Number(row.bytes) };
    storage[row.section].rows += size.rows;
    storage[row.section].bytes += size.bytes;
    if (row.channel !== null) storage.channel_values.channels[row.channel] = size;
  }
  return storage;
}

/** The id of a thread's latest root checkpoint (null when it has none). */
export async function latestCheckpointId(pool: pg.Pool, threadId: string): Promise<string | null> {
  const { rows } = await pool.query<{ checkpoint_id: string }>(
    `SELECT checkpoint_id FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = $1 AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1`,
    [threadId],
  );
  return rows[0]?.checkpoint_id ?? null;
}

/**
 * Where a thread stands for a run executed again after its runtime died: whether its latest
 * checkpoint was written by the run (metadata `run_id`), and its latest checkpoint written before
 * the run (null: none), where a rollback of the run returns to.
 */
export async function runResumePoint(pool: pg.Pool, threadId: string, runId: string): Promise<{ latestByRun: boolean; before: string | null }> {
  const { rows } = await pool.query<{ latest_run_id: string | null; before: string | null }>(
    `SELECT (SELECT metadata->>'run_id' FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = $1 AND checkpoint_ns = ''
              ORDER BY checkpoint_id DESC LIMIT 1) AS latest_run_id,
            (SELECT checkpoint_id FROM ${CHECKPOINT_SCHEMA}.checkpoints WHERE thread_id = $1 AND checkpoint_ns = ''
              AND metadata->>'run_id' IS DISTINCT FROM $2 ORDER BY checkpoint_id DESC LIMIT 1) AS before`,
    [threadId, runId],
  );
  return { latestByRun: rows[0]?.latest_run_id === runId, before: rows[0]?.before ?? null };
}

/**
 * The checkpoint read of the runtime's saver (list and getTuple append WHERE/ORDER BY/LIMIT): the
 * columns LangGraph's PostgresSaver selects, but each channel value is looked up by its primary key
 * (thread, namespace, channel, version) in a LATERAL that cannot be flattened (LIMIT 1). The saver's
 * own join lets the planner hash the thread's whole checkpoint_blobs (every version ever written) for
 * each returned checkpoint, so history and get state grew with the thread's length.
 */
export function checkpointSelectSql(schema: string): string {
  return `select
    thread_id,
    checkpoint,
    checkpoint_ns,
    checkpoint_id,
    parent_checkpoint_id,
    metadata,
    (
      select array_agg(array[bl.channel::bytea, bl.type::bytea, bl.blob])
        from jsonb_each_text(cp.checkpoint -> 'channel_versions') as version(channel, value)
       cross join lateral (
         select b.channel, b.type, b.blob from "${schema}".checkpoint_blobs b
          where b.thread_id = cp.thread_id and b.checkpoint_ns = cp.checkpoint_ns and b.channel = version.channel and b.version = version.value
          limit 1
       ) bl
    ) as channel_values,
    (
      select array_agg(array[cw.task_id::text::bytea, cw.channel::bytea, cw.type::bytea, cw.blob] order by cw.task_id, cw.idx)
        from "${schema}".checkpoint_writes cw
       where cw.thread_id = cp.thread_id and cw.checkpoint_ns = cp.checkpoint_ns and cw.checkpoint_id = cp.checkpoint_id
    ) as pending_writes
  from "${schema}".checkpoints cp `;
}
