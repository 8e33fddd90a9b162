// What a process's logs look like where they go: JSON lines through a pipe (what log collectors
// read), one readable line per entry on a terminal, as `langgraph dev` prints them.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { adminLoginUrl, databaseUrl } from '../../support/helpers.js';
import { spawnPlatform, terminalAvailable } from '../../support/processes.js';

const env = { DATABASE_URL: databaseUrl(), AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl(), AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'info', LOG_PRETTY: undefined };

const linesOf = (output: string) => output.replace(/\r/g, '').split('\n');

describe('log lines', () => {
  it('through a pipe: every log entry is a JSON object on a line of its own', async () => {
    const platform = await spawnPlatform(['start', '--role', 'api', '--port', '0'], env);
    expect(await platform.stop('SIGTERM')).toBe(0);
    const logged = linesOf(platform.output()).filter((line) => line.startsWith('{'));
    expect(logged.map((line) => JSON.parse(line).msg)).toEqual(expect.arrayContaining(['agent platform started', 'shutting down']));
    expect(platform.output()).not.toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] [A-Z]+:/m);
  }, 60_000);

  it.skipIf(!terminalAvailable)('on a terminal: one readable line per entry (time, level, message, fields)', async () => {
    const platform = await spawnPlatform(['start', '--role', 'api', '--port', '0'], env, 60_000, undefined, { terminal: true, ownGroup: true });
    expect(await platform.stopGroup('SIGTERM')).toBe(0);
    // eslint-disable-next-line no-control-regex
    const lines = linesOf(platform.output().replace(/\u001b\[[0-9;]*m/g, ''));
    expect(lines).toContainEqual(expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: agent platform started \{"url":"http:\/\/127\.0\.0\.1:\d+","roles":\["api"\]\}$/));
    expect(lines.filter((line) => line.startsWith('{"level"'))).toEqual([]);
  }, 60_000);
});
