// Runs and streaming through the official SDK against a real `serve` process: every stream mode,
// subgraphs, interrupts and resume, errors, factories, the store, stateless runs, Last-Event-ID.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atDeployed, collect, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
beforeAll(async () => {
  // The webhook test's receiver listens on loopback, which webhooks may only target when allowed.
  server = await startServe({ env: { AGENT_PLATFORM_WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

type Part = { event: string; data: any; id?: string };
const events = (parts: Part[]) => parts.map((part) => part.event);
const input = { messages: [{ role: 'user', content: 'What is the weather?' }] };

describe('streaming a run on a thread', () => {
  it('sends metadata first (with run_id), then updates per node, ids on every event and no end event', async () => {
    const thread = await server.client.threads.create();
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts = (await collect(
      server.client.runs.stream(thread.thread_id, 'agent', { input, streamMode: 'updates', onRunCreated: (meta) => (created = meta) }),
    )) as Part[];
    expect(parts[0]!.event).toBe('metadata');
    expect(parts[0]!.data.run_id).toBe(created!.run_id);
    expect(created!.thread_id).toBe(thread.thread_id);
    expect(events(parts)).toEqual(['metadata', 'updates', 'updates', 'updates']);
    expect(parts.map((p) => Object.keys(p.data)[0])).toEqual(['run_id', 'agent', 'tools', 'agent']);
    expect(parts[3]!.data.agent.messages[0]).toMatchObject({ type: 'ai', content: 'Answer: It is sunny in Paris.' });
    expect(parts.every((p) => p.id)).toBe(true);
    const run = await server.client.runs.get(thread.thread_id, created!.run_id);
    expect(run.status).toBe('success');
    const state = await server.client.threads.getState<{ messages: { type: string }[] }>(thread.thread_id);
    expect(state.values.messages.map((m) => m.type)).toEqual(['human', 'ai', 'tool', 'ai']);
  });

  it('streams values, messages-tuple, debug, tasks, checkpoints and custom events', async () => {
    const thread = await server.client.threads.create();
    const parts = (await collect(
      server.client.runs.stream(thread.thread_id, 'agent', { input, streamMode: ['values', 'messages-tuple', 'debug', 'tasks', 'checkpoints'] }),
    )) as Part[];
    const names = new Set(events(parts));
    expect([...names].sort()).toEqual(['checkpoints', 'debug', 'messages', 'metadata', 'tasks', 'values']);
    const tokens = parts.filter((p) => p.event === 'messages').map((p) => p.data);
    expect(tokens[0]).toHaveLength(2); // [message chunk, metadata]
    expect(tokens.map(([chunk]) => chunk.content).join('')).toContain('Answer: It is sunny in Paris.');
    expect(tokens[0][1]).toMatchObject({ langgraph_node: 'agent' });
    const lastValues = parts.filter((p) => p.event === 'values').at(-1)!.data;
    expect(lastValues.messages).toHaveLength(4);
    expect(parts.find((p) => p.event === 'checkpoints')!.data.checkpoint).toMatchObject({ thread_id: thread.thread_id });

    const slow = await server.client.threads.create();
    const custom = (await collect(server.client.runs.stream(slow.thread_id, 'slow', { input: { label: 'c', delay_ms: 1 }, streamMode: 'custom' }))) as Part[];
    expect(custom.filter((p) => p.event === 'custom').map((p) => p.data.step)).toEqual(['first', 'second', 'third']);
  });

  it('streams the older messages mode (partial, complete, metadata) and LangChain events', async () => {
    const thread = await server.client.threads.create();
    const parts = (await collect(server.client.runs.stream(thread.thread_id, 'agent', { input, streamMode: ['messages', 'events'] }))) as Part[];
    const names = new Set(events(parts));
    for (const name of ['messages/metadata', 'messages/partial', 'messages/complete', 'events']) expect(names).toContain(name);
    const partials = parts.filter((p) => p.event === 'messages/partial');
    expect(partials.at(-1)!.data[0].content).toBe('Answer: It is sunny in Paris.');
    expect(parts.filter((p) => p.event === 'events').map((p) => p.data.event)).toContain('on_chat_model_stream');
  });

  it('names subgraph events mode|namespace when stream_subgraphs is set', async () => {
    const thread = await server.client.threads.create();
    const parts = (await collect(server.client.runs.stream(thread.thread_id, 'nested', { input: {}, streamMode: 'updates', streamSubgraphs: true }))) as Part[];
    const names = events(parts).slice(1);
    expect(names[0]).toBe('updates');
    expect(names.some((name) => /^updates\|child:[^|]+$/.test(name))).toBe(true);
    expect(names.some((name) => /^updates\|child:[^|]+\|grandchild:[^|]+$/.test(name))).toBe(true);
    const flat = (await collect(server.client.runs.stream(thread.thread_id, 'nested', { input: {}, streamMode: 'updates' }))) as Part[];
    expect(events(flat).every((name) => !name.includes('|'))).toBe(true);
  });
});

describe('interrupts, errors, factories and the store', () => {
  it('leaves the thread interrupted with the interrupt visible, and resumes with command.resume', async () => {
    const thread = await server.client.threads.create();
    const parts = (await collect(server.client.runs.stream(thread.thread_id, 'interrupt', { input: { topic: 'rain' }, streamMode: 'values' }))) as Part[];
    expect(parts.at(-1)!.data.__interrupt__[0].value).toEqual({ question: 'What about rain?' });
    const interrupted = await server.client.threads.get(thread.thread_id);
    expect(interrupted.status).toBe('interrupted');
    expect(Object.values(interrupted.interrupts).flat()[0]).toMatchObject({ value: { question: 'What about rain?' } });
    const result = await server.client.runs.wait(thread.thread_id, 'interrupt', { command: { resume: 'bring an umbrella' } });
    expect(result).toEqual({ topic: 'rain', answer: 'bring an umbrella', done: true });
    expect((await server.client.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it("shows an interrupt's response_schema wherever the interrupt is shown, and a resume value it refuses fails the run", async () => {
    const thread = await server.client.threads.create();
    const parts = (await collect(server.client.runs.stream(thread.thread_id, 'approval', { input: { action: 'deploy' }, streamMode: ['values', 'updates'] }))) as Part[];
    const schema = {
      type: 'object',
      properties: { approved: { type: 'boolean' }, note: { type: 'string' } },
      required: ['approved'],
    };
    const shown = { value: { question: 'Approve deploy?' }, response_schema: expect.objectContaining(schema) };
    expect(parts.find((part) => part.event === 'updates' && part.data.__interrupt__)!.data.__interrupt__).toEqual([expect.objectContaining(shown)]);
    expect(parts.filter((part) => part.event === 'values').at(-1)!.data.__interrupt__).toEqual([expect.objectContaining(shown)]);
    const state = await server.client.threads.getState(thread.thread_id);
    expect(state.tasks[0]!.interrupts).toEqual([expect.objectContaining(shown)]);
    expect(Object.values((await server.client.threads.get(thread.thread_id)).interrupts).flat()).toEqual([expect.objectContaining(shown)]);

    // The graph parses the answer by its schema: one that does not fit fails the run, saying why.
    const refused = await server.client.runs.create(thread.thread_id, 'approval', { command: { resume: { approved: 'yes' } } });
    await server.client.runs.join(thread.thread_id, refused.run_id);
    expect((await server.client.runs.get(thread.thread_id, refused.run_id)).status).toBe('error');
    expect(JSON.stringify((await server.client.threads.get(thread.thread_id)).error ?? '')).toMatch(/approved/);
    // The interrupt still waits; an answer that fits goes through, as the schema parsed it.
    const result = await server.client.runs.wait(thread.thread_id, 'approval', { command: { resume: { approved: true, note: 'ok', extra: 1 } } });
    expect(result).toEqual({ action: 'deploy', decision: { approved: true, note: 'ok' } });
  });

  it('interrupts before a node when asked', async () => {
    const thread = await server.client.threads.create();
    await server.client.runs.wait(thread.thread_id, 'slow', { input: { label: 'i', delay_ms: 1 }, interruptBefore: ['second'] });
    const state = await server.client.threads.getState(thread.thread_id);
    expect(state.next).toEqual(['second']);
    expect((await server.client.threads.get(thread.thread_id)).status).toBe('interrupted');
  });

  it('ends an erroring run with an error event, status error, and a thread in error', async () => {
    const thread = await server.client.threads.create();
    let runId = '';
    const parts = (await collect(
      server.client.runs.stream(thread.thread_id, 'failing', { input: {}, streamMode: 'updates', onRunCreated: (m) => (runId = m.run_id) }),
    )) as Part[];
    expect(parts.at(-1)).toMatchObject({ event: 'error', data: { error: 'Error', message: 'The fixture graph failed on purpose' } });
    expect((await server.client.runs.get(thread.thread_id, runId)).status).toBe('error');
    expect((await server.client.threads.get(thread.thread_id)).status).toBe('error');
    await expect(server.client.runs.wait(thread.thread_id, 'failing', { input: {} })).rejects.toThrow('Error: The fixture graph failed on purpose');
  });

  it('rebuilds a factory graph per run from the assistant configuration (and reads the config env)', async () => {
    const plain = await server.client.runs.wait(null, 'factory', { input: { name: 'Ada' } });
    expect(plain).toEqual({ name: 'Ada', greeting: 'hello from env, Ada' });
    const shouter = await server.client.assistants.create({ graphId: 'factory', config: { configurable: { style: 'shout' } } });
    const thread = await server.client.threads.create();
    const parts = (await collect(server.client.runs.stream(thread.thread_id, shouter.assistant_id, { input: { name: 'Ada' }, streamMode: 'updates' }))) as Part[];
    expect(parts[1]!.data).toEqual({ shout: { greeting: 'HELLO FROM ENV, ADA' } });
  });

  it('tells a factory why it builds the graph: a run, with its context, or a read of the assistant (a thread\'s reads build it too)', async () => {
    const assistant = await server.client.assistants.create({ graphId: 'factory', config: { configurable: { style: 'access' } } });
    const thread = await server.client.threads.create();
    const state = await server.client.runs.wait(thread.thread_id, assistant.assistant_id, { input: { name: 'Ada' }, context: { salutation: 'Ahoy' } });
    expect(state).toEqual({ name: 'Ada', greeting: 'Ahoy, Ada (threads.create_run)' });
    const drawn = (await server.client.assistants.getGraph(assistant.assistant_id)) as { nodes: { id: string }[] };
    expect(drawn.nodes.map((node) => node.id)).toContain('built_for_assistants_read');
    const history = await server.client.threads.getHistory(thread.thread_id);
    expect(history.length).toBeGreaterThan(0);
  });

  it("passes the request's x-* headers and user-agent to the graph in config.configurable, but credentials", async () => {
    // The key a deployed revision's client sends comes along (its defaultHeaders).
    const client = new Client({ apiUrl: server.url, callerOptions: { maxRetries: 0 }, defaultHeaders: { ...(server.client as unknown as { defaultHeaders: Record<string, string> }).defaultHeaders, 'x-configurable-header': 'extra-client', 'x-service-key': 'secret' } });
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'factory', { input: { name: 'Ada' }, config: { configurable: { 'x-configurable-header': 'from-body' } } });
    await client.runs.join(thread.thread_id, run.run_id);
    const { kwargs } = (await client.runs.get(thread.thread_id, run.run_id)) as unknown as { kwargs: { config: { configurable: Record<string, unknown> } } };
    expect(kwargs.config.configurable).toMatchObject({ 'x-configurable-header': 'extra-client', 'user-agent': expect.any(String) });
    expect(Object.keys(kwargs.config.configurable).filter((name) => name === 'x-service-key' || name === 'x-api-key' || name.startsWith('x-agent-platform-'))).toEqual([]);
  });

  it('shares the store across threads', async () => {
    const user = crypto.randomUUID();
    const one = await server.client.threads.create();
    const two = await server.client.threads.create();
    await server.client.runs.wait(one.thread_id, 'memory', { input: { user, fact: 'likes tea' } });
    const result = (await server.client.runs.wait(two.thread_id, 'memory', { input: { user, fact: 'owns a cat' } })) as { known: string[] };
    expect(result.known).toEqual(['likes tea', 'owns a cat']);
  });
});

describe('background runs', () => {
  it('creates, joins, gets, lists by status and deletes', async () => {
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'nested', { input: {}, metadata: { purpose: 'test' } });
    expect(run).toMatchObject({ thread_id: thread.thread_id, status: 'pending', multitask_strategy: 'enqueue', metadata: { purpose: 'test' } });
    expect(await server.client.runs.join(thread.thread_id, run.run_id)).toEqual({ trail: ['parent', 'child', 'grandchild'] });
    expect((await server.client.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
    const failing = await server.client.runs.create(thread.thread_id, 'failing', { input: {} });
    await server.client.runs.join(thread.thread_id, failing.run_id);
    expect((await server.client.runs.list(thread.thread_id)).map((r) => r.run_id)).toEqual([failing.run_id, run.run_id]);
    expect((await server.client.runs.list(thread.thread_id, { status: 'error' })).map((r) => r.run_id)).toEqual([failing.run_id]);
    expect((await server.client.runs.list(thread.thread_id, { limit: 1, offset: 1 })).map((r) => r.run_id)).toEqual([run.run_id]);
    await server.client.runs.delete(thread.thread_id, run.run_id);
    await expect(server.client.runs.get(thread.thread_id, run.run_id)).rejects.toThrow('HTTP 404: Run not found');
    const ghostThread = crypto.randomUUID();
    await expect(server.client.runs.create(ghostThread, 'nested', { input: {} })).rejects.toThrow(`HTTP 404: Thread with ID ${ghostThread} not found`);
    // An unknown assistant on a real thread: 404, and the thread is left as it was (no run, not busy).
    const ghostAssistant = crypto.randomUUID();
    await expect(server.client.runs.create(thread.thread_id, ghostAssistant, { input: {} })).rejects.toThrow(`HTTP 404: No assistant found for "${ghostAssistant}"`);
    expect((await server.client.threads.get(thread.thread_id)).status).toBe('error');
    expect(await server.client.runs.list(thread.thread_id)).toHaveLength(1);
  });

  it('replays exactly the missed events after Last-Event-ID, and the whole stream when joining late', async () => {
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'r', delay_ms: 30 }, streamMode: ['updates', 'custom'], streamResumable: true });
    const all = (await collect(server.client.runs.joinStream(thread.thread_id, run.run_id))) as Part[];
    expect(events(all)).toEqual(['metadata', 'custom', 'updates', 'custom', 'updates', 'custom', 'updates']);
    const after = all[2]!.id!;
    const rest = (await collect(server.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: after }))) as Part[];
    expect(rest).toEqual(all.slice(3));
    const onlyUpdates = (await collect(server.client.runs.joinStream(thread.thread_id, run.run_id, { streamMode: 'updates' }))) as Part[];
    expect(events(onlyUpdates)).toEqual(['metadata', 'updates', 'updates', 'updates']);
  });

  it('starts a run with after_seconds once it is due', async () => {
    const thread = await server.client.threads.create();
    const created = Date.now();
    const run = await server.client.runs.create(thread.thread_id, 'nested', { input: {}, afterSeconds: 1 });
    expect(run.status).toBe('pending');
    expect(await server.client.runs.join(thread.thread_id, run.run_id)).toEqual({ trail: ['parent', 'child', 'grandchild'] });
    const waited = Date.now() - created;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(10_000);
  });

  it('creates a thread on demand with if_not_exists=create', async () => {
    const threadId = crypto.randomUUID();
    await server.client.runs.wait(threadId, 'nested', { input: {}, ifNotExists: 'create' });
    expect((await server.client.threads.get(threadId)).values).toEqual({ trail: ['parent', 'child', 'grandchild'] });
  });

  it('creates its thread with if_not_exists=create as creating the thread first would: the same metadata, graph and config', async () => {
    const asked = { input: {}, metadata: { origin: 'demand' }, config: { configurable: { tone: 'dry' } } };
    const onDemand = crypto.randomUUID();
    await server.client.runs.wait(onDemand, 'nested', { ...asked, ifNotExists: 'create' });
    const first = await server.client.threads.create({ metadata: { origin: 'demand' } });
    await server.client.runs.wait(first.thread_id, 'nested', asked);
    const [created, reference] = [await server.client.threads.get(onDemand), await server.client.threads.get(first.thread_id)];
    expect(created.metadata).toEqual(reference.metadata);
    expect(created.metadata).toMatchObject({ origin: 'demand', graph_id: 'nested' });
    expect(created.config).toEqual(reference.config);
    expect(created.config).toMatchObject({ configurable: { tone: 'dry' } });
    expect(created).toMatchObject({ status: 'idle', values: reference.values });
  });

  it('runs every run of several that race to create the same new thread, one after another on it', async () => {
    const threadId = crypto.randomUUID();
    const runs = await Promise.all(Array.from({ length: 6 }, () => server.client.runs.create(threadId, 'nested', { input: {}, ifNotExists: 'create' })));
    for (const run of runs) await server.client.runs.join(threadId, run.run_id);
    const ended = await server.client.runs.list(threadId);
    expect(ended.map((run) => run.status).sort()).toEqual(Array(6).fill('success'));
    expect(new Set(ended.map((run) => run.run_id))).toEqual(new Set(runs.map((run) => run.run_id)));
  });

  // Its receiver is on loopback, which serve allows here (AGENT_PLATFORM_WEBHOOK_ALLOW_PRIVATE); a deployed revision takes no such setting and refuses it (422).
  it.skipIf(atDeployed)('posts the finished run to its webhook', async () => {
    const received: any[] = [];
    const hook = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'nested', { input: {}, webhook: url });
    await server.client.runs.join(thread.thread_id, run.run_id);
    await expect.poll(() => received.length).toBe(1);
    expect(received[0]).toMatchObject({ run_id: run.run_id, thread_id: thread.thread_id, status: 'success', values: { trail: ['parent', 'child', 'grandchild'] } });
    hook.close();
  });
});

describe('stateless runs', () => {
  it('waits, streams, runs in the background and in batches without keeping a thread', async () => {
    expect(await server.client.runs.wait(null, 'nested', { input: {} })).toEqual({ trail: ['parent', 'child', 'grandchild'] });
    const parts = (await collect(server.client.runs.stream(null, 'nested', { input: {}, streamMode: 'updates' }))) as Part[];
    expect(events(parts)).toEqual(['metadata', 'updates', 'updates']);
    const before = await server.client.threads.count();
    const background = await server.client.runs.create(null as unknown as string, 'nested', { input: {} });
    const streamed = (await collect(server.client.runs.joinStream(null, background.run_id))) as Part[];
    expect(streamed[0]!.data.run_id).toBe(background.run_id);
    const batch = await server.client.runs.createBatch([
      { assistantId: 'factory', input: { name: 'A' } },
      { assistantId: 'factory', input: { name: 'B' } },
    ]);
    expect(batch).toHaveLength(2);
    expect(await server.client.threads.count()).toBe(before);
  });

  it('completes a stateless run’s queue job in the statement that stores its outcome, and a kept thread’s after', async () => {
    const stateless = await Promise.all([1, 2, 3].map(() => server.client.runs.create(null as unknown as string, 'nested', { input: {} })));
    const thread = await server.client.threads.create();
    const kept = await server.client.runs.create(thread.thread_id, 'nested', { input: {} });
    for (const run of stateless) await collect(server.client.runs.joinStream(null, run.run_id));
    await server.client.runs.join(thread.thread_id, kept.run_id);
    const db = new pg.Client({ connectionString: server.databaseUrl });
    await db.connect();
    try {
      // pg-boss stamps completed_on with the transaction's now(), as the outcome does ended_at: equal
      // stamps mean one statement. A kept thread's job completes after the thread is updated.
      const jobOf = async (runId: string) => {
        for (let waited = 0; ; waited += 20) {
          const { rows } = await db.query<{ status: string; state: string; same: boolean }>(
            `SELECT r.status, j.state, j.completed_on = r.ended_at AS same FROM agent_runs r JOIN pgboss.job j ON j.id::text = r.job_id WHERE r.id = $1`,
            [runId],
          );
          if (rows[0]?.state === 'completed' || waited > 5000) return rows[0];
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      for (const run of stateless) expect(await jobOf(run.run_id)).toEqual({ status: 'success', state: 'completed', same: true });
      expect(await jobOf(kept.run_id)).toEqual({ status: 'success', state: 'completed', same: false });
    } finally {
      await db.end();
    }
  });

  it('keeps the thread when on_completion is keep, with the run’s metadata', async () => {
    const marker = crypto.randomUUID();
    await server.client.runs.wait(null as unknown as string, 'nested', { input: {}, onCompletion: 'keep' as never, metadata: { marker } });
    const kept = await server.client.threads.search({ metadata: { marker }, limit: 100 });
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ metadata: { marker, graph_id: 'nested' }, values: { trail: ['parent', 'child', 'grandchild'] } });
  });
});
