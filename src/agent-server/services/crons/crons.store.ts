// SQL of agent_crons. Every statement is scoped to a deployment, except the firing's claim, which
// names the cron its pg-boss schedule sent.
import type pg from 'pg';
import type { Database } from '../../../db.js';
import type { CronSearch } from './crons.schemas.js';

type Json = Record<string, unknown>;

export type CronRow = {
  id: string;
  deployment_id: string;
  assistant_id: string;
  thread_id: string | null;
  schedule: string;
  timezone: string;
  end_time: Date | null;
  enabled: boolean;
  on_run_completed: 'delete' | 'keep';
  payload: Json;
  metadata: Json;
  user_id: string | null;
  next_run_date: Date | null;
  created_at: Date;
  updated_at: Date;
};

export async function insertCron(db: Database, cron: Omit<CronRow, 'created_at' | 'updated_at'>): Promise<CronRow> {
  const { rows } = await db.pool.query<CronRow>(
    `INSERT INTO agent_crons (id, deployment_id, assistant_id, thread_id, schedule, timezone, end_time, enabled, on_run_completed, payload, metadata, user_id, next_run_date, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now()) RETURNING *`,
    [
      cron.id,
      cron.deployment_id,
      cron.assistant_id,
      cron.thread_id,
      cron.schedule,
      cron.timezone,
      cron.end_time,
      cron.enabled,
      cron.on_run_completed,
      JSON.stringify(cron.payload),
      JSON.stringify(cron.metadata),
      cron.user_id,
      cron.next_run_date,
    ],
  );
  return rows[0]!;
}

export async function selectCron(db: Database, deploymentId: string | null, cronId: string): Promise<CronRow | undefined> {
  const { rows } = await db.pool.query<CronRow>('SELECT * FROM agent_crons WHERE id = $1 AND ($2::uuid IS NULL OR deployment_id = $2)', [cronId, deploymentId]);
  return rows[0];
}

/** The crons that may still fire (enabled, with a next occurrence), oldest first. */
export async function selectLiveCrons(db: Database): Promise<CronRow[]> {
  const { rows } = await db.pool.query<CronRow>('SELECT * FROM agent_crons WHERE enabled AND next_run_date IS NOT NULL ORDER BY created_at');
  return rows;
}

/** The cron's row, locked until the transaction of `client` ends. */
export async function lockCron(client: pg.PoolClient, deploymentId: string, cronId: string): Promise<CronRow | undefined> {
  const { rows } = await client.query<CronRow>('SELECT * FROM agent_crons WHERE id = $1 AND deployment_id = $2 FOR UPDATE', [cronId, deploymentId]);
  return rows[0];
}

export async function updateCron(
  client: pg.PoolClient,
  deploymentId: string,
  cronId: string,
  values: Pick<CronRow, 'schedule' | 'timezone' | 'end_time' | 'enabled' | 'on_run_completed' | 'payload' | 'metadata' | 'next_run_date'>,
): Promise<CronRow | undefined> {
  const { rows } = await client.query<CronRow>(
    `UPDATE agent_crons SET schedule = $3, timezone = $4, end_time = $5, enabled = $6, on_run_completed = $7, payload = $8, metadata = $9, next_run_date = $10, updated_at = now()
     WHERE id = $1 AND deployment_id = $2 RETURNING *`,
    [cronId, deploymentId, values.schedule, values.timezone, values.end_time, values.enabled, values.on_run_completed, JSON.stringify(values.payload), JSON.stringify(values.metadata), values.next_run_date],
  );
  return rows[0];
}

export async function deleteCron(db: Database, deploymentId: string, cronId: string): Promise<boolean> {
  const { rowCount } = await db.pool.query('DELETE FROM agent_crons WHERE id = $1 AND deployment_id = $2', [cronId, deploymentId]);
  return (rowCount ?? 0) > 0;
}

/**
 * Claims the occurrence due at `due` for one firing: moves next_run_date on to `next` only if no one
 * else has (two workers handed the same tick: one wins). False when the tick was claimed already.
 */
export async function claimOccurrence(db: Database, cronId: string, due: Date, next: Date | null): Promise<boolean> {
  const { rowCount } = await db.pool.query('UPDATE agent_crons SET next_run_date = $3, updated_at = now() WHERE id = $1 AND enabled AND next_run_date = $2', [cronId, due, next]);
  return (rowCount ?? 0) > 0;
}

/** Deletes the crons of deleted threads; returns their ids. */
export async function deleteThreadCrons(db: Database, threadIds: string[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>('DELETE FROM agent_crons WHERE thread_id = ANY($1::uuid[]) RETURNING id', [threadIds]);
  return rows.map((row) => row.id);
}

export async function disableCron(db: Database, cronId: string): Promise<void> {
  await db.pool.query('UPDATE agent_crons SET enabled = false, next_run_date = NULL, updated_at = now() WHERE id = $1', [cronId]);
}

const SORT_COLUMNS: Record<NonNullable<CronSearch['sort_by']>, string> = {
  cron_id: 'id',
  assistant_id: 'assistant_id',
  thread_id: 'thread_id',
  created_at: 'created_at',
  updated_at: 'updated_at',
  next_run_date: 'next_run_date',
  end_time: 'end_time',
};

/** `metadata`: a jsonb document the cron's metadata must contain (a custom-auth filter). */
type CronFilter = { assistantId?: string | null; threadId?: string | null; enabled?: boolean | null; metadata?: string };

function where(deploymentId: string, filter: CronFilter) {
  const params: unknown[] = [deploymentId];
  const conditions = ['deployment_id = $1'];
  if (filter.assistantId) conditions.push(`assistant_id = $${params.push(filter.assistantId)}`);
  if (filter.threadId) conditions.push(`thread_id = $${params.push(filter.threadId)}`);
  if (filter.enabled != null) conditions.push(`enabled = $${params.push(filter.enabled)}`);
  if (filter.metadata) conditions.push(`metadata @> $${params.push(filter.metadata)}::jsonb`);
  return { params, text: conditions.join(' AND ') };
}

export async function searchCrons(
  db: Database,
  deploymentId: string,
  search: CronFilter & { limit: number; offset: number; sortBy?: CronSearch['sort_by']; sortOrder?: 'asc' | 'desc' | null },
): Promise<CronRow[]> {
  const { params, text } = where(deploymentId, search);
  const order = `${SORT_COLUMNS[search.sortBy ?? 'created_at']} ${search.sortOrder === 'asc' ? 'ASC' : 'DESC'}, id`;
  const { rows } = await db.pool.query<CronRow>(`SELECT * FROM agent_crons WHERE ${text} ORDER BY ${order} LIMIT $${params.push(search.limit)} OFFSET $${params.push(search.offset)}`, params);
  return rows;
}

export async function countCrons(db: Database, deploymentId: string, filter: CronFilter): Promise<number> {
  const { params, text } = where(deploymentId, filter);
  const { rows } = await db.pool.query<{ count: number }>(`SELECT count(*)::int AS count FROM agent_crons WHERE ${text}`, params);
  return rows[0]!.count;
}
