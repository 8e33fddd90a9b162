// Health as a load balancer or supervisor sees it: the process answers, and so does each dependency it
// serves from (its database, and its event bus, over which a run's end reaches a waiting request).
import type { Deps } from '../context.js';

// A database that does not answer this quickly is as good as gone for a health check.
const DATABASE_CHECK_TIMEOUT_MS = 2_000;

/** One dependency's state: `ok`, or why not; how long the check took when it queried something. */
type DependencyCheck = { status: 'ok' | 'unavailable'; detail?: string; latency_ms?: number };

export type HealthReport = {
  ok: boolean;
  /** The first dependency's reason, when one is not ok (what a balancer's log shows). */
  detail?: string;
  checks: { postgres: DependencyCheck; event_bus: DependencyCheck };
};

/**
 * Each dependency's state, and whether the process is ready: its database answers a trivial query
 * within a short time, and its event bus listens (after an outage it connects again a moment after the
 * pools do; until then a run's end, signalled over it, would not reach a waiting request). Never throws.
 */
export async function checkHealth(deps: Pick<Deps, 'db' | 'events'>): Promise<HealthReport> {
  const postgres = await checkDatabase(deps);
  const eventBus: DependencyCheck = deps.events.listening ? { status: 'ok' } : { status: 'unavailable', detail: 'Not listening for events yet.' };
  const checks = { postgres, event_bus: eventBus };
  const detail = Object.values(checks).find((check) => check.status !== 'ok')?.detail;
  return detail ? { ok: false, detail, checks } : { ok: true, checks };
}

/**
 * The database answers a trivial query within a short time. The pool drops a connection that failed,
 * so once the database is back the next check (and request) reconnects.
 */
async function checkDatabase(deps: Pick<Deps, 'db'>): Promise<DependencyCheck> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), DATABASE_CHECK_TIMEOUT_MS);
  });
  try {
    const answered = await Promise.race([deps.db.pool.query('SELECT 1').then(() => true, () => false), timeout]);
    const latency = Math.round(performance.now() - started);
    return answered ? { status: 'ok', latency_ms: latency } : { status: 'unavailable', detail: 'The database is not reachable.', latency_ms: latency };
  } finally {
    clearTimeout(timer);
  }
}
