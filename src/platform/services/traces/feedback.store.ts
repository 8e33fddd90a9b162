// Feedback and presigned feedback tokens: their SQL, and the feedback_stats each write of a run's
// feedback recomputes on the run. Reads of a run's feedback and of a key's are ranges of the
// (tenant_id, run_id | key, created_at DESC, id DESC) indexes declared on Feedback in schema.prisma.
import type pg from 'pg';
import type { Database } from '../../../db.js';
import type { Feedback, Prisma } from '../../../generated/prisma/client.js';
import { isoSql } from './trace-runs.store.js';

/** A stored feedback as services return it (timestamps as ISO strings, UTC). */
export type FeedbackRow = {
  tenantId: string;
  id: string;
  runId: string;
  traceId: string;
  sessionId: string;
  key: string;
  score: number | null;
  value: unknown;
  comment: string | null;
  correction: unknown;
  feedbackSource: unknown;
  feedbackGroupId: string | null;
  comparativeExperimentId: string | null;
  apiKeyId: string | null;
  userId: string | null;
  createdAt: string;
  modifiedAt: string;
};

const COLUMNS = `f.tenant_id AS "tenantId", f.id, f.run_id AS "runId", f.trace_id AS "traceId", f.session_id AS "sessionId",
  f.key, f.score, f.value, f.comment, f.correction, f.feedback_source AS "feedbackSource",
  f.feedback_group_id AS "feedbackGroupId", f.comparative_experiment_id AS "comparativeExperimentId",
  f.api_key_id AS "apiKeyId", f.user_id AS "userId", ${isoSql('f.created_at')} AS "createdAt", ${isoSql('f.modified_at')} AS "modifiedAt"`;

/** What feedback needs of its run: where it is. */
export type FeedbackTarget = { id: string; traceId: string; sessionId: string; projectName: string };

/**
 * The run feedback goes to, locked (its trace_run_ids row) until the transaction ends: writes of one
 * run's feedback take turns, so each recomputes feedback_stats over every committed feedback.
 */
export async function lockFeedbackTarget(client: pg.PoolClient, tenantId: string, runId: string): Promise<FeedbackTarget | undefined> {
  // As text: a Date would drop the microseconds the start time may have.
  const claimed = await client.query<{ startTime: string }>(
    'SELECT start_time::text AS "startTime" FROM trace_run_ids WHERE tenant_id = $1 AND id = $2 FOR UPDATE',
    [tenantId, runId],
  );
  const startTime = claimed.rows[0]?.startTime;
  if (!startTime) return undefined;
  // The start time as a parameter: the one partition that holds the run is read.
  const { rows } = await client.query<FeedbackTarget>(
    `SELECT r.id, r.trace_id AS "traceId", r.session_id AS "sessionId", p.name AS "projectName"
       FROM trace_runs r JOIN tracing_projects p ON p.id = r.session_id
      WHERE r.tenant_id = $1 AND r.id = $2 AND r.start_time = $3::timestamptz`,
    [tenantId, runId, startTime],
  );
  return rows[0];
}

export type FeedbackInsert = Omit<FeedbackRow, 'createdAt' | 'modifiedAt'>;

/** Inserts a feedback; undefined when one of that id exists in the workspace already. */
export async function insertFeedback(client: pg.PoolClient, feedback: FeedbackInsert): Promise<FeedbackRow | undefined> {
  const { rows } = await client.query<FeedbackRow>(
    `INSERT INTO feedback AS f (tenant_id, id, run_id, trace_id, session_id, key, score, value, comment, correction, feedback_source,
       feedback_group_id, comparative_experiment_id, api_key_id, user_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (tenant_id, id) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      feedback.tenantId, feedback.id, feedback.runId, feedback.traceId, feedback.sessionId, feedback.key, feedback.score,
      json(feedback.value), feedback.comment, json(feedback.correction), json(feedback.feedbackSource),
      feedback.feedbackGroupId, feedback.comparativeExperimentId, feedback.apiKeyId, feedback.userId,
    ],
  );
  return rows[0];
}

/** JSON columns take text: undefined and null are SQL NULL. */
const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));

export async function findFeedback(db: pg.Pool | pg.PoolClient, tenantId: string, id: string, lock = false): Promise<FeedbackRow | undefined> {
  const { rows } = await db.query<FeedbackRow>(`SELECT ${COLUMNS} FROM feedback f WHERE f.tenant_id = $1 AND f.id = $2${lock ? ' FOR UPDATE' : ''}`, [tenantId, id]);
  return rows[0];
}

export type FeedbackChange = { score?: number | null; value?: unknown; comment?: string | null; correction?: unknown };

/** Sets the given fields (null clears one; a field left out keeps its value). */
export async function updateFeedbackRow(client: pg.PoolClient, tenantId: string, id: string, change: FeedbackChange): Promise<FeedbackRow | undefined> {
  const sets: string[] = [];
  const values: unknown[] = [tenantId, id];
  const set = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (change.score !== undefined) set('score', change.score);
  if (change.value !== undefined) set('value', json(change.value));
  if (change.comment !== undefined) set('comment', change.comment);
  if (change.correction !== undefined) set('correction', json(change.correction));
  const { rows } = await client.query<FeedbackRow>(
    `UPDATE feedback f SET ${[...sets, 'modified_at = now()'].join(', ')} WHERE f.tenant_id = $1 AND f.id = $2 RETURNING ${COLUMNS}`,
    values,
  );
  return rows[0];
}

export async function deleteFeedbackRow(client: pg.PoolClient, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await client.query('DELETE FROM feedback WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return (rowCount ?? 0) > 0;
}

/**
 * Recomputes a run's feedback_stats from its feedback, as LangSmith shows them on runs:
 * `{key: {n, avg, stdev, errors, values}}` (avg and stdev over numeric scores; values counts each
 * string, number or boolean value), null without feedback. One partition is written: the run's start
 * time comes from trace_run_ids.
 */
export async function refreshFeedbackStats(client: pg.PoolClient, tenantId: string, runId: string): Promise<void> {
  await client.query(
    `UPDATE trace_runs r SET feedback_stats = (
       SELECT jsonb_object_agg(s.key, jsonb_build_object('n', s.n, 'avg', s.avg, 'stdev', s.stdev, 'errors', 0, 'values', s.vals))
         FROM (SELECT f.key, count(*)::int AS n, avg(f.score) AS avg, stddev_pop(f.score) AS stdev,
                      COALESCE((SELECT jsonb_object_agg(v.value, v.n) FROM (
                                  SELECT g.value #>> '{}' AS value, count(*)::int AS n FROM feedback g
                                   WHERE g.tenant_id = $1 AND g.run_id = $2 AND g.key = f.key
                                     AND jsonb_typeof(g.value) IN ('string', 'number', 'boolean')
                                   GROUP BY 1) v), '{}'::jsonb) AS vals
                 FROM feedback f WHERE f.tenant_id = $1 AND f.run_id = $2 GROUP BY f.key) s)
      WHERE r.tenant_id = $1 AND r.id = $2 AND r.start_time = (SELECT i.start_time FROM trace_run_ids i WHERE i.tenant_id = $1 AND i.id = $2)`,
    [tenantId, runId],
  );
}

export type FeedbackFilter = { runIds?: string[]; keys?: string[]; sources?: string[]; limit: number; offset: number };

/**
 * A workspace's feedback, newest first, an offset page (the SDK pages listFeedback by offset). Named
 * runs read their (tenant_id, run_id, created_at) range each; else named keys theirs; else the
 * workspace's newest.
 */
export async function selectFeedback(pool: pg.Pool, tenantId: string, filter: FeedbackFilter): Promise<FeedbackRow[]> {
  const { rows } = await pool.query<FeedbackRow>(
    `SELECT ${COLUMNS} FROM feedback f
      WHERE f.tenant_id = $1
        AND ($2::uuid[] IS NULL OR f.run_id = ANY($2::uuid[]))
        AND ($3::text[] IS NULL OR f.key = ANY($3::text[]))
        AND ($4::text[] IS NULL OR f.feedback_source->>'type' = ANY($4::text[]))
      ORDER BY f.created_at DESC, f.id DESC
      LIMIT $5 OFFSET $6`,
    [tenantId, filter.runIds ?? null, filter.keys ?? null, filter.sources ?? null, filter.limit, filter.offset],
  );
  return rows;
}

/**
 * A workspace's feedback through Prisma (GraphQL's reads: `selection` is Pothos's), newest first, an
 * offset page, by runs and keys as selectFeedback.
 */
export function findFeedbackRecords(
  db: Database,
  tenantId: string,
  filter: Omit<FeedbackFilter, 'sources'>,
  selection: Prisma.FeedbackFindManyArgs = {},
): Promise<Feedback[]> {
  return db.prisma.feedback.findMany({
    ...selection,
    where: { tenantId, ...(filter.runIds ? { runId: { in: filter.runIds } } : {}), ...(filter.keys ? { key: { in: filter.keys } } : {}) },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: filter.limit,
    skip: filter.offset,
  });
}

/** One feedback through Prisma (GraphQL's reads: `selection` is Pothos's). */
export function findFeedbackRecord(db: Database, tenantId: string, id: string, selection: Prisma.FeedbackFindManyArgs = {}): Promise<Feedback | null> {
  return db.prisma.feedback.findFirst({ ...selection, where: { tenantId, id } });
}

/** A stored feedback token. */
export type FeedbackTokenRow = {
  id: string;
  tenantId: string;
  runId: string;
  feedbackKey: string;
  traceProject: string | null;
  url: string;
  expiresAt: Date;
};

const TOKEN_COLUMNS = `t.id, t.tenant_id AS "tenantId", t.run_id AS "runId", t.feedback_key AS "feedbackKey",
  t.trace_project AS "traceProject", t.url, t.expires_at AS "expiresAt"`;

export async function insertFeedbackToken(
  pool: pg.Pool,
  token: FeedbackTokenRow & { feedbackConfig: unknown },
): Promise<FeedbackTokenRow> {
  const { rows } = await pool.query<FeedbackTokenRow>(
    `INSERT INTO feedback_tokens AS t (id, tenant_id, run_id, feedback_key, feedback_config, trace_project, url, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${TOKEN_COLUMNS}`,
    [token.id, token.tenantId, token.runId, token.feedbackKey, json(token.feedbackConfig), token.traceProject, token.url, token.expiresAt],
  );
  return rows[0]!;
}

export async function findFeedbackToken(pool: pg.Pool, id: string): Promise<FeedbackTokenRow | undefined> {
  const { rows } = await pool.query<FeedbackTokenRow>(`SELECT ${TOKEN_COLUMNS} FROM feedback_tokens t WHERE t.id = $1`, [id]);
  return rows[0];
}

/** A run's tokens, newest first, an offset page. */
export async function selectFeedbackTokens(pool: pg.Pool, tenantId: string, runId: string, limit: number, offset: number): Promise<FeedbackTokenRow[]> {
  const { rows } = await pool.query<FeedbackTokenRow>(
    `SELECT ${TOKEN_COLUMNS} FROM feedback_tokens t WHERE t.tenant_id = $1 AND t.run_id = $2 ORDER BY t.created_at DESC, t.id DESC LIMIT $3 OFFSET $4`,
    [tenantId, runId, limit, offset],
  );
  return rows;
}
