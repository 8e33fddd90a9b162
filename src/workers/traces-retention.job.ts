// Trace retention: runs older than their workspace's retention are deleted, a batch at a time so one
// pass never holds a long transaction. (With time-partitioned trace tables this becomes dropping
// whole partitions; see the note in trace-runs.store.ts.)
import type { Deps } from '../services/context.js';
import { deleteExpiredRuns } from '../services/traces/trace-runs.store.js';

const BATCH = 5_000;

/** `workspaceIds`: only those (tests share a database); by default every workspace. */
export async function deleteExpiredTraceRuns(deps: Pick<Deps, 'db' | 'config'>, workspaceIds?: string[]): Promise<{ deleted: number }> {
  let deleted = 0;
  for (;;) {
    const count = await deleteExpiredRuns(deps.db.pool, deps.config.traceRetentionDays, BATCH, workspaceIds);
    deleted += count;
    if (count === 0) return { deleted };
  }
}
