import { describe, expect, it } from 'vitest';
import { ChildOutputLog } from '../../../src/platform/launcher/child-output.js';

function collect(limit?: number) {
  const lines: { type: string; message: string }[] = [];
  const log = new ChildOutputLog(async (type, message) => void lines.push({ type, message }), limit);
  return { log, lines };
}

describe("a runtime child's output in its revision's log", () => {
  it('masks the values of its environment that are secret, also split across chunks and lines', async () => {
    const { log, lines } = collect();
    log.hide(['sk-live-123456', '-----BEGIN KEY-----\nAAAABBBBCCCC\n-----END KEY-----', 'ab']);
    log.append('key is sk-live-');
    log.append('123456 ok\nkey line AAAABBBBCCCC\nab stays: short values are not masked\n');
    await log.drain();
    const text = lines.map((line) => line.message).join('\n');
    expect(text).toBe('key is [redacted] ok\nkey line [redacted]\nab stays: short values are not masked');
    expect(log.mask('failed with sk-live-123456')).toBe('failed with [redacted]');
  });

  it('goes to the build log, then to the deploy log, in order', async () => {
    const { log, lines } = collect();
    log.append('loading\n');
    await log.drain();
    log.type = 'deploy';
    log.append('serving\n');
    log.append('partial line');
    await log.drain();
    expect(lines).toEqual([
      { type: 'build', message: 'loading' },
      { type: 'deploy', message: 'serving\npartial line' },
    ]);
  });

  it('keeps a bounded amount per revision and says so', async () => {
    const { log, lines } = collect(100);
    for (let i = 0; i < 50; i++) log.append(`line ${i} of a chatty graph\n`);
    await log.drain();
    log.append('more after the bound\n');
    await log.drain();
    const text = lines.map((line) => line.message).join('\n');
    expect(text.length).toBeLessThan(200);
    expect(text).toContain("the runtime's further output is not kept");
    expect(text).not.toContain('more after the bound');
  });
});
