// `agent-platform admin …`: operators create organizations, workspaces, users and keys from the shell.
import { describe, expect, it } from 'vitest';
import { databaseUrl, graphql, startTestPlatform } from '../../support/helpers.js';
import { runCli } from '../../support/processes.js';
import { randomBytes, randomUUID } from 'node:crypto';

const env = () => ({ DATABASE_URL: databaseUrl(), AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64') });
const admin = async (...args: string[]) => {
  const result = await runCli(['admin', ...args], env());
  if (result.code !== 0) throw new Error(`admin ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
};

describe('agent-platform admin', () => {
  // Six CLI processes one after another, each a Node start loading the sources: with another test file
  // starting processes on the other core, that took over 60 s on a loaded 2-core machine.
  it('creates an organization, workspace, user and key; the key authenticates; revoke stops it', async () => {
    const org = JSON.parse(await admin('--json', 'orgs', 'create', '--name', `CLI ${randomUUID().slice(0, 6)}`, '--plan', 'plus'));
    expect(org).toMatchObject({ planTier: 'plus', selfHosted: true });
    const workspace = JSON.parse(await admin('--json', 'workspaces', 'create', '--org', org.id, '--name', 'Team'));
    const email = `cli-${randomUUID()}@example.test`;
    const user = JSON.parse(
      await admin('--json', 'users', 'create', '--org', org.id, '--email', email, '--workspace', `${workspace.id}:WORKSPACE_EDITOR`),
    );
    expect(user.email).toBe(email);

    // Without --json the key is printed alone, so `KEY=$(agent-platform admin keys create …)` works.
    const stdout = await admin('keys', 'create', '--org', org.id, '--user', user.id, '--workspace', workspace.id);
    expect(stdout).toMatch(/^apk_[\w-]{40}\n$/);
    const key = stdout.trim();

    const listed = JSON.parse(await admin('--json', 'keys', 'list', '--org', org.id));
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ userId: user.id, workspaceId: workspace.id });
    expect(JSON.stringify(listed)).not.toContain(key);
    expect(listed[0].secretHash).toBeUndefined();

    const platform = await startTestPlatform();
    try {
      const { body } = await graphql(platform.url, '{ viewer { user { email } workspace { name } } }', { key });
      expect(body.data.viewer).toEqual({ user: { email }, workspace: { name: 'Team' } });
      await admin('keys', 'revoke', listed[0].id);
      expect((await graphql(platform.url, '{ viewer { apiKeyShortKey } }', { key })).status).toBe(401);
    } finally {
      await platform.stop();
    }
  }, 180_000);

  it('reports bad input as an error, not a stack trace', async () => {
    const result = await runCli(['admin', 'workspaces', 'create', '--org', 'not-a-uuid', '--name', 'x'], env());
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: organizationId/m);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('a bad configuration lists every problem and exits non-zero', async () => {
    const result = await runCli(['start'], { DATABASE_URL: 'mysql://nope', PORT: 'eighty', AGENT_PLATFORM_ROLES: 'api,chef' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Invalid configuration');
    for (const name of ['DATABASE_URL', 'PORT', 'AGENT_PLATFORM_ROLES']) expect(result.stderr).toContain(name);
  });

  it('an external database without a secret key is refused with a clear message', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: databaseUrl(), AGENT_PLATFORM_SECRET_KEY: '' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('AGENT_PLATFORM_SECRET_KEY is required');
  });
});
