// The runtime's housekeeping as scheduled jobs: runs whose runtime died go back to the queue (runtime records are forgotten), and stateless runs
// are dropped an hour after they finished (see agent-server/runtime/recovery.ts).
import type { PgBoss } from 'pg-boss';
import { pruneDeadRuntimes, pruneStatelessRuns, recoverOrphanedRuns } from '../runtime/recovery.js';
import type { Deps } from '../../context.js';

export async function sweepOrphanedRunsJob(deps: Deps, boss: PgBoss): Promise<{ recovered: number }> {
  const recovered = await recoverOrphanedRuns(deps, boss);
  await pruneDeadRuntimes(deps);
  return { recovered };
}

export async function pruneStatelessRunsJob(deps: Deps): Promise<void> {
  await pruneStatelessRuns(deps);
}
