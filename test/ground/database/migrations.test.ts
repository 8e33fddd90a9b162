// Each tree's migrations must build exactly its schema (prisma/migrations and schema.prisma, the
// platform's; src/agent-server/prisma/, the agent server's), and the start-up migrator must apply them
// idempotently.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { migrateDatabase, readMigrations } from '../../../src/database/migrate.js';
import { databaseUrl } from '../../support/helpers.js';

const run = promisify(execFile);

describe('migrations', () => {
  it('match their schema.prisma (no drift: create one with `npm run db:migration -- [--agent-server] <name>`)', async () => {
    // A child process: it starts its own throwaway PostgreSQL, replays the migrations and diffs.
    const result = await run(process.execPath, ['--import', 'tsx', 'scripts/db-migration.ts', '--check'], {
      cwd: new URL('../../..', import.meta.url).pathname,
    }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    expect('code' in result ? `${result.stdout}\n${result.stderr}` : '').toBe('');
  }, 120_000);

  it('are recorded in _prisma_migrations and re-running applies nothing', async () => {
    const logger = pino({ level: 'silent' });
    expect(await migrateDatabase(databaseUrl(), logger, 'platform')).toEqual([]);
    const client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    const { rows } = await client.query('SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL ORDER BY migration_name');
    await client.end();
    expect(rows.map((row) => row.migration_name)).toEqual(readMigrations('platform').map((m) => m.name));
  });
});
