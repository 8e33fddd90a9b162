// Thread TTL: deletes threads whose time to live ran out, with everything they own, a batch at a time
// so one sweep never holds many row locks for long.
import type { Deps } from '../services/context.js';
import { deleteExpiredThreads } from '../services/threads/threads.store.js';

const BATCH = 200;

export async function sweepExpiredThreads(deps: Deps): Promise<{ deleted: number }> {
  let deleted = 0;
  for (;;) {
    const ids = await deleteExpiredThreads(deps.db, BATCH);
    deleted += ids.length;
    if (ids.length < BATCH) return { deleted };
  }
}
