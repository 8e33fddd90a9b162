// Logs are readable lines on a terminal and JSON lines elsewhere, LOG_PRETTY deciding when set.
import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger, logDefaults } from '../../src/logger.js';

/** A stream keeping what a logger writes, line by line, colours taken out. */
function captured(): Writable & { lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').replace(/\u001b\[[0-9;]*m/g, '').split('\n').filter(Boolean));
      done();
    },
  });
  return Object.assign(stream, { lines });
}

describe('log format', () => {
  it('is pretty by default on a terminal, JSON for a pipe or a file, and LOG_PRETTY overrides either', () => {
    expect(loadConfig({}, {}, logDefaults({ isTTY: true })).logPretty).toBe(true);
    expect(loadConfig({}, {}, logDefaults({ isTTY: false })).logPretty).toBe(false);
    // A pipe's stream has no isTTY at all.
    expect(loadConfig({}, {}, logDefaults({})).logPretty).toBe(false);
    expect(loadConfig({ LOG_PRETTY: 'false' }, {}, logDefaults({ isTTY: true })).logPretty).toBe(false);
    expect(loadConfig({ LOG_PRETTY: 'true' }, {}, logDefaults({ isTTY: false })).logPretty).toBe(true);
  });

  it('pretty: one line per entry with its time, level, message and fields, secrets redacted; JSON: one object per line', async () => {
    const pretty = captured();
    createLogger({ logLevel: 'info', logPretty: true }, pretty).info({ port: 4100, user: { password: 'hunter2' } }, 'embedded PostgreSQL started');
    await nextTurn();
    expect(pretty.lines).toHaveLength(1);
    expect(pretty.lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: embedded PostgreSQL started \{"port":4100,"user":\{"password":"\[redacted\]"\}\}$/);

    const json = captured();
    createLogger({ logLevel: 'info', logPretty: false }, json).info({ port: 4100, user: { password: 'hunter2' } }, 'embedded PostgreSQL started');
    expect(json.lines).toHaveLength(1);
    expect(JSON.parse(json.lines[0]!)).toMatchObject({ level: 30, msg: 'embedded PostgreSQL started', port: 4100, user: { password: '[redacted]' }, pid: process.pid });
  });
});
