// Trace retention. trace_runs is partitioned by week of start_time: a week every workspace's retention
// has passed is dropped whole (then its run ids are released); runs past a shorter retention of their
// own workspace, and old runs in the default partition, are deleted by row, a batch at a time so one
// pass never holds a long transaction. A week whose drop times out waiting for its lock (a long read)
// is left for the next hourly pass; its run ids stay claimed until then (deleteRunIdsBefore releases
// only ids whose run is gone), and the rest of the pass goes on.
import type { Deps } from '../../context.js';
import { dropTracePartitionsBefore } from '../services/traces/trace-partitions.store.js';
import {
  deleteAwaitedParentsBefore,
  deleteExpiredRuns,
  deleteFeedbackTokensExpiredBefore,
  deleteRunIdsBefore,
  longestTraceRetentionDays,
} from '../services/traces/trace-retention.store.js';

const BATCH = 5_000;

/**
 * `workspaceIds`: only those workspaces' runs, by row (tests share a database); by default every
 * workspace, and whole partitions.
 */
export async function deleteExpiredTraceRuns(deps: Pick<Deps, 'db' | 'config'>, workspaceIds?: string[]): Promise<{ deleted: number; droppedPartitions: string[]; busyPartitions: string[] }> {
  const { pool } = deps.db;
  let droppedPartitions: string[] = [];
  let busyPartitions: string[] = [];
  let horizon: Date | undefined;
  if (!workspaceIds) {
    const days = await longestTraceRetentionDays(pool, deps.config.traceRetentionDays);
    horizon = new Date(Date.now() - days * 86_400_000);
    ({ dropped: droppedPartitions, busy: busyPartitions } = await dropTracePartitionsBefore(pool, horizon));
  }
  let deleted = 0;
  for (;;) {
    const count = await deleteExpiredRuns(pool, deps.config.traceRetentionDays, BATCH, workspaceIds);
    deleted += count;
    if (count === 0) break;
  }
  if (horizon) {
    while ((await deleteRunIdsBefore(pool, horizon, BATCH)) === BATCH);
    await deleteAwaitedParentsBefore(pool, horizon);
    // A day's grace: a url used just after it expired is told so (not "unknown") for a while.
    await deleteFeedbackTokensExpiredBefore(pool, new Date(Date.now() - 86_400_000));
  }
  return { deleted, droppedPartitions, busyPartitions };
}
