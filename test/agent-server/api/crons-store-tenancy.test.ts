// Crons and the store at a deployment's url on the platform (/deployments/<id>): the organization's
// key uses them; another organization's key sees 404 for the deployment, its crons and its items.
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestLocalDeployment, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { fixtureConfig, removeDir } from '../../support/serve.js';

let platform: TestPlatform;
let local: Awaited<ReturnType<typeof startTestLocalDeployment>>;
let dir: string;
let owner: Client;
let stranger: Client;
beforeAll(async () => {
  platform = await startTestPlatform();
  const fixture = fixtureConfig();
  dir = fixture.dir;
  const [tenant, other] = [await buildTenant(platform.system), await buildTenant(platform.system)];
  local = await startTestLocalDeployment(platform, { configPath: fixture.configPath, workspaceId: tenant.workspace.id });
  const apiUrl = `${platform.url}/deployments/${local.deploymentId}`;
  owner = new Client({ apiUrl, apiKey: tenant.adminKey, callerOptions: { maxRetries: 0 } });
  stranger = new Client({ apiUrl, apiKey: other.adminKey, callerOptions: { maxRetries: 0 } });
}, 120_000);
afterAll(async () => {
  await local?.stop();
  await platform?.stop();
  removeDir(dir);
});

describe('crons and store at /deployments/<id>', () => {
  it('serve the deployment’s organization and answer 404 to another organization’s key', async () => {
    const user = crypto.randomUUID();
    await owner.store.putItem(['prefs', user], 'theme', { color: 'dark' });
    expect((await owner.store.getItem(['prefs', user], 'theme'))?.value).toEqual({ color: 'dark' });
    const cron = await owner.crons.create('nested', { schedule: '0 0 1 1 *', input: {} });
    expect(await owner.crons.count()).toBe(1);

    await expect(stranger.store.getItem(['prefs', user], 'theme')).rejects.toThrow(/HTTP 404/);
    await expect(stranger.store.searchItems(['prefs'])).rejects.toThrow(/HTTP 404/);
    await expect(stranger.store.putItem(['prefs', user], 'theme', { color: 'red' })).rejects.toThrow(/HTTP 404/);
    await expect(stranger.store.listNamespaces()).rejects.toThrow(/HTTP 404/);
    await expect(stranger.crons.search()).rejects.toThrow(/HTTP 404/);
    await expect(stranger.crons.update(cron.cron_id, { enabled: false })).rejects.toThrow(/HTTP 404/);
    await expect(stranger.crons.delete(cron.cron_id)).rejects.toThrow(/HTTP 404/);
    await expect(stranger.crons.create('nested', { schedule: '0 0 1 1 *', input: {} })).rejects.toThrow(/HTTP 404/);

    // Nothing changed for the owner.
    expect((await owner.store.getItem(['prefs', user], 'theme'))?.value).toEqual({ color: 'dark' });
    expect((await owner.crons.search()).map((c) => [c.cron_id, c.enabled])).toEqual([[cron.cron_id, true]]);
    await owner.crons.delete(cron.cron_id);
  });
});
