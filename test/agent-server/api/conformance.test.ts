// A graph project written for LangGraph Platform (test/fixtures/conformance: Zod state with LangGraph's
// registry, StateSchema, Annotation, a factory reading `configurable`, a module calling getLogger() at
// import, a langgraph.json with inline env and a Hono `http.app`) served by `serve` unchanged, and
// answering through the official SDK as the reference server (`langgraph dev`) answers.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyGraphConfigEnv, readGraphConfig } from '../../../src/contracts/graph-config.js';
import { collect, fixtureConfig, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
let client: Client;
beforeAll(async () => {
  server = await startServe(fixtureConfig('conformance'));
  client = server.client;
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

type Schema = { $schema?: string; type?: string; properties: Record<string, Record<string, unknown>>; required?: string[] };
type Part = { event: string; data: any; id?: string };
const ghost = () => crypto.randomUUID();

describe('1. graph loading', () => {
  it('loads a graph that calls getLogger() at import, in the runtime thread too, with the env of langgraph.json', async () => {
    // The run executes in the runtime worker thread, which imported the module again.
    const result = await client.runs.wait(null, 'logged', { input: {} });
    expect(result).toEqual({ greeting: 'hello from langgraph.json' });
  });

  it('reads LANGGRAPH_CONFIG from the inline env for the default assistants', async () => {
    const [assistant] = await client.assistants.search({ graphId: 'annotation', metadata: { created_by: 'system' } });
    expect(assistant!.config).toEqual({ configurable: { model: 'from-env' } });
    const values = (await client.runs.wait(null, 'annotation', { input: { messages: [{ role: 'user', content: 'hi' }] } })) as { messages: { content: string }[] };
    expect(values.messages.at(-1)!.content).toBe('reply 1 (model from-env)');
  });

  it('reads env from a file named by langgraph.json, without overriding the operator’s environment', () => {
    const dir = mkdtempSync(join(tmpdir(), 'graph-env-'));
    try {
      writeFileSync(join(dir, '.env'), 'FROM_FILE="yes"\nALREADY_SET=file\n');
      writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { g: './g.ts:graph' }, env: '.env' }));
      const env: NodeJS.ProcessEnv = { ALREADY_SET: 'operator' };
      applyGraphConfigEnv(readGraphConfig(join(dir, 'langgraph.json')), env);
      expect(env).toEqual({ FROM_FILE: 'yes', ALREADY_SET: 'operator' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('2. schemas', () => {
  it('gives a Zod state’s JSON Schemas with types, enums, defaults, jsonSchemaExtra and the messages marker', async () => {
    const schemas = await client.assistants.getSchemas('zod_agent');
    const state = schemas.state_schema as unknown as Schema;
    expect(state.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(state.properties.mood).toEqual({ type: 'string', enum: ['calm', 'excited'], default: 'calm', description: 'How the agent answers' });
    expect(state.properties.topic).toEqual({ type: 'string', langgraph_nodes: ['answer'], langgraph_type: 'prompt' });
    expect(state.properties.messages).toMatchObject({ langgraph_type: 'messages' });
    expect((schemas.input_schema as unknown as Schema).properties.mood).toMatchObject({ enum: ['calm', 'excited'] });
    expect((schemas.output_schema as unknown as Schema).required).toEqual(['messages', 'mood', 'topic']);
    const config = schemas.config_schema as unknown as Schema;
    expect(config.properties).toEqual({ model: { type: 'string', enum: ['small', 'large'], default: 'small' }, temperature: { type: 'number', minimum: 0, maximum: 2 } });
    expect(schemas.context_schema).toEqual(schemas.config_schema);
  });

  it('gives a StateSchema’s JSON Schemas (reducer input in the input schema)', async () => {
    const schemas = await client.assistants.getSchemas('state_schema');
    const state = schemas.state_schema as unknown as Schema;
    expect(state.properties.messages).toMatchObject({ langgraph_type: 'messages' });
    expect(state.properties.count).toMatchObject({ type: 'number', default: 0 });
    expect(state.properties.history).toMatchObject({ type: 'array', items: { type: 'string' }, langgraph_nodes: ['tally'] });
    expect((schemas.input_schema as unknown as Schema).properties.history).toMatchObject({ type: 'string', langgraph_nodes: ['tally'] });
  });

  it('gives an Annotation root’s channels, its messages channel marked, reducer defaults', async () => {
    const schemas = await client.assistants.getSchemas('annotation');
    const state = schemas.state_schema as unknown as Schema;
    expect(Object.keys(state.properties).sort()).toEqual(['messages', 'summary', 'turns']);
    expect(state.properties.messages).toMatchObject({ type: 'array', langgraph_type: 'messages' });
    expect(state.properties.turns).toEqual({ type: 'number', default: 0 });
    expect(schemas.config_schema).toMatchObject({ type: 'object' });
  });

  it('gives each subgraph’s {state, input, output, config}, typed from its TypeScript types', async () => {
    const subgraphs = (await client.assistants.getSubgraphs('nested_ask')) as unknown as Record<string, Record<string, Schema>>;
    expect(Object.keys(subgraphs)).toEqual(['child']);
    expect(Object.keys(subgraphs.child!).sort()).toEqual(['config', 'input', 'output', 'state']);
    expect(subgraphs.child!.state!.properties).toEqual({ colour: { type: 'string' } });
  });

  it('reads an Annotation graph’s state and config types from its TypeScript source, as the reference does', async () => {
    const schemas = await client.assistants.getSchemas('typed');
    const state = schemas.state_schema as unknown as Schema;
    expect(state.properties.draft).toEqual({ type: 'string' });
    expect(state.properties.tags).toEqual({ type: 'array', items: { type: 'string' }, default: [] });
    expect(state.properties.messages).toMatchObject({ type: 'array', langgraph_type: 'messages' });
    // The union of literals in the config annotation, as the reference answers it.
    expect(schemas.config_schema).toEqual({
      type: 'object',
      properties: { model: { enum: ['fast', 'smart'], type: 'string' }, temperature: { type: 'number' } },
      $schema: 'http://json-schema.org/draft-07/schema#',
    });
    expect(schemas.context_schema).toEqual(schemas.config_schema);
    const subgraphs = (await client.assistants.getSubgraphs('typed')) as unknown as Record<string, Record<string, Schema>>;
    expect(subgraphs.editor!.state!.properties).toEqual({ draft: { type: 'string' }, revisions: { type: 'number', default: 0 } });
    expect(subgraphs.editor!.output!.properties.revisions).toEqual({ type: 'number', default: 0 });
  });
});

describe('3. assistant PATCH', () => {
  it('keeps config, context and metadata the body leaves out, and makes a new version', async () => {
    const created = await client.assistants.create({
      graphId: 'annotation',
      config: { configurable: { model: 'm1' } },
      context: { user: 'u1' },
      metadata: { team: 'a' },
      name: 'before',
    });
    const patched = await client.assistants.update(created.assistant_id, { name: 'after' });
    expect(patched).toMatchObject({ name: 'after', version: 2, config: { configurable: { model: 'm1' } }, context: { user: 'u1' }, metadata: { team: 'a' } });
    const versions = await client.assistants.getVersions(created.assistant_id);
    expect(versions.map((v) => [v.version, v.name, v.config])).toEqual([
      [2, 'after', { configurable: { model: 'm1' } }],
      [1, 'before', { configurable: { model: 'm1' } }],
    ]);
    const replaced = await client.assistants.update(created.assistant_id, { config: { configurable: { model: 'm2' } } });
    expect(replaced).toMatchObject({ version: 3, config: { configurable: { model: 'm2' } }, context: { user: 'u1' } });
  });
});

describe('4. checkpoint metadata', () => {
  it('carries the run’s metadata, so history filtered by it finds the run’s checkpoints', async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'annotation', { input: { messages: [{ role: 'user', content: 'hi' }] }, metadata: { probe: 'p1' } });
    await client.runs.wait(thread.thread_id, 'annotation', { input: { messages: [{ role: 'user', content: 'again' }] }, metadata: { probe: 'p2' } });
    const first = await client.threads.getHistory(thread.thread_id, { metadata: { probe: 'p1' } });
    expect(first.length).toBeGreaterThan(0);
    expect(first.every((state) => (state.metadata as { probe?: string }).probe === 'p1')).toBe(true);
    const all = await client.threads.getHistory(thread.thread_id);
    const second = await client.threads.getHistory(thread.thread_id, { metadata: { probe: 'p2' } });
    expect(first.length + second.length).toBe(all.length);
    expect(all[0]!.metadata).toMatchObject({ probe: 'p2', graph_id: 'annotation', model: 'from-env' });
  });
});

describe('5. factory graphs', () => {
  it('are built with the thread’s config for state reads, history and as_node updates', async () => {
    const thread = await client.threads.create();
    const output = await client.runs.wait(thread.thread_id, 'configured', { input: { text: 'hey' }, config: { configurable: { variant: 'loud' } } });
    expect(output).toEqual({ text: 'HEY!' });
    expect((await client.threads.get(thread.thread_id)).config).toMatchObject({ configurable: { variant: 'loud' } });
    // `shout` exists only in the loud variant of the graph.
    await client.threads.updateState(thread.thread_id, { values: { text: 'edited' }, asNode: 'shout' });
    const state = await client.threads.getState<{ text: string }>(thread.thread_id);
    expect(state.values).toEqual({ text: 'edited' });
    expect(state.metadata).toMatchObject({ source: 'update' });
    const history = await client.threads.getHistory(thread.thread_id);
    expect(history.map((s) => (s.metadata as { source: string }).source)).toEqual(['update', 'loop', 'loop', 'input']);
  });
});

describe('6. stream event ids', () => {
  it('count from 0 in each run, and Last-Event-ID resumes after the event it names', async () => {
    const thread = await client.threads.create();
    let runId = '';
    const parts = (await collect(
      client.runs.stream(thread.thread_id, 'annotation', {
        input: { messages: [{ role: 'user', content: 'x' }] },
        streamMode: ['values', 'updates'],
        streamResumable: true,
        onRunCreated: (meta) => (runId = meta.run_id),
      }),
    )) as Part[];
    expect(parts.map((p) => p.event)).toEqual(['metadata', 'values', 'updates', 'values']);
    expect(parts.map((p) => p.id)).toEqual(['0', '1', '2', '3']);
    const rest = (await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: '0' }))) as Part[];
    expect(rest).toEqual(parts.slice(1));
    const second = (await collect(client.runs.stream(thread.thread_id, 'annotation', { input: { messages: [] }, streamMode: 'updates' }))) as Part[];
    expect(second.map((p) => p.id)).toEqual(['0', '1']);
  });
});

describe('7. thread state shape', () => {
  it('gives a subgraph task’s checkpoint only the keys the reference sends', async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'nested_ask', { input: {} });
    const state = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual(['child']);
    const checkpoint = state.tasks[0]!.checkpoint as Record<string, unknown>;
    expect(Object.keys(checkpoint).sort()).toEqual(['checkpoint_ns', 'thread_id']);
    expect(checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_ns: expect.stringMatching(/^child:/) });
    const withSubgraphs = await client.threads.getState(thread.thread_id, undefined, { subgraphs: true });
    expect(withSubgraphs.tasks[0]!.checkpoint).toBeNull();
    expect((withSubgraphs.tasks[0]!.state as { checkpoint: { checkpoint_id: string } }).checkpoint.checkpoint_id).toEqual(expect.any(String));
  });
});

describe('8. error texts', () => {
  it('match the reference server’s', async () => {
    const threadId = ghost();
    await expect(client.threads.get(threadId)).rejects.toThrow(`HTTP 404: Thread with ID ${threadId} not found`);
    await expect(client.threads.getState(threadId)).rejects.toThrow(`HTTP 404: Thread with ID ${threadId} not found`);
    await expect(client.threads.update(threadId, { metadata: {} })).rejects.toThrow(`HTTP 404: Thread with ID ${threadId} not found`);
    const message = (id: string) => `HTTP 404: No assistant found for "${id}". Make sure the assistant ID is for a valid assistant or a valid graph ID.`;
    await expect(client.runs.wait(null, 'no_such_graph', { input: {} })).rejects.toThrow(message('no_such_graph'));
    const assistantId = ghost();
    await expect(client.runs.wait(null, assistantId, { input: {} })).rejects.toThrow(message(assistantId));
    await expect(client.assistants.get(assistantId)).rejects.toThrow('HTTP 404: Assistant not found');
    const thread = await client.threads.create();
    await expect(client.runs.get(thread.thread_id, ghost())).rejects.toThrow('HTTP 404: Run not found');
    await expect(client.runs.cancel(thread.thread_id, ghost())).rejects.toThrow('HTTP 404: Run not found');
  });
});

describe('9. the project’s http.app', () => {
  it('serves its routes, which win over the server’s, with its middleware before every route', async () => {
    const hello = await fetch(`${server.url}/custom/hello`);
    expect(hello.status).toBe(200);
    expect(hello.headers.get('x-project-middleware')).toBe('seen');
    expect(await hello.json()).toEqual({ hello: 'hello from langgraph.json' });
    const echo = await fetch(`${server.url}/custom/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }) });
    expect(await echo.json()).toEqual({ echoed: { a: 1 } });
    expect(await (await fetch(`${server.url}/info`)).json()).toEqual({ custom_info: true });

    // The server's own routes still answer (bodies intact), with the middleware's header.
    const search = await fetch(`${server.url}/assistants/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ graph_id: 'logged' }) });
    expect(search.headers.get('x-project-middleware')).toBe('seen');
    expect(((await search.json()) as { graph_id: string }[]).map((a) => a.graph_id)).toEqual(['logged']);
    const blocked = new Client({ apiUrl: server.url, defaultHeaders: { 'x-block': 'yes' }, callerOptions: { maxRetries: 0 } });
    await expect(blocked.assistants.search()).rejects.toThrow('HTTP 403: blocked by the project');
  });
});

describe('9. generative UI from langgraph.json', () => {
  it('bundles the `ui` components and loads them from this server’s own URL', async () => {
    // What the SDK's LoadExternalComponent asks for.
    const html = await client['~ui'].getComponent('zod_agent', 'weather');
    const script = `${server.url}/ui/zod_agent/entrypoint.js`;
    expect(html).toContain(`<link rel="stylesheet" href="${server.url}/ui/zod_agent/entrypoint.css" />`);
    expect(html).toContain(`<script src="${script}" onload='__LGUI_zod_agent.render("weather", "{{shadowRootId}}")'></script>`);
    const js = await fetch(script);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    const source = await js.text();
    expect(source).toContain('var __LGUI_zod_agent');
    expect(source).toContain('Weather in ');
    expect(await (await fetch(`${server.url}/ui/zod_agent/entrypoint.css`)).text()).toContain('.weather-card');
    const missing = await fetch(`${server.url}/ui/annotation`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"weather"}' });
    expect([missing.status, await missing.text()]).toEqual([404, 'UI not found for agent "annotation"']);
  });
});

describe('10. errors a graph or a request causes', () => {
  it('answer 4xx or end the run in error, never 500', async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'logged', { input: {} });
    await expect(client.threads.updateState(thread.thread_id, { values: { greeting: 'x' }, asNode: 'no_such_node' })).rejects.toThrow(
      'HTTP 400: Node "no_such_node" does not exist',
    );
    await expect(
      client.threads.updateState(thread.thread_id, { values: { greeting: 'x' }, asNode: 'greet', checkpoint: { checkpoint_ns: 'nope:1' } as never }),
    ).rejects.toThrow('HTTP 404: Subgraph "nope" not found');
    // The SDK raises the run's error from `wait`.
    await expect(client.runs.wait(thread.thread_id, 'logged', { input: { fail: true } })).rejects.toThrow('Error: the graph was asked to fail');
    expect((await client.runs.list(thread.thread_id))[0]!.status).toBe('error');
    const invalid = await client.runs.wait(null, 'zod_agent', { input: { mood: 'angry' }, raiseError: false });
    expect(invalid).toMatchObject({ __error__: { error: '$ZodError' } });
  });
});

describe('11. webhooks, nested state, OpenAPI names, bad state values', () => {
  it('delivers a webhook given as a path to the project’s http.app, as the reference delivers it to itself', async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'logged', { input: {}, webhook: '/custom/webhook' });
    await client.runs.join(thread.thread_id, run.run_id);
    // Sent after the run ended, without the caller waiting on it: the app's route records it.
    const deadline = Date.now() + 15_000;
    let received: Response;
    do received = await fetch(`${server.url}/custom/webhook/${run.run_id}`);
    while (received.status === 404 && Date.now() < deadline && (await new Promise((resolve) => setTimeout(resolve, 100)), true));
    expect(received.status).toBe(200);
    expect(await received.json()).toMatchObject({ run_id: run.run_id, thread_id: thread.thread_id, status: 'success', values: { greeting: 'hello from langgraph.json' } });
    await expect(client.runs.create(thread.thread_id, 'logged', { input: {}, webhook: '//elsewhere.example/hook' })).rejects.toThrow('HTTP 422');
  });

  it('delivers it to the very app the server serves, whose module state a later request reads', async () => {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'logged', { input: {}, webhook: '/custom/webhook-memory' });
    await client.runs.join(thread.thread_id, run.run_id);
    const deadline = Date.now() + 15_000;
    let received: Response;
    do received = await fetch(`${server.url}/custom/webhook-memory/${run.run_id}`);
    while (received.status === 404 && Date.now() < deadline && (await new Promise((resolve) => setTimeout(resolve, 100)), true));
    expect(received.status).toBe(200);
    expect(await received.json()).toMatchObject({ run_id: run.run_id, status: 'success' });
  });

  it('gives a subgraph’s state inside a task no `interrupts` key (subgraphs=true), as the reference', async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'nested_ask', { input: {} });
    const state = await client.threads.getState(thread.thread_id, undefined, { subgraphs: true });
    expect(state).toHaveProperty('interrupts');
    const nested = state.tasks[0]!.state as unknown as Record<string, unknown>;
    expect(Object.keys(nested).sort()).toEqual(['checkpoint', 'created_at', 'metadata', 'next', 'parent_checkpoint', 'tasks', 'values']);
    expect((nested.tasks as { interrupts: { value: string }[] }[])[0]!.interrupts[0]!.value).toBe('Which colour?');
  });

  it('names /openapi.json path parameters as LangGraph’s published OpenAPI does', async () => {
    const document = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
    const paths = Object.keys(document.paths);
    expect(paths).toEqual(expect.arrayContaining(['/threads/{thread_id}/runs/{run_id}', '/assistants/{assistant_id}/schemas', '/runs/crons/{cron_id}']));
    expect(paths.filter((path) => /\{[a-z]+[A-Z]/.test(path))).toEqual([]);
    expect(document.paths['/threads/{thread_id}/runs/{run_id}']!.get!.parameters!.map((p) => p.name)).toEqual(['thread_id', 'run_id']);
  });

  it('answers a state update whose values have the wrong type with a 400 saying why', async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'annotation', { input: { messages: [] } });
    await expect(client.threads.updateState(thread.thread_id, { values: { messages: 5 } })).rejects.toThrow('HTTP 400: Unable to coerce message');
    const counted = await client.threads.create();
    await client.runs.wait(counted.thread_id, 'state_schema', { input: {} });
    await expect(client.threads.updateState(counted.thread_id, { values: { count: 'many' } })).rejects.toThrow('HTTP 400: Validation failed for field "count"');
  });
});

describe('12. the project’s http.app and the server', () => {
  it('lets its middleware read and change the JSON body of a request for the server’s own routes', async () => {
    const reading = new Client({ apiUrl: server.url, defaultHeaders: { 'x-read-body': 'yes' }, callerOptions: { maxRetries: 0 } });
    expect((await reading.threads.create({ metadata: { team: 'a' } })).metadata).toEqual({ team: 'a' });
    const stamping = new Client({ apiUrl: server.url, defaultHeaders: { 'x-read-body': 'yes', 'x-stamp': 'project' }, callerOptions: { maxRetries: 0 } });
    expect((await stamping.threads.create({ metadata: { team: 'b' } })).metadata).toEqual({ team: 'b', stamped_by: 'project' });
    // Bodies the middleware leaves alone reach the route as sent.
    expect((await client.threads.create({ metadata: { team: 'c' } })).metadata).toEqual({ team: 'c' });
  });

  it('reaches this server from `new Client()` without a url inside its routes', async () => {
    const response = await fetch(`${server.url}/custom/graphs`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(['annotation', 'configured', 'logged', 'nested_ask', 'state_schema', 'typed', 'zod_agent']);
  });
});

describe('13. schemas from types, bounded in time', () => {
  it('falls back to the runtime schemas, saying so in the log, when reading the types takes too long, and serves the types once read', { timeout: 180_000 }, async () => {
    const slow = await startServe({ ...fixtureConfig('conformance'), env: { LOG_LEVEL: 'warn', LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: '1' } });
    try {
      const schemas = await slow.client.assistants.getSchemas('typed');
      // What the channels say at runtime: no types, a reducer's default, the messages marker.
      expect(schemas.config_schema).toEqual({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' });
      expect((schemas.state_schema as unknown as Schema).properties.tags).toEqual({ type: 'array', default: [] });
      // Serve's log; a deployed revision logs to its deploy log at the platform's level (silent in tests).
      if (!slow.deployed) expect(slow.output()).toContain('schemas from TypeScript types not read (took longer than 1 ms)');
      // The read goes on: once done, a request that waits less than its bound gets the types.
      const deadline = Date.now() + 120_000;
      let config: unknown;
      do config = (await slow.client.assistants.getSchemas('typed')).config_schema;
      while (!(config as { properties?: object }).properties && Date.now() < deadline && (await new Promise((resolve) => setTimeout(resolve, 500)), true));
      expect((config as { properties: Record<string, unknown> }).properties.model).toEqual({ enum: ['fast', 'smart'], type: 'string' });
    } finally {
      await slow.stop();
      removeDir(slow.dir);
    }
  });
});
