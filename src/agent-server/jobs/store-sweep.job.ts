// Deletes expired store items of every deployment. Reads already skip them; this reclaims the rows.
import type { Deps } from '../../context.js';
import { deleteExpiredItems } from '../services/store/store-items.store.js';

export async function sweepStoreJob(deps: Deps): Promise<{ deleted: number }> {
  return { deleted: await deleteExpiredItems(deps.db.pool) };
}
