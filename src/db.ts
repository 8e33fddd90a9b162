// Database access: one pg pool shared by Prisma (through its driver adapter) and raw SQL.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client.js';

export type { PrismaClient } from './generated/prisma/client.js';
export { Prisma } from './generated/prisma/client.js';

export type Database = {
  url: string;
  prisma: PrismaClient;
  pool: pg.Pool;
  close(): Promise<void>;
};

export function connectDatabase(url: string, options: { poolSize: number; applicationName?: string }): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize,
    application_name: options.applicationName ?? 'agent-platform',
  });
  // An idle client that loses its connection emits here; without a listener the process would crash.
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    url,
    prisma,
    pool,
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

/** Transaction client type, for services that accept either the client or a transaction. */
export type Tx = import("./generated/prisma/client.js").Prisma.TransactionClient;
