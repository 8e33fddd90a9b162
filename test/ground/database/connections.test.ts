// How the platform talks to PostgreSQL: the embedded server over its Unix socket, and recurring
// statements as named prepared statements (parsed and planned once per connection).
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../../src/db.js';
import { databaseUrl } from '../../support/helpers.js';

describe('database connections', () => {
  const db = connectDatabase(databaseUrl(), { poolSize: 1 });
  afterAll(() => db.close());

  it.skipIf(!!process.env.TEST_DATABASE_URL)('reach the embedded PostgreSQL through its Unix socket', async () => {
    expect(new URL(databaseUrl()).searchParams.get('host')).toMatch(/^\//);
    const { rows } = await db.pool.query<{ address: string | null }>('SELECT inet_server_addr()::text AS address');
    expect(rows[0]!.address).toBeNull();
  });

  it('prepare a parameterised statement once it recurs, and answer it as before', async () => {
    const text = `SELECT $1::int + 1 AS next /* ${Math.random()} */`;
    const prepared = () => db.pool.query<{ count: number }>('SELECT count(*)::int AS count FROM pg_prepared_statements WHERE statement = $1', [text]);
    expect((await db.pool.query(text, [1])).rows).toEqual([{ next: 2 }]);
    expect((await prepared()).rows[0]!.count).toBe(0);
    for (let i = 2; i < 5; i++) expect((await db.pool.query(text, [i])).rows).toEqual([{ next: i + 1 }]);
    expect((await prepared()).rows[0]!.count).toBe(1);
    // Statements without parameters (which may hold several commands) are left alone.
    await db.pool.query('SELECT 1; SELECT 2');
    await db.pool.query('SELECT 1; SELECT 2');
  });
});
