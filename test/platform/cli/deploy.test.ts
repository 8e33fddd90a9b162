// `agent-platform deploy` against a running platform: creates the deployment through /v2, prints it,
// and with --wait follows the revision to its end (exit 1 and the build log when it fails).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { runCli } from '../../support/processes.js';
import { echoGraph, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform } from '../../support/deployments.js';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startControlPlanePlatform();
}, 60_000);
afterAll(() => stopControlPlanePlatform(platform));

it('deploys a local repository path and, with --wait, reports a failed build with its log', async () => {
  const tenant = await buildTenant(platform.system);
  const repo = makeGitRepo(echoGraph('v1'));
  const env = { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: tenant.adminKey, AGENT_PLATFORM_TENANT_ID: tenant.workspace.id };
  const failed = await runCli(['deploy', repo.dir, '--ref', 'no-such-ref', '--name', 'cli', '--wait'], env);
  expect(failed.code).toBe(1);
  expect(failed.stdout).toMatch(/Deployment \S+ \(revision \S+\) at http:\/\/127\.0\.0\.1:\d+\/deployments\//);
  expect(failed.stdout).toContain('BUILD_FAILED');
  expect(failed.stderr).toContain('repo_ref "no-such-ref" is not a branch, tag or commit');

  const missingKey = await runCli(['deploy', repo.dir], { ...env, AGENT_PLATFORM_API_KEY: '' });
  expect(missingKey.code).toBe(2);
  const badInput = await runCli(['deploy', repo.dir, '--config', '../../etc/passwd'], env);
  expect(badInput.code).toBe(1);
  expect(badInput.stderr).toContain('422');
}, 180_000);
