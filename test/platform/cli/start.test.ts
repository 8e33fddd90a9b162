// What a newcomer meets: `agent-platform start` on the embedded defaults brings everything up, prints
// one API key on a line of its own, answers with it, stops cleanly on SIGTERM and keeps its data, and
// after a kill -9 starts again on the PostgreSQL it left running.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { graphql } from '../../support/helpers.js';
import { spawnPlatform } from '../../support/processes.js';

const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-start-'));
// No DATABASE_URL: the platform must start its own PostgreSQL.
const env = { DATABASE_URL: undefined, AGENT_PLATFORM_SECRET_KEY: undefined };
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('agent-platform start (embedded PostgreSQL)', () => {
  let key = '';
  let workspaceId = '';

  it('first start: prints the URLs and one API key that works for GraphQL and REST', async () => {
    const platform = await spawnPlatform(['start', '--port', '0', '--data-dir', dataDir], env, 90_000);
    try {
      const keyLines = platform.output().split('\n').filter((line) => line.startsWith('API key: '));
      expect(keyLines).toHaveLength(1);
      key = keyLines[0]!.slice('API key: '.length).trim();
      expect(key).toMatch(/^apk_[\w-]{40}$/);
      expect(platform.output()).toContain(`${platform.url}/graphql`);

      expect(await (await fetch(`${platform.url}/ok`)).json()).toMatchObject({ ok: true, checks: { postgres: { status: 'ok' }, event_bus: { status: 'ok' } } });
      const { status, body } = await graphql(platform.url, '{ viewer { user { email } organization { planTier } workspaces { id name } } }', { key });
      expect(status).toBe(200);
      expect(body.data.viewer).toMatchObject({ user: { email: 'admin@localhost' }, organization: { planTier: 'enterprise' } });
      workspaceId = body.data.viewer.workspaces[0].id;

      const created = await fetch(`${platform.url}/api/v1/workspaces`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ display_name: 'Second' }),
      });
      expect(created.status).toBe(200);
      // The platform never writes the key itself anywhere but stdout.
      expect(platform.output().match(new RegExp(key, 'g'))?.length).toBeGreaterThanOrEqual(1);
    } finally {
      expect(await platform.stop('SIGTERM')).toBe(0);
    }
    // Graceful stop also stopped the embedded PostgreSQL.
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 120_000);

  it('restart: keeps the data, prints no new key, the old key still works', async () => {
    const platform = await spawnPlatform(['start', '--port', '0', '--data-dir', dataDir], env, 90_000);
    try {
      expect(platform.output()).not.toContain('API key: ');
      const { body } = await graphql(platform.url, '{ viewer { workspaces { id name } } }', { key });
      expect(body.data.viewer.workspaces.map((w: { name: string }) => w.name).sort()).toEqual(['Default Workspace', 'Second']);
      expect(body.data.viewer.workspaces.map((w: { id: string }) => w.id)).toContain(workspaceId);
    } finally {
      expect(await platform.stop('SIGINT')).toBe(0);
    }
  }, 120_000);

  it('Ctrl-C (SIGINT to the whole process group) stops as cleanly as SIGTERM: exit 0, no error logged, PostgreSQL stopped', async () => {
    const platform = await spawnPlatform(['start', '--port', '0', '--data-dir', dataDir], env, 90_000, undefined, { ownGroup: true });
    const { body } = await graphql(platform.url, '{ viewer { workspaces { id } } }', { key });
    expect(body.data.viewer.workspaces.map((w: { id: string }) => w.id)).toContain(workspaceId);
    expect(await platform.stopGroup('SIGINT')).toBe(0);
    // pino's error and fatal levels; LOG_LEVEL is warn, so they would be printed.
    expect(platform.output()).not.toMatch(/"level":(50|60)/);
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 120_000);

  it('kill -9 of its process: the next start adopts the PostgreSQL it left running, serves, and stops it when it stops', async () => {
    const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
    const postgresPid = () => Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    const killed = await spawnPlatform(['start', '--port', '0', '--data-dir', dataDir], env, 90_000);
    const orphan = postgresPid();
    expect(await killed.stop('SIGKILL')).toBe(null);
    // PostgreSQL runs in a process group of its own (a terminal's Ctrl-C is the platform's to handle): it outlived the platform.
    expect(() => process.kill(orphan, 0)).not.toThrow();

    try {
      const next = await spawnPlatform(['start', '--port', '0', '--data-dir', dataDir], env, 90_000);
      try {
        const { body } = await graphql(next.url, '{ viewer { workspaces { id } } }', { key });
        expect(body.data.viewer.workspaces.map((w: { id: string }) => w.id)).toContain(workspaceId);
        // The same server, adopted: not a second one started beside it, nor a failure on its lock file.
        expect(postgresPid()).toBe(orphan);
      } finally {
        expect(await next.stop('SIGTERM')).toBe(0);
      }
      // It stopped the server it adopted, as the killed process would have: nothing left running.
      expect(existsSync(pidFile)).toBe(false);
      expect(() => process.kill(orphan, 0)).toThrow();
    } finally {
      // Whatever failed, no server outlives the test (its folder goes with afterAll).
      if (existsSync(pidFile)) process.kill(postgresPid(), 'SIGINT');
    }
  }, 180_000);
});
