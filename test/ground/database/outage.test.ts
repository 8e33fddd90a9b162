// The database going away under a running server: /ok says so (503) instead of answering 200 while
// every call fails, and once PostgreSQL is back the pools reconnect and the same key works again.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateDatabase } from '../../../src/database/migrate.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { startStoppablePostgres, type StoppablePostgres } from '../../support/stoppable-postgres.js';

let postgres: StoppablePostgres;
let platform: TestPlatform;

beforeAll(async () => {
  // A PostgreSQL of its own, so it can be stopped and started again under the server.
  postgres = await startStoppablePostgres();
  const url = await postgres.createDatabase('outage');
  await migrateDatabase(url, pino({ level: 'silent' }), 'platform');
  platform = await startTestPlatform({ config: { DATABASE_URL: url, AGENT_PLATFORM_INGEST_THREADS: '0' } });
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  await postgres?.close();
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
    // Which dependency is away, as well as that one is.
    expect(await down.json()).toEqual({
      ok: false,
      detail: expect.stringMatching(/database/),
      checks: { postgres: { status: 'unavailable', detail: expect.stringMatching(/database/), latency_ms: expect.any(Number) }, event_bus: expect.any(Object) },
    });

    await postgres.start();
    await expect.poll(async () => (await fetch(`${platform.url}/ok`)).status, { timeout: 20_000, interval: 200 }).toBe(200);
    expect((await sessions()).status).toBe(200);
  }, 90_000);
});
