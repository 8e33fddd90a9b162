// Creates trace_runs's week partitions ahead of time (this week and the next four), so runs land in
// their week's partition rather than the default one.
import type { Deps } from '../../context.js';
import { createTracePartitions } from '../services/traces/trace-partitions.store.js';

const PARTITION_WEEKS_AHEAD = 4;

export async function createTracePartitionsAhead(deps: Pick<Deps, 'db'>): Promise<{ created: string[] }> {
  const now = new Date();
  const created = await createTracePartitions(deps.db.pool, now, new Date(now.getTime() + (PARTITION_WEEKS_AHEAD + 1) * 7 * 86_400_000));
  return { created };
}
