// Health as a load balancer or supervisor sees it: the process answers, and so does its database.
import type { Deps } from '../context.js';

// A database that does not answer this quickly is as good as gone for a health check.
const DATABASE_CHECK_TIMEOUT_MS = 2_000;

/**
 * Why the process is not ready to serve, or undefined when it is: its database answers a trivial
 * query within a short time, and its event bus listens (after an outage it connects again a moment
 * after the pools do; until then a run's end, signalled over it, would not reach a waiting request).
 * Never throws.
 */
export async function notReadyBecause(deps: Pick<Deps, 'db' | 'events'>): Promise<string | undefined> {
  if (!(await databaseReachable(deps))) return 'The database is not reachable.';
  if (!deps.events.listening) return 'Not listening for events yet.';
  return undefined;
}

/**
 * Whether the database answers a trivial query within a short time. Never throws. The pool drops a
 * connection that failed, so once the database is back the next check (and request) reconnects.
 */
async function databaseReachable(deps: Pick<Deps, 'db'>): Promise<boolean> {
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
