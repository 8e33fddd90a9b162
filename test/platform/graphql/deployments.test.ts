// The control plane in GraphQL: mutations over the same services as /v2, and a graphql-ws
// subscription that sees every status of a revision, in order, from CREATING to DEPLOYED.
import { Client } from '@langchain/langgraph-sdk';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildTenant } from '../../support/factories.js';
import { graphql, type TestPlatform } from '../../support/helpers.js';
import { echoGraph, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform } from '../../support/deployments.js';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startControlPlanePlatform();
}, 60_000);
afterAll(() => stopControlPlanePlatform(platform));

const FIELDS = 'id name latestRevisionId activeRevisionId secretNames revisions { id status }';

it('creates, patches and deletes through mutations; deploymentEvents and revisionStatus see every status in order', async () => {
  const tenant = await buildTenant(platform.system);
  const other = await buildTenant(platform.system);
  const gql = (query: string, variables?: Record<string, unknown>, key = tenant.adminKey, tenantId = tenant.workspace.id) =>
    graphql(platform.url, query, { key, tenant: tenantId, variables });
  const repo = makeGitRepo(echoGraph('v1'));

  // A ref that does not exist: the first revision fails its build quickly.
  const created = await gql(`mutation($input: CreateDeploymentInput!) { createDeployment(input: $input) { ${FIELDS} } }`, {
    input: { name: 'gql', repoUrl: repo.url, repoRef: 'no-such-branch', graphConfigPath: 'langgraph.json', secrets: [{ name: 'TOKEN', value: 'hidden' }] },
  });
  expect(created.body.errors).toBeUndefined();
  const deployment = created.body.data.createDeployment;
  expect(deployment.secretNames).toEqual(['TOKEN']);
  expect(JSON.stringify(created.body)).not.toContain('hidden');
  expect((await gql('query($id: ID!) { deployment(id: $id) { id } }', { id: deployment.id }, other.adminKey, other.workspace.id)).body.errors?.[0]?.message).toMatch(/not found/);

  const client = createClient({
    url: `${platform.url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { 'X-Api-Key': tenant.adminKey, 'X-Tenant-Id': tenant.workspace.id },
  });
  try {
    const events: { revisionId: string; status: string }[] = [];
    let deployed!: () => void;
    const done = new Promise<void>((resolve) => (deployed = resolve));
    const unsubscribe = client.subscribe(
      { query: 'subscription($id: ID!) { deploymentEvents(deploymentId: $id) { revisionId status } }', variables: { id: deployment.id } },
      {
        next: (value: any) => {
          events.push(value.data.deploymentEvents);
          if (value.data.deploymentEvents.status === 'DEPLOYED' || /FAILED/.test(value.data.deploymentEvents.status)) deployed();
        },
        error: (error) => console.error(error),
        complete: () => undefined,
      },
    );
    // The server attaches the subscription when it handles the subscribe message: give it that moment.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Wait for the first revision to fail before patching, so its events are out of the way.
    for (let i = 0; ; i++) {
      const state = await gql(`query($id: ID!) { deployment(id: $id) { ${FIELDS} } }`, { id: deployment.id });
      if (state.body.data.deployment.revisions[0].status === 'BUILD_FAILED') break;
      expect(i).toBeLessThan(300);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    events.length = 0;

    const patched = await gql(`mutation($id: ID!, $input: UpdateDeploymentInput!) { updateDeployment(id: $id, input: $input) { ${FIELDS} } }`, {
      id: deployment.id,
      input: { repoRef: 'main' },
    });
    const revisionId = patched.body.data.updateDeployment.latestRevisionId;
    const statuses: string[] = [];
    const watched = new Promise<void>((resolve, reject) =>
      client.subscribe(
        { query: 'subscription($id: ID!) { revisionStatus(revisionId: $id) { status } }', variables: { id: revisionId } },
        { next: (value: any) => void statuses.push(value.data.revisionStatus.status), error: reject, complete: resolve },
      ),
    );
    await done;
    await watched;
    unsubscribe();
    const order = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'];
    expect(events.filter((event) => event.revisionId === revisionId).map((event) => event.status)).toEqual(order);
    // revisionStatus: its status when subscribed, then each later one in order, ending at DEPLOYED.
    expect(statuses.at(-1)).toBe('DEPLOYED');
    expect(statuses.map((status) => order.indexOf(status))).toEqual([...statuses.map((status) => order.indexOf(status))].sort((a, b) => a - b));

    const revision = await gql('query($d: ID!, $id: ID!) { revision(deploymentId: $d, id: $id) { status graphIds logs(type: "build") { message } } }', { d: deployment.id, id: revisionId });
    expect(revision.body.data.revision).toMatchObject({ status: 'DEPLOYED', graphIds: ['agent'] });
    expect(revision.body.data.revision.logs.map((line: any) => line.message).join('\n')).toContain('Build succeeded');

    // Its runtime's environment has its own secret and no other deployment's.
    const url = (await gql('query($id: ID!) { deployment(id: $id) { url } }', { id: deployment.id })).body.data.deployment.url;
    const sdk = new Client({ apiUrl: `${platform.url}${url}`, defaultHeaders: { 'x-api-key': tenant.adminKey } });
    const answer: any = await sdk.runs.wait(null, 'agent', { input: { input: 'env' } });
    expect(answer.seen.env_names).toContain('TOKEN');
    expect(answer.seen.env_names).not.toContain('GREETING_SECRET');

    expect((await gql('mutation($id: ID!) { deleteDeployment(id: $id) }', { id: deployment.id })).body.data.deleteDeployment).toBe(true);
    expect((await gql('query($id: ID!) { deployment(id: $id) { id } }', { id: deployment.id })).body.errors?.[0]?.message).toMatch(/not found/);
  } finally {
    await client.dispose();
  }
}, 400_000);
