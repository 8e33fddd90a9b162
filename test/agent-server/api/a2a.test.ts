// A2A through a real A2A client library (@a2a-js/sdk, its protocol-0.3 compat transport)
// against a real `serve` process: agent card, message/send with text and data parts, contextId as a
// thread, message/stream, tasks/get and tasks/cancel; and raw JSON-RPC for the bad-input cases.
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Part, type Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe();
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

// The SDK speaks A2A 1.0 by default; its compat layer speaks 0.3 (message/send…) to a 0.3 agent card,
// which is the protocol the reference server and this one serve.
const legacyCompat = { enabled: true };
const agentFor = (assistantId: string): Promise<Client> =>
  // The card's path relative to the server's url, which is a deployment's path at a deployed revision.
  new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat })], cardResolver: new DefaultAgentCardResolver({ legacyCompat }) }).createFromUrl(
    `${server.url}/`,
    `.well-known/agent-card.json?assistant_id=${assistantId}`,
  );

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const data = (value: Record<string, unknown>): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: '' });
const message = (parts: Part[], contextId = '') => ({
  tenant: '',
  message: { messageId: randomUUID(), contextId, taskId: '', role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] },
  configuration: undefined,
  metadata: undefined,
});
const artifactText = (task: Task) => task.artifacts.flatMap((artifact) => artifact.parts).map((part) => (part.content?.$case === 'text' ? part.content.value : ''));

async function rpc(path: string, body: unknown, raw = false) {
  const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw ? (body as string) : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as { jsonrpc: string; id: unknown; error?: { code: number; message: string }; result?: unknown } };
}

describe('A2A', () => {
  it('serves an agent card per assistant that points at its JSON-RPC endpoint', async () => {
    const card = (await (await fetch(`${server.url}/.well-known/agent-card.json?assistant_id=agent`)).json()) as Record<string, unknown>;
    expect(card).toMatchObject({ protocolVersion: '0.3.0', name: 'agent', preferredTransport: 'JSONRPC', capabilities: { streaming: true } });
    expect(card.url).toMatch(new RegExp(`^${server.url}/a2a/[0-9a-f-]{36}$`));
    expect((await fetch(`${server.url}/.well-known/agent-card.json`)).status).toBe(422);
    expect((await fetch(`${server.url}/.well-known/agent-card.json?assistant_id=nope`)).status).toBe(404);
  });

  it('message/send runs the graph on the context thread and answers a completed task with the reply', async () => {
    const client = await agentFor('agent');
    const task = (await client.sendMessage(message([text('Weather in Paris?')]))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toEqual(['Answer: It is sunny in Paris.']);
    // The context is a thread of the agent server; the task is a run on it.
    const thread = await server.client.threads.get(task.contextId);
    expect((thread.values as { messages: unknown[] }).messages).toHaveLength(4);
    expect((await server.client.runs.get(task.contextId, task.id)).status).toBe('success');

    // The same contextId continues the conversation on the same thread.
    const again = (await client.sendMessage(message([text('And tomorrow?')], task.contextId))) as Task;
    expect(again.contextId).toBe(task.contextId);
    const messages = ((await server.client.threads.get(task.contextId)).values as { messages: { content: unknown }[] }).messages;
    expect(messages.map((m) => m.content)).toEqual(expect.arrayContaining(['Weather in Paris?', 'And tomorrow?']));

    const fetched = await client.getTask({ tenant: '', id: task.id });
    expect(fetched.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(fetched)).toEqual(['Answer: It is sunny in Paris.']);
  });

  it('maps data parts into the input and returns a graph without messages as data', async () => {
    const client = await agentFor('slow');
    const task = (await client.sendMessage(message([data({ label: 'a2a', delay_ms: 1 })]))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const [part] = task.artifacts[0]!.parts;
    expect(part!.content).toEqual({ $case: 'data', value: { label: 'a2a', delay_ms: 1, log: ['a2a:first', 'a2a:second', 'a2a:third'] } });
  });

  it('message/stream yields the task, its progress, the artifact and a final status', async () => {
    const client = await agentFor('agent');
    const events = [];
    for await (const event of client.sendMessageStream(message([text('Weather?')]))) events.push(event.payload);
    expect(events[0]?.$case).toBe('task');
    const last = events.at(-1)!;
    expect(last.$case).toBe('statusUpdate');
    expect(last.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = events.find((event) => event?.$case === 'artifactUpdate');
    expect(artifact?.$case === 'artifactUpdate' && artifact.value.artifact?.parts[0]?.content).toEqual({ $case: 'text', value: 'Answer: It is sunny in Paris.' });
    expect(events.some((event) => event?.$case === 'statusUpdate' && event.value.status?.state === TaskState.TASK_STATE_WORKING)).toBe(true);
  });

  it('tasks/cancel cancels a running task; an ended one is not cancelable', async () => {
    const client = await agentFor('slow');
    const stream = client.sendMessageStream(message([data({ label: 'long', delay_ms: 5000 })]));
    const first = (await stream.next()).value!;
    expect(first.payload?.$case).toBe('task');
    const { id: taskId, contextId } = first.payload?.$case === 'task' ? first.payload.value : { id: '', contextId: '' };
    const canceled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await stream.return(undefined);
    await server.client.runs.join(contextId, taskId);
    expect((await client.getTask({ tenant: '', id: taskId })).status?.state).not.toBe(TaskState.TASK_STATE_WORKING);
    await expect(client.cancelTask({ tenant: '', id: taskId, metadata: undefined })).rejects.toThrow(/cannot be canceled/);
    await expect(client.getTask({ tenant: '', id: randomUUID() })).rejects.toThrow(/Task not found/);
  });

  it('answers bodies that are not JSON-RPC with JSON-RPC errors and a 4xx, never a 5xx', async () => {
    const path = '/a2a/agent';
    const notRpc = await rpc(path, { hello: 'world' });
    expect(notRpc.status).toBe(400);
    expect(notRpc.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    const notJson = await rpc(path, '{"jsonrpc": "2.0", ', true);
    expect(notJson).toMatchObject({ status: 400, body: { error: { code: -32700 } } });
    const unknownMethod = await rpc(path, { jsonrpc: '2.0', id: 7, method: 'tasks/explode', params: {} });
    expect(unknownMethod).toMatchObject({ status: 404, body: { id: 7, error: { code: -32601 } } });
    const badParams = await rpc(path, { jsonrpc: '2.0', id: 8, method: 'message/send', params: { message: { messageId: 'm', role: 'user', parts: [{ kind: 'file', file: {} }] } } });
    expect(badParams).toMatchObject({ status: 400, body: { id: 8, error: { code: -32602 } } });
    expect(badParams.body.error!.message).toMatch(/file parts are not supported/);
    const badContext = await rpc(path, { jsonrpc: '2.0', id: 9, method: 'message/stream', params: { message: { messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }], contextId: 'not-a-uuid' } } });
    expect(badContext).toMatchObject({ status: 400, body: { id: 9, error: { code: -32602 } } });
    const unknownAgent = await rpc('/a2a/nobody', { jsonrpc: '2.0', id: 10, method: 'message/send', params: { message: { messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] } } });
    expect(unknownAgent.status).toBe(404);
    expect(unknownAgent.body.error!.message).toMatch(/Assistant not found/);
    const badTask = await rpc(path, { jsonrpc: '2.0', id: 11, method: 'tasks/get', params: { id: 'x' } });
    expect(badTask.status).toBe(400);
    const huge = await rpc(path, { jsonrpc: '2.0', id: 12, method: 'message/send', params: { message: { messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x'.repeat(12 * 1024 * 1024) }] } } });
    expect(huge.status).toBe(413);
    expect(huge.body.error!.message).toMatch(/too large/);
  });
});
