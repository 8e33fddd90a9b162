// Thread TTL: deletes threads whose time to live ran out, with everything they own, a batch at a time
// so one sweep never holds many row locks for long.
import type { Deps } from '../../context.js';
import { CRON_FIRE_QUEUE } from '../services/crons/cron-schedule.js';
import { deleteThreadCrons } from '../services/crons/crons.store.js';
import { claimThreadSweeps, deleteExpiredThreads } from '../services/threads/threads.store.js';

const BATCH = 200;

export async function sweepExpiredThreads(deps: Pick<Deps, 'db' | 'boss'>): Promise<{ deleted: number }> {
  let deleted = 0;
  const dueDeployments = await claimThreadSweeps(deps.db);
  for (;;) {
    const ids = await deleteExpiredThreads(deps.db, BATCH, dueDeployments);
    deleted += ids.length;
    // A deleted thread's crons go with it, as when the thread is deleted through the API.
    if (ids.length) for (const cronId of await deleteThreadCrons(deps.db, ids)) await deps.boss?.unschedule(CRON_FIRE_QUEUE, cronId);
    if (ids.length < BATCH) return { deleted };
  }
}
