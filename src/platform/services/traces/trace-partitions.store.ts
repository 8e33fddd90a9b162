// The partition layout of trace_runs: a partition per week of start_time (migration
// trace_runs_partitioned) and a default one for runs of a week without its own. Partitions are made
// ahead on a schedule (jobs/traces-partitions.job.ts) and dropped whole once every workspace's retention
// has passed (jobs/traces-retention.job.ts).
import type pg from 'pg';
import { escapeLiteral } from 'pg';
import { withTransaction } from '../../../db.js';

/** A weekly partition of trace_runs: its table and range [from, to). */
export type TracePartition = { name: string; from: Date; to: Date; /** No pages as of the last VACUUM or ANALYZE (a hint only). */ empty?: boolean };

/** The week partitions of trace_runs (not the default one), oldest first. */
export async function listTracePartitions(db: pg.Pool | pg.PoolClient): Promise<TracePartition[]> {
  const { rows } = await db.query<TracePartition>(
    `SELECT c.relname AS name, b[1]::timestamptz AS "from", b[2]::timestamptz AS "to", c.relpages = 0 AND c.reltuples <= 0 AS empty
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS b
      WHERE i.inhparent = 'trace_runs'::regclass AND b IS NOT NULL
      ORDER BY 2`,
  );
  return rows;
}

/**
 * Creates the week partitions of trace_runs from the week of `from` up to `to` that do not exist yet.
 * Runs of a week without a partition went to the default partition; they move into the new one (in the
 * same transaction: a partition cannot be attached while the default holds rows of its range). A
 * partition is attached rather than created in place, which locks the parent less.
 */
export async function createTracePartitions(pool: pg.Pool, from: Date, to: Date): Promise<string[]> {
  return withTransaction({ pool }, async (client) => {
    // One creator at a time (the schedule, a test, the benchmark's fill).
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('trace_runs partitions'))`);
    const existing = new Set((await listTracePartitions(client)).map((partition) => partition.from.getTime()));
    const { rows: weeks } = await client.query<{ week: Date }>(
      `SELECT week FROM generate_series(date_trunc('week', $1::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', $2::timestamptz - interval '1 microsecond', interval '1 week') AS week`,
      [from, to],
    );
    const created: string[] = [];
    for (const { week } of weeks) {
      if (existing.has(week.getTime())) continue;
      const name = `trace_runs_${week.toISOString().slice(0, 10).replaceAll('-', '')}`;
      const end = new Date(week.getTime() + 7 * 86_400_000);
      const [lower, upper] = [escapeLiteral(week.toISOString()), escapeLiteral(end.toISOString())];
      await client.query(`CREATE TABLE ${name} (LIKE trace_runs INCLUDING DEFAULTS INCLUDING STORAGE)`);
      // The default partition's rows of this week (a statement on the partition itself, so trace_runs's
      // delete trigger keeps their ids).
      await client.query(
        `WITH moved AS (DELETE FROM trace_runs_default WHERE start_time >= ${lower} AND start_time < ${upper} RETURNING *) INSERT INTO ${name} SELECT * FROM moved`,
      );
      await client.query(`ALTER TABLE trace_runs ATTACH PARTITION ${name} FOR VALUES FROM (${lower}) TO (${upper})`);
      created.push(name);
    }
    return created;
  });
}

/**
 * Drops the week partitions wholly before `horizon` (every workspace's retention has passed for all
 * their runs); returns their names, and those left `busy`. The ids of their runs are released by
 * deleteRunIdsBefore.
 *
 * Dropping a partition takes an ACCESS EXCLUSIVE lock on trace_runs itself, and while the drop waits
 * for it (behind a long read, an export) every query on trace_runs queues behind the drop. So each
 * attempt waits at most `lockTimeoutMs` (100 ms: the longest a query queues behind it), and a busy
 * partition is tried again after `pauseMs`, up to `attempts` times; a partition still busy then is left
 * for the next pass (still past the horizon then, so it goes then), and the pass carries on with the
 * others. (`DETACH PARTITION … CONCURRENTLY`, which would not block readers, is refused while
 * trace_runs has a default partition, and the default partition is where runs of a week without a
 * partition go.)
 */
export async function dropTracePartitionsBefore(
  pool: pg.Pool,
  horizon: Date,
  { lockTimeoutMs = 100, attempts = 10, pauseMs = 1_000 }: { lockTimeoutMs?: number; attempts?: number; pauseMs?: number } = {},
): Promise<{ dropped: string[]; busy: string[] }> {
  const dropped: string[] = [];
  const busy: string[] = [];
  for (const partition of await listTracePartitions(pool)) {
    if (partition.to.getTime() > horizon.getTime()) break;
    for (let attempt = 1; ; attempt++) {
      try {
        await withTransaction({ pool }, async (client) => {
          await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
          await client.query(`DROP TABLE ${partition.name}`);
        });
        dropped.push(partition.name);
        break;
      } catch (error) {
        // 55P03 lock_not_available: the lock timeout passed.
        if ((error as { code?: unknown }).code !== '55P03') throw error;
        if (attempt >= attempts) {
          busy.push(partition.name);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    }
  }
  return { dropped, busy };
}
