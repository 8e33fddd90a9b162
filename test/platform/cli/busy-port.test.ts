// A newcomer whose port is taken gets one line saying so and a non-zero exit, not a stack trace.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../support/processes.js';
import { adminLoginUrl, databaseUrl } from '../../support/helpers.js';

const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-busy-port-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('agent-platform start on a busy port', () => {
  it('says the port is in use and how to choose another, and exits 1', async () => {
    const occupant = createServer();
    await new Promise<void>((resolve) => occupant.listen(0, '127.0.0.1', resolve));
    const { port } = occupant.address() as { port: number };
    try {
      const result = await runCli(['start', '--port', String(port), '--data-dir', dataDir], { DATABASE_URL: databaseUrl(), AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl(), AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'warn' });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`port ${port} is in use; choose another with --port or PORT`);
      expect(`${result.stdout}${result.stderr}`).not.toMatch(/Internal error|at .*\.js:\d+/);
      // What it started before the port turned out taken ended with it: the compile caches' warm-up
      // (a process of its own) no longer writes under the data directory.
      const caches = join(dataDir, 'runtime-cache');
      expect(existsSync(caches) ? readdirSync(caches).filter((name) => name.startsWith('building-')) : []).toEqual([]);
    } finally {
      occupant.close();
    }
  }, 90_000);
});
