// langgraph.json `http.cors` as the agent server reads it: the reference's field names, and a bad
// value named (with the rest of the file's problems) before anything serves.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGraphConfig } from '../../src/contracts/graph-config.js';
import type { AppError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'graph-config-cors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configWith(http: unknown): string {
  const path = join(dir, `langgraph-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ graphs: { agent: './agent.ts:graph' }, http }));
  return path;
}

describe('http.cors in langgraph.json', () => {
  it('is read with the reference’s field names', () => {
    const config = readGraphConfig(
      configWith({
        app: './app.ts:app',
        cors: {
          allow_origins: ['https://chat.example'],
          allow_origin_regex: 'https://.*\\.example\\.com',
          allow_methods: ['get', 'POST'],
          allow_headers: ['Content-Type', 'Authorization'],
          allow_credentials: true,
          expose_headers: ['X-Trace'],
          max_age: 600,
        },
      }),
    );
    expect(config.cors).toEqual({
      allowOrigins: ['https://chat.example'],
      allowOriginRegex: 'https://.*\\.example\\.com',
      allowMethods: ['GET', 'POST'],
      allowHeaders: ['Content-Type', 'Authorization'],
      allowCredentials: true,
      exposeHeaders: ['X-Trace'],
      maxAge: 600,
    });
    expect(readGraphConfig(configWith({ app: './app.ts:app' })).cors).toBeUndefined();
  });

  it('names every bad value', () => {
    let error: AppError | undefined;
    try {
      readGraphConfig(configWith({ cors: { allow_origin_regex: 'https://(unclosed', allow_headers: ['Content Type'], max_age: -1, allow_credentials: 'yes' } }));
    } catch (thrown) {
      error = thrown as AppError;
    }
    expect(error?.code).toBe('VALIDATION_FAILED');
    const locs = (error?.details as { loc: (string | number)[] }[]).map((detail) => detail.loc.join('.'));
    expect(locs).toEqual(
      expect.arrayContaining([
        expect.stringContaining('http.cors.allow_origin_regex'),
        expect.stringContaining('http.cors.allow_headers.0'),
        expect.stringContaining('http.cors.max_age'),
        expect.stringContaining('http.cors.allow_credentials'),
      ]),
    );
  });
});
