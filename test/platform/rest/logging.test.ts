// One structured log line per request, with a request id; credentials never reach the log.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/platform/app.js';
import { connectDatabase } from '../../../src/db.js';
import { REDACTED_PATHS } from '../../../src/logger.js';
import { ViewerCache } from '../../../src/viewer-cache.js';
import { buildTenant } from '../../support/factories.js';
import { databaseUrl, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

const lines: any[] = [];
let platform: TestPlatform;
let url: string;
let stopApp: () => Promise<void>;
let key: string;

beforeAll(async () => {
  platform = await startTestPlatform();
  key = (await buildTenant(platform.system)).adminKey;
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  // Same app, same redaction rules, logging at debug into memory.
  const logger = pino({ level: 'debug', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, sink);
  const app = buildApp({ ...platform.deps, logger });
  url = await app.start(0, '127.0.0.1');
  stopApp = () => app.stop();
});
afterAll(async () => {
  await stopApp?.();
  await platform?.stop();
});

describe('request logs', () => {
  it('log each request once with its id, echo the id, and never the API key', async () => {
    const response = await fetch(`${url}/api/v1/workspaces`, { headers: { 'x-api-key': key, 'x-request-id': 'req-123' } });
    expect(response.headers.get('x-request-id')).toBe('req-123');
    await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: '{ viewer { apiKeyShortKey } }' }),
    });
    const requestLines = lines.filter((line) => line.req?.id === 'req-123');
    expect(requestLines).toHaveLength(1);
    expect(requestLines[0]).toMatchObject({ req: { method: 'GET', url: '/api/v1/workspaces' }, res: { statusCode: 200 } });
    expect(JSON.stringify(lines)).not.toContain(key);
    // An unknown request id format is replaced by a fresh one.
    const generated = await fetch(`${url}/ok`, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('expected errors stay below error level; a 5 MB variable is neither logged nor echoed whole', async () => {
    const from = lines.length;
    const gql = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'query ($n: Int) { viewer { user { email } } }', variables: { n: 'x'.repeat(5 * 1024 * 1024) } }),
    });
    expect((await gql.text()).length).toBeLessThan(10_000);
    expect((await fetch(`${url}/sessions/${crypto.randomUUID()}`, { headers: { 'x-api-key': key } })).status).toBe(404);
    const post = (body: string) => fetch(`${url}/api/v1/workspaces`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body });
    expect((await post('{}')).status).toBe(422);
    expect((await post('['.repeat(5_000))).status).toBe(422);
    const logged = lines.slice(from);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.filter((line) => line.level >= 50)).toEqual([]);
    expect(Math.max(...logged.map((line) => JSON.stringify(line).length))).toBeLessThan(20_000);
  });

  it('a 5 MB value inside an input object adds a bounded line to the log, below error level', async () => {
    const from = lines.length;
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({
        query: 'mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) { __typename } }',
        variables: { input: { unknownField: 'x'.repeat(5 * 1024 * 1024) } },
      }),
    });
    expect(response.status).toBe(400);
    expect((await response.text()).length).toBeLessThan(10_000);
    const logged = lines.slice(from);
    expect(logged.some((line) => JSON.stringify(line).includes('got invalid value'))).toBe(true);
    expect(Math.max(...logged.map((line) => JSON.stringify(line).length))).toBeLessThan(20_000);
    expect(logged.filter((line) => line.level >= 50)).toEqual([]);
  });

  /** The same app over another database (a cache of its own, none: the platform's has the key's viewer, which needs no database). */
  async function appOn(databaseUrl: string, check: (url: string) => Promise<void>) {
    const broken = connectDatabase(databaseUrl, { poolSize: 2 });
    const app = buildApp({ ...platform.deps, db: broken, viewers: new ViewerCache(0), logger: pino({ level: 'silent' }) });
    try {
      await check(await app.start(0, '127.0.0.1'));
    } finally {
      await app.stop();
      await broken.close();
    }
  }
  const graphqlViewer = (at: string) =>
    fetch(`${at}/graphql`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ viewer { apiKeyShortKey } }' }),
    });

  it('an unexpected failure is a 500 that shows no stack, SQL or connection detail, and is logged', async () => {
    // A server that refuses the login: every request fails unexpectedly.
    const server = new URL(databaseUrl());
    await appOn(`postgresql://agent:secret-password@${server.hostname}:${server.port}/nowhere`, async (brokenUrl) => {
      const rest = await fetch(`${brokenUrl}/api/v1/workspaces`, { headers: { 'x-api-key': key } });
      expect(rest.status).toBe(500);
      expect(await rest.json()).toEqual({ detail: 'Internal server error.' });
      const text = await (await graphqlViewer(brokenUrl)).text();
      expect(text).toContain('Unexpected error.');
      expect(text).not.toMatch(/password|secret-password|127\.0\.0\.1|at \w+ \(|prisma/i);
    });
  });

  it('a database that cannot be reached is a 503 that says only that, which clients retry', async () => {
    await appOn('postgresql://agent:secret-password@127.0.0.1:1/nowhere', async (brokenUrl) => {
      const rest = await fetch(`${brokenUrl}/api/v1/workspaces`, { headers: { 'x-api-key': key } });
      expect(rest.status).toBe(503);
      expect(await rest.json()).toEqual({ detail: 'The database is not reachable; try again.' });
      const text = await (await graphqlViewer(brokenUrl)).text();
      expect(JSON.parse(text).errors[0]).toMatchObject({ message: 'The database is not reachable; try again.', extensions: { code: 'UNAVAILABLE' } });
      expect(text).not.toMatch(/ECONNREFUSED|secret-password|127\.0\.0\.1|at \w+ \(|prisma/i);
    });
  });
});
