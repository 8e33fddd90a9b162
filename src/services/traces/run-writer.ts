// Group commit for ingest's common batch (posts only): concurrent requests of one ingester share one
// INSERT statement instead of one statement each.
//
// Why: with a statement per request, every request in flight holds a connection, so 32 concurrent
// SDK clients meant about 20 PostgreSQL backends inserting at once on a 2-core machine, where the raw
// ceiling reaches its rate with 4; the extra backends cost CPU per run (WAL insertion and buffer
// locks, context switches) and every parsed batch stayed in memory while it waited for a connection.
// Here at most `connections` statements run at once per process; requests that arrive meanwhile wait
// in a group, and the whole group is the next statement (up to `maxRuns` runs). There is no timer: a
// lone request is written at once, and under load a group is whatever arrived during one statement.
//
// Each request is answered only after the statement holding its runs has committed (no acknowledged
// run is lost). Requests are grouped only with the same ingester (workspace, API key, user: the
// statement's per-request parameters). When a grouped statement fails, each of its requests is
// written alone, so one request's bad value fails only that request.
import type pg from 'pg';
import { type Ingester, ingesterKey } from './ingest-types.js';
import type { NormalizedRun } from './ingest.service.js';

/** Writes runs of one ingester in one statement (and what follows it); answers the ids it stored. */
export type WriteRuns = (client: pg.PoolClient, who: Ingester, runs: NormalizedRun[]) => Promise<Set<string>>;

type Waiter = { runs: NormalizedRun[]; resolve: (stored: Set<string>) => void; reject: (error: unknown) => void };
type Group = { key: string; who: Ingester; waiters: Waiter[]; runs: number };

export type RunWriter = {
  /** Stores these runs (ids unique within them) with the next statement for `who`; answers which of them were stored. */
  write(who: Ingester, runs: NormalizedRun[]): Promise<Set<string>>;
};

export type RunWriterStats = { statements: number; requests: number; runs: number };


export function createRunWriter(pool: pg.Pool, writeRuns: WriteRuns, options: { connections: number; maxRuns: number }): RunWriter & { stats: RunWriterStats } {
  const queue: Group[] = [];
  const stats: RunWriterStats = { statements: 0, requests: 0, runs: 0 };
  let writing = 0;

  const next = () => {
    while (writing < options.connections && queue.length) {
      const group = queue.shift()!;
      writing++;
      void writeGroup(group).finally(() => {
        writing--;
        next();
      });
    }
  };

  async function writeGroup(group: Group): Promise<void> {
    // The first request holding an id stores it; a later request's copy is its duplicate (409).
    const claimed = new Set<string>();
    const runs: NormalizedRun[] = [];
    const mine = group.waiters.map((waiter) => {
      const ids: string[] = [];
      for (const run of waiter.runs) {
        if (claimed.has(run.id)) continue;
        claimed.add(run.id);
        ids.push(run.id);
        runs.push(run);
      }
      return ids;
    });
    try {
      const stored = await withClient(pool, (client) => writeRuns(client, group.who, runs));
      stats.statements++;
      stats.requests += group.waiters.length;
      stats.runs += runs.length;
      group.waiters.forEach((waiter, i) => waiter.resolve(new Set(mine[i]!.filter((id) => stored.has(id)))));
    } catch (error) {
      if (group.waiters.length === 1) {
        group.waiters[0]!.reject(error);
        return;
      }
      // Tell the failing request apart: each request alone, one after another.
      for (const waiter of group.waiters) {
        await withClient(pool, (client) => writeRuns(client, group.who, waiter.runs)).then(waiter.resolve, waiter.reject);
      }
    }
  }

  return {
    stats,
    write(who, runs) {
      return new Promise((resolve, reject) => {
        const key = ingesterKey(who);
        // Join the newest waiting group of this ingester when the runs fit; otherwise start one.
        let group: Group | undefined;
        for (let i = queue.length - 1; i >= 0; i--) {
          if (queue[i]!.key === key) {
            group = queue[i];
            break;
          }
        }
        if (!group || group.runs + runs.length > options.maxRuns) {
          group = { key, who, waiters: [], runs: 0 };
          queue.push(group);
        }
        group.waiters.push({ runs, resolve, reject });
        group.runs += runs.length;
        next();
      });
    },
  };
}

async function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await work(client);
  } finally {
    client.release();
  }
}
