import pg from 'pg';

/**
 * How long a pool keeps a connection nobody uses. pg closes one after 10 s, so a process that serves a
 * request every few seconds closed and opened connections all the time: a PostgreSQL backend forked,
 * a password exchange and the statements prepared again, each costing more CPU than the run it served.
 * The pools are small, so keeping their connections is cheap; a burst's extra ones close after this.
 */
export const POOL_IDLE_TIMEOUT_MS = 5 * 60_000;

/**
 * A pg pool that outlives its database's outages; every pool of the platform and of agent servers is
 * made here. A connection that breaks emits 'error' on its client, and pg-pool listens only while
 * the client is idle: one checked out (inside a transaction, a checkpoint's write, a sweep's
 * statements) emitted it unheard, an uncaught exception, and a database restart ended the process.
 * The statement in flight fails with the error anyway, the pool drops a client that is no longer
 * queryable when it is released, and the next checkout connects anew once the database is back.
 * Idle connections are kept (POOL_IDLE_TIMEOUT_MS) rather than closed after pg's 10 s.
 */
export function createPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool({ idleTimeoutMillis: POOL_IDLE_TIMEOUT_MS, ...config });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
