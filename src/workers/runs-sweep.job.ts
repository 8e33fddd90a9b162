// The runtime's housekeeping as scheduled jobs: runs whose runtime died are ended, and stateless runs
// are dropped an hour after they finished (see runtime/recovery.ts).
import type { PgBoss } from 'pg-boss';
import { pruneStatelessRuns, recoverOrphanedRuns } from '../runtime/recovery.js';
import type { Deps } from '../services/context.js';

export async function sweepOrphanedRunsJob(deps: Deps, boss: PgBoss): Promise<{ recovered: number }> {
  return { recovered: await recoverOrphanedRuns(deps, boss) };
}

export async function pruneStatelessRunsJob(deps: Deps): Promise<void> {
  await pruneStatelessRuns(deps);
}
