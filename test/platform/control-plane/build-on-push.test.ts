// build_on_push: the watch job sees the ref move in the repository and makes a new revision; a ref
// that did not move, or a deployment that does not build on push, gets none.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { watchPushedRefs } from '../../../src/platform/jobs/revisions-watch.job.js';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../../support/deployments.js';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startControlPlanePlatform();
}, 60_000);
afterAll(() => stopControlPlanePlatform(platform));

it('makes a revision when the watched branch gets a new commit', async () => {
  const tenant = await buildTenant(platform.system);
  const api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  const repo = makeGitRepo(echoGraph('v1'));
  // A config path that does not exist: the builds fail fast, after the clone recorded the commit.
  const body = deploymentBody(repo.url, { name: 'watched', graph_config_path: 'missing.json' });
  const watched = await api('POST', '/v2/deployments', { body: { ...body, source_config: { ...body.source_config, build_on_push: true } } });
  const unwatched = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'unwatched', graph_config_path: 'missing.json' }) });
  expect((await waitForRevision(api, watched.body.id, watched.body.latest_revision_id)).status).toBe('BUILD_FAILED');
  expect((await waitForRevision(api, unwatched.body.id, unwatched.body.latest_revision_id)).status).toBe('BUILD_FAILED');

  expect(await watchPushedRefs(platform.deps)).not.toContain(watched.body.id);
  const pushed = repo.commit('main', { 'README.md': 'a push' });
  // This pass, or the platform's own scheduled one (every minute, woken at once by its NOTIFY) if it
  // ran first, makes the revision: one new revision either way, never two.
  const rebuilt = await watchPushedRefs(platform.deps);
  expect(rebuilt).not.toContain(unwatched.body.id);
  const revisions = (await api('GET', `/v2/deployments/${watched.body.id}/revisions`)).body.resources;
  expect(revisions).toHaveLength(2);
  expect((await api('GET', `/v2/deployments/${unwatched.body.id}/revisions`)).body.resources).toHaveLength(1);
  expect((await waitForRevision(api, watched.body.id, revisions[0].id)).commit_sha).toBe(pushed);
  expect(await watchPushedRefs(platform.deps)).not.toContain(watched.body.id);
  for (const id of [watched.body.id, unwatched.body.id]) await api('DELETE', `/v2/deployments/${id}`);
}, 180_000);
