// The thread streaming protocol (v2) at a real `serve` (or, with TEST_AGENT_SERVER=deployed, at a
// deployed revision's url through the gateway): the official SDK's ThreadStream over SSE and
// WebSocket (values, tool calls, raw subscriptions, extensions, interrupts, forkFrom), and a raw
// WebSocket and SSE client for filters, replay from `since`, several subscriptions on one socket, bad
// frames and the bounds of a connection.
import { Client } from 'langgraph-sdk-thread-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openProtocolSocket, protocolSseEvents } from '../../support/protocol-socket.js';
import { removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
let client: Client;
beforeAll(async () => {
  server = await startServe({ project: 'thread-stream' });
  client = new Client({ apiUrl: server.url });
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

type ProtocolEvent = { type: 'event'; event_id: string; seq: number; method: string; params: { namespace: string[]; node?: string; data: Record<string, unknown> } };
type Json = Record<string, unknown>;

const webSocketFactory = (url: string) => new WebSocket(url) as never;
const transports = [
  { name: 'SSE', options: { transport: 'sse' as const } },
  { name: 'WebSocket', options: { transport: 'websocket' as const, webSocketFactory } },
];

/** Consumes an async iterable until `done` says so (or it ends), with a deadline. */
async function take<T>(iterable: AsyncIterable<T>, done: (items: T[]) => boolean, ms = 15_000): Promise<T[]> {
  const items: T[] = [];
  const iterator = iterable[Symbol.asyncIterator]();
  const deadline = Date.now() + ms;
  while (!done(items)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out after ${items.length} items`);
    const next = await Promise.race([iterator.next(), new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), left))]);
    if (next === 'timeout') throw new Error(`timed out after ${items.length} items`);
    if (next.done) break;
    items.push(next.value);
  }
  await iterator.return?.();
  return items;
}

const rootEnd = (event: ProtocolEvent) => event.method === 'lifecycle' && event.params.namespace.length === 0 && ['completed', 'failed', 'interrupted'].includes(String(event.params.data.event));

/** Posts a command over HTTP. */
async function command(threadId: string, body: unknown): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${server.url}/threads/${threadId}/commands`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

/** Reads an SSE event stream of the protocol until `done`; each frame's id is its event's. */
async function sseEvents(threadId: string, request: Json, done: (events: ProtocolEvent[]) => boolean): Promise<ProtocolEvent[]> {
  const events: ProtocolEvent[] = [];
  for await (const { id, event } of protocolSseEvents<ProtocolEvent>(server.url, threadId, request)) {
    expect(id).toBe(event.event_id);
    events.push(event);
    if (done(events)) break;
  }
  return events;
}

/** A raw protocol WebSocket: commands with answers, and every event it receives. */
const rawSocket = (threadId: string) => openProtocolSocket(server.url, threadId);

describe('the SDK ThreadStream', () => {
  for (const { name, options } of transports) {
    it(`streams values and the final output over ${name}`, async () => {
      const thread = client.threads.stream({ assistantId: 'nested', ...options });
      try {
        await thread.run.start({ input: { trail: [] } });
        const values = (await take(thread.values, () => false)) as { trail: string[] }[];
        expect(values[0]).toEqual({ trail: [] });
        expect(values.at(-1)).toEqual({ trail: ['parent', 'child', 'grandchild'] });
        expect(await thread.output).toEqual({ trail: ['parent', 'child', 'grandchild'] });
        // The run is the thread's, as the runs API sees it.
        const runs = await server.client.runs.list(thread.threadId);
        expect(runs.map((run) => run.status)).toEqual(['success']);
      } finally {
        await thread.close();
      }
    });

    it(`assembles tool calls, streams messages and the toolActivity extension over ${name}`, async () => {
      const thread = client.threads.stream({ assistantId: 'tools', ...options });
      try {
        // Subscribed before the run starts: a projection opened while the run ends can be closed by the
        // SDK's older stream's end of run before the replay on its new stream reaches it (seen through the
        // gateway on a loaded machine; the server replays the tool events either way).
        const activity = thread.extensions.toolActivity;
        const messages = thread.messages;
        const toolCalls = thread.toolCalls;
        await thread.run.start({ input: { messages: [{ role: 'user', content: 'Weather in Paris?' }] } });
        const calls = await take(toolCalls, () => false);
        // The SDK's assembler hands the call out once per tool event (the reference server's stream gives the same).
        expect([...new Set(calls.map((call) => `${call.name}:${call.callId}`))]).toEqual(['get_weather:call_1']);
        expect(await calls[0]!.output).toBe('It is sunny in Paris.');
        const streamed = await take(messages, () => false);
        const texts = await Promise.all(streamed.map(async (message) => String(await message.text)));
        expect(texts).toContain('Answer: It is sunny in Paris.');
        const final = (await thread.output) as { messages: { type: string; content: unknown }[] };
        expect(final.messages.map((message) => message.type ?? (message as unknown as { getType(): string }).getType())).toEqual(['human', 'ai', 'tool', 'ai']);
        expect(await activity).toEqual({ tool_call_id: 'call_1', status: 'finished' });
      } finally {
        await thread.close();
      }
    });
  }

  it('delivers raw subscriptions of messages and values, filtered by namespace', async () => {
    const thread = client.threads.stream({ assistantId: 'tools', transport: 'websocket', webSocketFactory });
    try {
      await thread.run.start({ input: { messages: [{ role: 'user', content: 'Weather?' }] } });
      const [messages, values] = await Promise.all([
        thread.subscribe({ channels: ['messages'], namespaces: [['agent']] }),
        thread.subscribe({ channels: ['values'], namespaces: [[]], depth: 0 }),
      ]);
      const finishes = (events: unknown[]) => events.filter((event) => (event as ProtocolEvent).params.data.event === 'message-finish').length >= 2;
      const messageEvents = (await take(messages, finishes)) as ProtocolEvent[];
      expect(messageEvents.every((event) => event.method === 'messages' && event.params.namespace[0]!.startsWith('agent:'))).toBe(true);
      const deltas = messageEvents.filter((event) => event.params.data.event === 'content-block-delta');
      expect(deltas.map((event) => (event.params.data.delta as { text?: string }).text ?? '').join('')).toBe('Answer: It is sunny in Paris.');
      const valueEvents = (await take(values, (events) => events.length >= 5)) as ProtocolEvent[];
      expect(valueEvents.every((event) => event.method === 'values' && event.params.namespace.length === 0)).toBe(true);
      expect((valueEvents.at(-1)!.params.data.messages as unknown[]).length).toBe(4);
      // Ids are unique, sequence numbers increase.
      expect(new Set(valueEvents.map((event) => event.event_id)).size).toBe(valueEvents.length);
      expect(valueEvents.map((event) => event.seq)).toEqual([...valueEvents.map((event) => event.seq)].sort((a, b) => a - b));
    } finally {
      await thread.close();
    }
  });

  it('pauses on an interrupt and resumes with input.respond', async () => {
    const thread = client.threads.stream({ assistantId: 'interrupt' });
    try {
      await thread.run.start({ input: { topic: 'cats' } });
      await thread.output;
      expect(thread.interrupted).toBe(true);
      expect(thread.interrupts.map((entry) => entry.payload)).toEqual([{ question: 'What about cats?' }]);
      await thread.input.respond({ namespace: [], interrupt_id: thread.interrupts[0]!.interruptId, response: 'purr' });
      const lifecycle = await thread.subscribe({ channels: ['lifecycle'], namespaces: [[]], depth: 0 });
      await take(lifecycle, (events) => events.some((event) => (event as ProtocolEvent).params.data.event === 'completed'));
      const state = await server.client.threads.getState(thread.threadId);
      expect(state.values).toEqual({ topic: 'cats', answer: 'purr', done: true });
    } finally {
      await thread.close();
    }
  });

  it('run.start with forkFrom runs from an earlier checkpoint', async () => {
    const thread = client.threads.stream({ assistantId: 'nested' });
    try {
      await thread.run.start({ input: { trail: ['first'] } });
      await thread.output;
      const history = await server.client.threads.getHistory(thread.threadId);
      // The checkpoint before the graph ran its first node: the input only.
      const start = history.find((state) => (state.values as { trail?: string[] }).trail?.join() === 'first' && state.next.includes('parent_step'))!;
      expect(start).toBeDefined();
      const forkFrom = start.checkpoint.checkpoint_id!;
      await thread.run.start({ input: null, forkFrom });
      const lifecycle = await thread.subscribe({ channels: ['lifecycle'], namespaces: [[]], depth: 0 });
      await take(lifecycle, (events) => events.filter((event) => (event as ProtocolEvent).params.data.event === 'completed').length >= 1);
      const runs = await server.client.runs.list(thread.threadId);
      expect(runs).toHaveLength(2);
      await server.client.runs.join(thread.threadId, runs[0]!.run_id);
      const forked = await server.client.threads.getState(thread.threadId);
      expect(forked.values).toEqual({ trail: ['first', 'parent', 'child', 'grandchild'] });
      // The forked run's checkpoints descend from the fork point.
      const after = await server.client.threads.getHistory(thread.threadId);
      expect(after.some((state) => state.parent_checkpoint?.checkpoint_id === forkFrom)).toBe(true);
      expect((runs[0] as unknown as { kwargs: { config?: { configurable?: Json } } }).kwargs.config?.configurable?.checkpoint_id).toBe(forkFrom);
    } finally {
      await thread.close();
    }
  });
});

describe('a raw protocol client', () => {
  it('filters by channel, namespace and depth, and replays from since over SSE', async () => {
    const threadId = crypto.randomUUID();
    const started = await command(threadId, { id: 1, method: 'run.start', params: { assistant_id: 'nested', input: { trail: [] } } });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ type: 'success', id: 1, result: { run_id: expect.any(String) }, meta: { thread_id: threadId } });
    const all = await sseEvents(threadId, { channels: ['values', 'updates', 'lifecycle', 'tasks', 'checkpoints'] }, (events) => events.some(rootEnd));
    expect(all[0]).toMatchObject({ method: 'lifecycle', params: { namespace: [], data: { event: 'running', graph_name: 'nested' } } });
    expect(all.at(-1)).toMatchObject({ method: 'lifecycle', params: { namespace: [], data: { event: 'completed' } } });
    expect(all.map((event) => event.seq)).toEqual([...all.map((event) => event.seq)].sort((a, b) => a - b));
    // Depth 0 under `child`: the child graph's own events, not the grandchild's.
    const child = await sseEvents(threadId, { channels: ['lifecycle', 'updates'], namespaces: [['child']], depth: 0 }, (events) => events.some((event) => event.params.data.event === 'completed'));
    expect(child.length).toBeGreaterThan(0);
    expect(child.every((event) => event.params.namespace.length === 1 && event.params.namespace[0]!.startsWith('child:'))).toBe(true);
    const deep = all.filter((event) => event.params.namespace.length === 2);
    expect(deep.length).toBeGreaterThan(0);
    // Replay from since: exactly the events after it, the same ids.
    const middle = all[Math.floor(all.length / 2)]!;
    const resumed = await sseEvents(threadId, { channels: ['values', 'updates', 'lifecycle', 'tasks', 'checkpoints'], since: middle.seq }, (events) => events.some(rootEnd));
    expect(resumed.map((event) => event.event_id)).toEqual(all.filter((event) => event.seq > middle.seq).map((event) => event.event_id));
  });

  it('follows a thread with no run yet over SSE: a raw subscription made before the first run.start gets its events', async () => {
    const threadId = crypto.randomUUID();
    const abort = new AbortController();
    const response = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channels: ['values'] }),
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    const started = await command(threadId, { id: 1, method: 'run.start', params: { assistant_id: 'nested', input: { trail: [] } } });
    expect(started.body).toMatchObject({ type: 'success', result: { run_id: expect.any(String) } });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('event: values')) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    expect(text).toContain('"method":"values"');
  });

  it('answers bad requests in the protocol error shape or a clear 4xx', async () => {
    const threadId = crypto.randomUUID();
    expect(await command(threadId, '{not json')).toEqual({ status: 400, body: { type: 'error', id: null, error: 'invalid_argument', message: 'Protocol commands must be valid JSON.' } });
    expect((await command(threadId, { method: 'run.start' })).body).toMatchObject({ type: 'error', id: null, error: 'invalid_argument' });
    expect((await command(threadId, { id: 7, method: 'no.such' })).body).toEqual({ type: 'error', id: 7, error: 'unknown_command', message: 'Unknown protocol command: no.such' });
    expect((await command(threadId, { id: 8, method: 'run.start', params: {} })).body).toMatchObject({ type: 'error', id: 8, error: 'invalid_argument' });
    expect((await command(threadId, { id: 9, method: 'run.start', params: { assistant_id: 'no-such-graph', input: {} } })).body).toMatchObject({ type: 'error', id: 9, error: 'no_such_run' });
    // An event stream of an id that is no thread's, or with a bad filter.
    const stream = (body: unknown, id: string = threadId) =>
      fetch(`${server.url}/threads/${id}/stream/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await stream({ channels: ['values'] }, 'not-a-uuid')).status).toBe(404);
    expect((await stream({ channels: ['nope'] })).status).toBe(422);
    expect((await stream({ channels: [] })).status).toBe(422);
    expect((await stream({ channels: ['values'], extra: 1 })).status).toBe(422);
    // A plain GET of the WebSocket's path.
    expect((await fetch(`${server.url}/threads/${threadId}/stream/events`)).status).toBe(426);
  });

  it('serves several subscriptions on one WebSocket, replays on subscribe and after since', async () => {
    const threadId = crypto.randomUUID();
    const socket = await rawSocket(threadId);
    try {
      // Bad frames are answered, not fatal.
      socket.send('{oops');
      await socket.until(() => socket.answers.has(null));
      expect(socket.answers.get(null)![0]).toEqual({ type: 'error', id: null, error: 'invalid_argument', message: 'Protocol commands must be valid JSON.' });
      expect(await socket.command('nope.nope')).toMatchObject({ error: 'unknown_command' });
      expect(await socket.command('subscription.subscribe', { channels: ['bogus'] })).toMatchObject({ type: 'error', error: 'invalid_argument' });
      expect(await socket.command('subscription.unsubscribe', { subscription_id: 'nope' })).toMatchObject({ type: 'error', error: 'no_such_subscription' });

      const started = await socket.command('run.start', { assistant_id: 'nested', input: { trail: [] } });
      expect(started).toMatchObject({ type: 'success', result: { run_id: expect.any(String) } });
      const lifecycle = (await socket.command('subscription.subscribe', { channels: ['lifecycle'] })) as { result: { subscription_id: string } };
      const values = (await socket.command('subscription.subscribe', { channels: ['values'], namespaces: [[]], depth: 0 })) as { result: { subscription_id: string } };
      expect(lifecycle.result.subscription_id).not.toBe(values.result.subscription_id);
      // The answer says how many events of the current run the subscription replays, as the reference's.
      expect(values).toMatchObject({ type: 'success', result: { subscription_id: expect.any(String), replayed_events: expect.any(Number) } });
      await socket.until(() => socket.events.some(rootEnd));
      const lifecycleEvents = socket.events.filter((event) => event.method === 'lifecycle');
      const valueEvents = socket.events.filter((event) => event.method === 'values');
      expect(socket.events.every((event) => event.method === 'lifecycle' || event.method === 'values')).toBe(true);
      expect(lifecycleEvents.filter((event) => event.params.namespace.length === 0).map((event) => event.params.data.event)).toEqual(['running', 'completed']);
      expect(valueEvents.every((event) => event.params.namespace.length === 0)).toBe(true);
      expect(valueEvents.at(-1)!.params.data).toEqual({ trail: ['parent', 'child', 'grandchild'] });

      // Unsubscribed: the next run's lifecycle reaches the socket no more; values still do.
      expect(await socket.command('subscription.unsubscribe', { subscription_id: lifecycle.result.subscription_id })).toMatchObject({ type: 'success' });
      const before = socket.events.length;
      const again = (await socket.command('run.start', { assistant_id: 'nested', input: { trail: ['again'] } })) as { result: { run_id: string } };
      await server.client.runs.join(threadId, again.result.run_id);
      // The run's last values (as SSE replays them from the store) reach the socket too.
      const stored = await sseEvents(threadId, { channels: ['values', 'lifecycle'], namespaces: [[]], depth: 0, since: socket.events[before - 1]!.seq }, (events) => events.some(rootEnd));
      const lastValues = stored.filter((event) => event.method === 'values').at(-1)!;
      await socket.until(() => socket.events.some((event) => event.event_id === lastValues.event_id));
      expect(socket.events.slice(before).every((event) => event.method === 'values')).toBe(true);

      // The agent tree of the latest run, and its state.
      const tree = (await socket.command('agent.getTree')) as { result: { tree: { status: string; graph_name: string; children?: unknown[] } } };
      expect(tree.result.tree).toMatchObject({ graph_name: 'nested', children: [expect.objectContaining({ children: [expect.any(Object)] })] });
      const state = (await socket.command('state.get', { namespace: [], keys: ['trail'] })) as { result: { values: Json; checkpoint: { id: string } } };
      expect(state.result.values).toEqual({ trail: ['parent', 'child', 'grandchild', 'again'] });
      expect(state.result.checkpoint.id).toEqual(expect.any(String));
    } finally {
      socket.close();
    }
    // A reconnecting SSE reader with `since` picks up exactly where the socket left the first run.
    const firstRunValues = await sseEvents(threadId, { channels: ['values'], namespaces: [[]], depth: 0, since: 0 }, (events) => events.length >= 6);
    // Both runs' root values, in order: the first run's from its input on, then the second's.
    expect(firstRunValues.map((event) => (event.params.data.trail as string[]).length)).toEqual([0, 1, 3, 4, 4, 4]);
  });

  it('gives sockets that subscribe to one thread at different times the same events, each once', async () => {
    const threadId = crypto.randomUUID();
    const channels = ['values', 'updates', 'lifecycle', 'tasks', 'custom'];
    const [early, late] = [await rawSocket(threadId), await rawSocket(threadId)];
    try {
      const first = (await early.command('run.start', { assistant_id: 'nested', input: { trail: [] } })) as { result: { run_id: string } };
      await early.command('subscription.subscribe', { channels });
      await early.until(() => early.events.some(rootEnd));
      // Subscribing after the run ended replays it (the thread's latest run), then follows the next.
      await late.command('subscription.subscribe', { channels });
      await late.until(() => late.events.some(rootEnd));
      await early.command('run.start', { assistant_id: 'nested', input: { trail: ['again'] } });
      const ends = (socket: typeof early) => socket.events.filter(rootEnd).length;
      await early.until(() => ends(early) === 2);
      await late.until(() => ends(late) === 2);
      const stored = await sseEvents(threadId, { channels, since: 0 }, (events) => events.filter(rootEnd).length === 2);
      const ids = (events: ProtocolEvent[]) => events.map((event) => event.event_id);
      expect(ids(early.events)).toEqual(ids(stored));
      expect(ids(late.events)).toEqual(ids(stored));
      expect(new Set(ids(stored)).size).toBe(stored.length);
      expect(stored[0]!.event_id.startsWith(first.result.run_id)).toBe(true);
    } finally {
      early.close();
      late.close();
    }
  });

  it('drops a socket with an oversized frame', async () => {
    const socket = await rawSocket(crypto.randomUUID());
    const closed = new Promise<number>((resolve) => socket.ws.once('close', (code) => resolve(code)));
    socket.send(JSON.stringify({ id: 1, method: 'state.get', params: { pad: 'x'.repeat(2 << 20) } }));
    expect(await closed).toBe(1009);
  });

  it('refuses the WebSocket of a thread id that is not one', async () => {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/threads/not-a-uuid/stream/events`);
    const status = await new Promise<number>((resolve) => ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)));
    expect(status).toBe(404);
  });
});
