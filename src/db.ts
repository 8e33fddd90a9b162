// Database access: one pg pool shared by Prisma (through its driver adapter) and raw SQL.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PreparingClient } from './database/prepared-statements.js';
import { createPool } from './database/pool.js';
import { PrismaClient } from './generated/prisma/client.js';

;
;

export type Database = {
  url: string;
  prisma: PrismaClient;
  pool: pg.Pool;
  /** Resolves when no connection is checked out (or after `timeoutMs`): lets in-flight work finish. */
  drain(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
};

export function connectDatabase(url: string, options: { poolSize: number; applicationName?: string }): Database {
  const pool = createPool({
    connectionString: url,
    max: options.poolSize,
    application_name: options.applicationName ?? 'agent-platform',
    Client: PreparingClient,
  });
  // Prisma's defaults (2 s to start an interactive transaction, 5 s to finish it) turn a busy machine
  // into 500s; a request would rather wait for a connection. Past these bounds the error answers 503.
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions: { maxWait: 10_000, timeout: 30_000 } });
  return {
    url,
    prisma,
    pool,
    async drain(timeoutMs) {
      // A request whose client hung up still runs its handler after the HTTP server closed; wait for
      // the queries it is making rather than cutting them off with "pool has ended" errors.
      const deadline = Date.now() + timeoutMs;
      while (pool.totalCount - pool.idleCount > 0 || pool.waitingCount > 0) {
        const left = deadline - Date.now();
        if (left <= 0) return;
        await new Promise<void>((resolve) => {
          const onRelease = () => {
            clearTimeout(timer);
            // Let the handler issue its next query before counting again.
            setImmediate(resolve);
          };
          const timer = setTimeout(() => {
            pool.off('release', onRelease);
            resolve();
          }, Math.min(left, 50));
          pool.once('release', onRelease);
        });
      }
    },
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

/** Transaction client type, for services that accept either the client or a transaction. */
/**
 * Runs `work` in one transaction on a client of the pool: committed when it resolves, rolled back
 * when it throws (the error is rethrown), the client released either way.
 */
export async function withTransaction<T>(db: Pick<Database, 'pool'>, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    return await inTransaction(client, () => work(client));
  } finally {
    client.release();
  }
}

/** Runs `work` in one transaction on `client`: committed when it resolves, rolled back (and rethrown) when it throws. */
export async function inTransaction<T>(client: pg.PoolClient, work: () => Promise<T>): Promise<T> {
  try {
    await client.query('BEGIN');
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** PostgreSQL's deadlock_detected: it rolled this statement's transaction back so that another could go on. */
const DEADLOCK_DETECTED = '40P01';

/**
 * Runs `work` (a statement, or a whole transaction) again when PostgreSQL ended it as a deadlock's
 * victim, up to `attempts` times in all. Its writes were undone, so running it again is safe when
 * `work` only writes to the database.
 */
export async function retryingDeadlocks<T>(attempts: number, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if ((error as { code?: unknown }).code !== DEADLOCK_DETECTED || attempt >= attempts) throw error;
    }
  }
}
