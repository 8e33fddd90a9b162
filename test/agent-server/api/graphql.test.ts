// GraphQL over the agent server: types, mutations, and the runEvents subscription over graphql-ws
// carrying exactly the events the REST SSE stream sends for the same run.
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { collect, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe();
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

async function gql(query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: any; errors?: unknown[] };
  expect(body.errors).toBeUndefined();
  return body.data;
}

function subscribe(query: string, variables: Record<string, unknown>): Promise<any[]> {
  const client = createClient({ url: `${server.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, lazy: true });
  const received: any[] = [];
  return new Promise((resolve, reject) => {
    client.subscribe(
      { query, variables },
      {
        next: (message) => (message.errors ? reject(new Error(JSON.stringify(message.errors))) : received.push(message.data)),
        error: reject,
        complete: () => {
          void client.dispose();
          resolve(received);
        },
      },
    );
  });
}

describe('GraphQL on the agent server', () => {
  it('creates a thread and a run; runEvents over graphql-ws carries the same events as SSE', async () => {
    const created = await gql(
      `mutation($input: CreateThreadInput!) { createThread(input: $input) { ... on MutationCreateThreadSuccess { data { threadId status } } } }`,
      { input: { deploymentId: server.deploymentId, metadata: { via: 'graphql' } } },
    );
    const thread = created.createThread.data;
    expect(thread.status).toBe('idle');

    const run = (
      await gql(
        `mutation($input: CreateRunInput!) { createRun(input: $input) { ... on MutationCreateRunSuccess { data { runId status streamModes } } } }`,
        {
          input: {
            deploymentId: server.deploymentId,
            threadId: thread.threadId,
            assistantId: 'slow',
            input: { label: 'g', delay_ms: 30 },
            streamModes: ['updates', 'custom', 'values'],
          },
        },
      )
    ).createRun.data;
    expect(run).toMatchObject({ status: 'pending', streamModes: ['updates', 'custom', 'values'] });

    // A deployed revision's runs are in its own database, not the platform's: run and runEvents name the deployment there.
    const inDeployment: { deploymentId?: string } = server.deployed ? { deploymentId: server.deploymentId } : {};
    const [viaWs, viaSse] = await Promise.all([
      subscribe(`subscription($runId: ID!, $deploymentId: ID) { runEvents(runId: $runId, deploymentId: $deploymentId) { seq event mode data } }`, { runId: run.runId, ...inDeployment }),
      collect(server.client.runs.joinStream(thread.threadId, run.runId)),
    ]);
    expect(viaWs.map((m) => ({ event: m.runEvents.event, data: m.runEvents.data, id: String(m.runEvents.seq - 1) }))).toEqual(
      viaSse.map((part: any) => ({ event: part.event, data: part.data, id: part.id })),
    );
    const names = viaWs.map((m) => m.runEvents.event as string);
    expect(names[0]).toBe('metadata');
    expect(names.filter((name) => name === 'updates')).toHaveLength(3);
    expect(names.filter((name) => name === 'custom')).toHaveLength(3);
    expect(viaWs.at(-1).runEvents).toMatchObject({ event: 'values', data: { log: ['g:first', 'g:second', 'g:third'] } });

    const onlyUpdates = await subscribe(`subscription($runId: ID!, $deploymentId: ID) { runEvents(runId: $runId, deploymentId: $deploymentId, streamModes: ["updates"], afterSeq: 1) { event } }`, {
      runId: run.runId,
      ...inDeployment,
    });
    expect(onlyUpdates.map((m) => m.runEvents.event)).toEqual(['updates', 'updates', 'updates']);

    const read = await gql(
      `query($d: ID!, $t: ID!, $r: ID!, $runDeployment: ID) {
        thread(deploymentId: $d, id: $t) { ... on QueryThreadSuccess { data { status metadata values state { next values } runs { runId status } } } }
        run(id: $r, deploymentId: $runDeployment) { ... on QueryRunSuccess { data { status assistantId } } }
        assistants(deploymentId: $d, graphId: "slow") { name version versions { version } }
      }`,
      { d: server.deploymentId, t: thread.threadId, r: run.runId, runDeployment: inDeployment.deploymentId },
    );
    expect(read.thread.data).toMatchObject({
      status: 'idle',
      metadata: { via: 'graphql', graph_id: 'slow' },
      values: { label: 'g', log: ['g:first', 'g:second', 'g:third'] },
      state: { next: [] },
      runs: [{ runId: run.runId, status: 'success' }],
    });
    expect(read.run.data.status).toBe('success');
    expect(read.assistants).toEqual([{ name: 'slow', version: 1, versions: [{ version: 1 }] }]);
  });

  it('returns typed errors for unknown deployments and threads', async () => {
    const threadId = crypto.randomUUID();
    const result = await gql(
      `query($d: ID!, $t: ID!) { thread(deploymentId: $d, id: $t) { ... on AppError { code message } } }`,
      { d: server.deploymentId, t: threadId },
    );
    expect(result.thread).toEqual({ code: 'NOT_FOUND', message: `Thread with ID ${threadId} not found` });
    const other = await gql(`query($d: ID!) { assistant(deploymentId: $d, id: "agent") { ... on AppError { code } } }`, { d: crypto.randomUUID() });
    expect(other.assistant).toEqual({ code: 'NOT_FOUND' });
  });
});
