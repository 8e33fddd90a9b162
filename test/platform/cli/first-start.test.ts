// A newcomer's first start, as the README says it: `npm start` in a fresh copy of the checkout, with
// the default data directory (`.data`, relative to where it starts), then a deploy. It prints no
// warning, and the deployment's agent server starts from the compile caches the platform warmed.
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { echoGraph, makeGitRepo } from '../../support/deployments.js';
import { graphql } from '../../support/helpers.js';
import { runCli, spawnPlatform } from '../../support/processes.js';

const CHECKOUT = new URL('../../../', import.meta.url).pathname;

/** A copy of the checkout made of links to its files, without its data directory: a clone as a newcomer has it. */
function linkedCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-first-start-'));
  // Open to others' traversal, as `git clone` makes a folder.
  chmodSync(dir, 0o755);
  for (const name of readdirSync(CHECKOUT)) if (name !== '.data' && name !== '.git') symlinkSync(join(CHECKOUT, name), join(dir, name));
  return dir;
}

/** Every file under `dir`, by its path there. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

const clone = linkedCopy();
afterAll(() => rmSync(clone, { recursive: true, force: true }));

// Nothing of the test run's own configuration: the defaults, as on a fresh machine (info-level logs).
const env: Record<string, string | undefined> = {
  ...Object.fromEntries(
    Object.keys(process.env)
      .filter((name) => /^(DATABASE_URL|AGENT_PLATFORM_|AGENT_SERVER_|LOG_|PORT$|HOST$|PUBLIC_URL$)/.test(name))
      .map((name) => [name, undefined]),
  ),
  LOG_LEVEL: undefined,
  // npm runs the start script's `node` from PATH: this one.
  PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
};

describe('npm start on a fresh copy of the checkout', () => {
  it('starts without a warning, deploys, and the deployment starts from the warmed compile caches', async () => {
    const platform = await spawnPlatform(['--port', '0'], env, 180_000, undefined, { via: ['npm', 'start', '--'], cwd: clone, ownGroup: true });
    try {
      const key = /^API key: (\S+)$/m.exec(platform.output())![1]!;
      const { body } = await graphql(platform.url, '{ viewer { workspaces { id } } }', { key });
      const workspaceId: string = body.data.viewer.workspaces[0].id;

      const repo = makeGitRepo(echoGraph('v1'));
      const deployed = await runCli(['deploy', repo.dir, '--name', 'first', '--wait'], { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: key, AGENT_PLATFORM_TENANT_ID: workspaceId });
      expect(deployed.stderr).toBe('');
      expect(deployed.stdout).toContain('DEPLOYED');
      const deploymentId = /^Deployment (\S+) /m.exec(deployed.stdout)![1]!;
      const client = new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, defaultHeaders: { 'x-api-key': key } });
      expect(await client.runs.wait(null, 'agent', { input: { input: 'hello' } })).toMatchObject({ reply: 'v1: hello' });

      // The data directory is the default one, where `npm start` ran.
      const data = join(clone, '.data');
      const seed = join(data, 'runtime-cache', 'seed');
      const deployment = join(data, 'deployments', deploymentId);
      // Its caches were started from the seed the platform warmed...
      expect(readFileSync(join(deployment, 'cache-seed'), 'utf8')).toBe(readFileSync(join(seed, 'id'), 'utf8'));
      // ...and its agent server found what it imports there: what tsx compiled for it is a handful of
      // modules (its graph's, the entry's body), not the agent server's ~130 a cold start compiles.
      const seeded = new Set(filesUnder(join(seed, 'tmp')).map((path) => path.split('/').pop()));
      const compiledHere = filesUnder(join(deployment, 'cache', 'tsx')).filter((path) => !seeded.has(path.split('/').pop()));
      expect(seeded.size).toBeGreaterThan(100);
      expect(compiledHere.length).toBeLessThan(seeded.size / 10);
    } finally {
      // Ctrl-C, as in the terminal npm runs in (npm's own exit status is npm's: the platform's is its log).
      await platform.stopGroup('SIGINT');
    }
    expect(platform.output()).toContain('"msg":"shutting down"');
    expect(existsSync(join(clone, '.data', 'postgres', 'postmaster.pid'))).toBe(false);
    // Not one line of its log is a warning or an error (pino's levels 40 and above), the compile
    // caches' warm-up among them.
    expect(platform.output()).not.toMatch(/"level":(40|50|60)/);
    expect(platform.output()).not.toContain('cold compile caches');
  }, 300_000);
});
