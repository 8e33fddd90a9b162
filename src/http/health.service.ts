// Health as a load balancer or supervisor sees it: the process answers, and so does its database.
import type { Deps } from '../context.js';

// A database that does not answer this quickly is as good as gone for a health check.
const DATABASE_CHECK_TIMEOUT_MS = 2_000;

/**
 * Whether the database answers a trivial query within a short time. Never throws. The pool drops a
 * connection that failed, so once the database is back the next check (and request) reconnects.
 */
export async function databaseReachable(deps: Pick<Deps, 'db'>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), DATABASE_CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([deps.db.pool.query('SELECT 1').then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
