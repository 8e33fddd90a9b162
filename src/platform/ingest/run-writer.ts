// Group commit for ingest's common batch (posts only): concurrent requests of one ingester share one
// INSERT statement instead of one statement each, through the Coalescer the run path's writes use.
//
// Why: with a statement per request, every request in flight holds a connection, so 32 concurrent
// SDK clients meant about 20 PostgreSQL backends inserting at once on a 2-core machine, where the raw
// ceiling reaches its rate with 4; the extra backends cost CPU per run (WAL insertion and buffer
// locks, context switches) and every parsed batch stayed in memory while it waited for a connection.
// Here at most `connections` statements run at once per process; requests that arrive meanwhile wait,
// and those of the oldest waiting ingester are the next statement (up to `maxRuns` runs). There is no
// timer: a lone request is written at once, and under load a group is whatever arrived during one statement.
//
// Each request is answered only after the statement holding its runs has committed (no acknowledged
// run is lost). Requests are grouped only with the same ingester (workspace, API key, user: the
// statement's per-request parameters). When a grouped statement fails, each of its requests is
// written alone, so one request's bad value fails only that request.
import type pg from 'pg';
import { Coalescer } from '../../database/coalescer.js';
import { type Ingester, ingesterKey } from './ingest-types.js';
import type { NormalizedRun } from './ingest-types.js';

/** Writes runs of one ingester in one statement (and what follows it); answers the ids it stored. */
export type WriteRuns = (client: pg.PoolClient, who: Ingester, runs: NormalizedRun[]) => Promise<Set<string>>;

export type RunWriter = {
  /** Stores these runs (ids unique within them) with the next statement for `who`; answers which of them were stored. */
  write(who: Ingester, runs: NormalizedRun[]): Promise<Set<string>>;
};

type Request = { who: Ingester; runs: NormalizedRun[] };

export function createRunWriter(pool: pg.Pool, writeRuns: WriteRuns, options: { connections: number; maxRuns: number }): RunWriter {
  const requests = new Coalescer<Request, Set<string>>((group) => writeGroup(pool, writeRuns, group), {
    maxInFlight: options.connections,
    key: (request) => ingesterKey(request.who),
    weight: (request) => request.runs.length,
    maxWeight: options.maxRuns,
  });
  return { write: (who, runs) => requests.add({ who, runs }) };
}

/** One statement for the group's runs; each request's answer is which of its own runs were stored. */
async function writeGroup(pool: pg.Pool, writeRuns: WriteRuns, group: Request[]): Promise<Set<string>[]> {
  // The first request holding an id stores it; a later request's copy is its duplicate (409).
  const claimed = new Set<string>();
  const runs: NormalizedRun[] = [];
  const own = group.map((request) =>
    request.runs.filter((run) => {
      if (claimed.has(run.id)) return false;
      claimed.add(run.id);
      runs.push(run);
      return true;
    }),
  );
  const client = await pool.connect();
  try {
    const stored = await writeRuns(client, group[0]!.who, runs);
    return own.map((mine) => {
      const ids = new Set<string>();
      for (const run of mine) if (stored.has(run.id)) ids.add(run.id);
      return ids;
    });
  } finally {
    client.release();
  }
}
