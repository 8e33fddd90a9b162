// Expected failures (not found, validation, limits) are logged below error level, and no log line or
// answer carries a client's megabytes back: what is logged and echoed is capped.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { buildTenant } from '../factories.js';
import { startTestPlatform, type TestPlatform } from '../helpers.js';

const lines: { level: number }[] = [];
const raw: string[] = [];
let platform: TestPlatform;
let url: string;
let stopApp: () => Promise<void>;
let key: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  key = (await buildTenant(platform.system)).adminKey;
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  const app = buildApp({ ...platform.deps, logger: pino({ level: 'debug' }, sink) });
  url = await app.start(0, '127.0.0.1');
  stopApp = () => app.stop();
});
afterAll(async () => {
  await stopApp?.();
  await platform?.stop();
});

describe('log levels and sizes', () => {
  it('expected errors stay below error level; a 5 MB variable is neither logged nor echoed whole', async () => {
    const huge = 'x'.repeat(5 * 1024 * 1024);
    const gql = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'query ($n: Int) { viewer { user { email } } }', variables: { n: huge } }),
    });
    expect((await gql.text()).length).toBeLessThan(10_000);
    const notFound = await fetch(`${url}/sessions/${crypto.randomUUID()}`, { headers: { 'x-api-key': key } });
    expect(notFound.status).toBe(404);
    const invalid = await fetch(`${url}/api/v1/workspaces`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' });
    expect(invalid.status).toBe(422);
    const deep = await fetch(`${url}/api/v1/workspaces`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '['.repeat(5_000) });
    expect(deep.status).toBe(422);

    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(Math.max(...raw.map((line) => line.length))).toBeLessThan(20_000);
  });
});
