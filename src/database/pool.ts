import pg from 'pg';

/**
 * A pg pool that outlives its database's outages; every pool of the platform and of agent servers is
 * made here. A connection that breaks emits 'error' on its client, and pg-pool listens only while
 * the client is idle: one checked out (inside a transaction, a checkpoint's write, a sweep's
 * statements) emitted it unheard, an uncaught exception, and a database restart ended the process.
 * The statement in flight fails with the error anyway, the pool drops a client that is no longer
 * queryable when it is released, and the next checkout connects anew once the database is back.
 */
export function createPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
