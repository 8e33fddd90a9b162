// SQL of agent_runs and run_events: the runs service orchestrates and checks permissions, this file
// talks SQL.
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
