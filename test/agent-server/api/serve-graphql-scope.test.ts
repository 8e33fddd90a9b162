// A local `serve` answers GraphQL without credentials for its own deployment only: the platform's
// tenants (workspaces, keys, traces) still need an API key, even on a shared database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { atDeployed, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let platform: TestPlatform;
let server: ServeProcess;
let tenant: Awaited<ReturnType<typeof buildTenant>>;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  server = await startServe();
}, 90_000);
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
  await platform?.stop();
});

describe('GraphQL on a local serve', () => {
  // Serve's own GraphQL without a key; a deployed revision's url has none (the platform's /graphql needs a key).
  it.skipIf(atDeployed)('without a key: the served deployment’s assistants, and nothing of any tenant', async () => {
    const { status, body } = await graphql(
      server.url,
      `query($d: ID!) { assistants(deploymentId: $d) { graphId } workspaces { id } apiKeys { id } viewer { organization { id } workspaces { id } } }`,
      { variables: { d: server.deploymentId } },
    );
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(body.data.assistants.map((a: { graphId: string }) => a.graphId)).toContain('agent');
    expect(body.data).toMatchObject({ workspaces: [], apiKeys: [], viewer: { organization: null, workspaces: [] } });

    const { body: foreign } = await graphql(server.url, `query($id: ID!) { workspace(id: $id) { id } }`, { variables: { id: tenant.workspace.id } });
    expect(foreign.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const { body: mutation } = await graphql(server.url, `mutation { createWorkspace(input: {name: "x"}) { __typename ... on AppError { code } } }`);
    expect(mutation.data.createWorkspace).toEqual({ __typename: 'AppError', code: 'FORBIDDEN' });
  });

  it('with a key: that tenant’s data, as on the platform; a wrong key is 401', async () => {
    const { body } = await graphql(server.url, '{ workspaces { id } }', { key: tenant.adminKey });
    expect(body.data.workspaces).toEqual([{ id: tenant.workspace.id }]);
    expect((await graphql(server.url, '{ workspaces { id } }', { key: 'apk_wrong' })).status).toBe(401);
  });
});
