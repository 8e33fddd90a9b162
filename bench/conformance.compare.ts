// `npm run bench:conformance`: the conformance fixture project (test/fixtures/conformance, written the
// way LangGraph Platform users write graphs) served twice, by the reference dev server
// (`langgraph-cli dev`, installed in bench/reference) and by `agent-platform serve` on its embedded
// PostgreSQL. The same probes (one per conformance item) run against both through the
// official SDK and fetch, and one table prints what each server answered and whether they agree.
//
// Options: --skip-reference (platform column only). Prints; asserts nothing (the tests do).
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@langchain/langgraph-sdk';
import { readGraphConfig } from '../src/contracts/graph-config.js';
import { readTypeSchemas } from '../src/agent-server/runtime/type-schemas.js';
import { freePort, referenceDir, startReference, startServe, stopProcess } from './processes.js';

const root = join(new URL('.', import.meta.url).pathname, '..');

type Server = { url: string; client: Client };
type Probe = { item: string; name: string; run: (server: Server) => Promise<unknown> };

const ghost = '00000000-0000-4000-8000-000000000001';
const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const keys = (value: unknown) => Object.keys((value ?? {}) as object).sort().join(',');
const properties = (schema: unknown) => (schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
async function sseIds(response: Response) {
  const text = await response.text();
  return [...text.matchAll(/^id: ?(.*)$/gm)].map((match) => match[1]).join(',');
}

const probes: Probe[] = [
  { item: '1 loading', name: 'getLogger() at import + inline env', run: ({ client }) => client.runs.wait(null, 'logged', { input: {} }) },
  {
    item: '1 loading',
    name: 'LANGGRAPH_CONFIG default assistant config',
    run: async ({ client }) => (await client.assistants.search({ graphId: 'annotation', metadata: { created_by: 'system' } }))[0]?.config,
  },
  { item: '2 schemas', name: 'zod_agent state.mood', run: async ({ client }) => properties((await client.assistants.getSchemas('zod_agent')).state_schema).mood },
  { item: '2 schemas', name: 'zod_agent state.topic (jsonSchemaExtra)', run: async ({ client }) => properties((await client.assistants.getSchemas('zod_agent')).state_schema).topic },
  {
    item: '2 schemas',
    name: 'zod_agent messages marker',
    run: async ({ client }) => (properties((await client.assistants.getSchemas('zod_agent')).state_schema).messages as { langgraph_type?: string })?.langgraph_type,
  },
  { item: '2 schemas', name: 'zod_agent config_schema properties', run: async ({ client }) => properties((await client.assistants.getSchemas('zod_agent')).config_schema) },
  { item: '2 schemas', name: 'zod_agent $schema', run: async ({ client }) => ((await client.assistants.getSchemas('zod_agent')).state_schema as { $schema?: string })?.$schema },
  { item: '2 schemas', name: 'StateSchema state.count', run: async ({ client }) => properties((await client.assistants.getSchemas('state_schema')).state_schema).count },
  { item: '2 schemas', name: 'StateSchema input.history', run: async ({ client }) => properties((await client.assistants.getSchemas('state_schema')).input_schema).history },
  { item: '2 schemas', name: 'Annotation state channels', run: async ({ client }) => keys(properties((await client.assistants.getSchemas('annotation')).state_schema)) },
  { item: '2 schemas', name: 'Annotation state.turns', run: async ({ client }) => properties((await client.assistants.getSchemas('annotation')).state_schema).turns },
  {
    item: '2 schemas',
    name: 'subgraphs of nested_ask',
    run: async ({ client }) => {
      const subgraphs = (await client.assistants.getSubgraphs('nested_ask')) as unknown as Record<string, Record<string, unknown>>;
      return Object.entries(subgraphs).map(([ns, parts]) => `${ns}: ${keys(parts)}; state ${keys(properties(parts.state))}`).join(' | ');
    },
  },
  { item: '2 schemas (types)', name: 'typed config_schema', run: async ({ client }) => (await client.assistants.getSchemas('typed')).config_schema },
  {
    item: '2 schemas (types)',
    name: 'typed state draft, tags, messages',
    run: async ({ client }) => {
      const state = properties((await client.assistants.getSchemas('typed')).state_schema) as Record<string, { $ref?: string; items?: unknown }>;
      return { draft: state.draft, tags: state.tags, messages: state.messages ? { ...state.messages, items: state.messages.items ? '…' : undefined } : undefined };
    },
  },
  {
    item: '2 schemas (types)',
    name: 'subgraph state properties (typed editor, nested_ask child)',
    run: async ({ client }) => {
      const typed = (await client.assistants.getSubgraphs('typed')) as unknown as Record<string, Record<string, unknown>>;
      const nested = (await client.assistants.getSubgraphs('nested_ask')) as unknown as Record<string, Record<string, unknown>>;
      return { editor: properties(typed.editor?.state), child: properties(nested.child?.state) };
    },
  },
  {
    item: '3 PATCH',
    name: 'PATCH {name} keeps config/context/metadata',
    run: async ({ client }) => {
      const created = await client.assistants.create({ graphId: 'annotation', config: { configurable: { model: 'm1' } }, context: { user: 'u1' }, metadata: { team: 'a' }, name: 'before' });
      const patched = await client.assistants.update(created.assistant_id, { name: 'after' });
      return { version: patched.version, config: patched.config, context: patched.context, metadata: patched.metadata };
    },
  },
  {
    item: '4 checkpoint metadata',
    name: 'history filtered by run metadata',
    run: async ({ client }) => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, 'annotation', { input: { messages: [{ role: 'user', content: 'hi' }] }, metadata: { probe: 'p1' } });
      await client.runs.wait(thread.thread_id, 'annotation', { input: { messages: [{ role: 'user', content: 'again' }] }, metadata: { probe: 'p2' } });
      const p1 = await client.threads.getHistory(thread.thread_id, { metadata: { probe: 'p1' } });
      const all = await client.threads.getHistory(thread.thread_id);
      return `p1 ${p1.length} of ${all.length}; newest has probe=${(all[0]?.metadata as { probe?: string })?.probe}`;
    },
  },
  {
    item: '5 factory',
    name: 'run, then as_node of a config-only node',
    run: async ({ client }) => {
      const thread = await client.threads.create();
      const output = await client.runs.wait(thread.thread_id, 'configured', { input: { text: 'hey' }, config: { configurable: { variant: 'loud' } } });
      await client.threads.updateState(thread.thread_id, { values: { text: 'edited' }, asNode: 'shout' });
      const history = await client.threads.getHistory(thread.thread_id);
      return { output, sources: history.map((state) => (state.metadata as { source: string }).source).join(',') };
    },
  },
  {
    item: '6 SSE ids',
    name: 'ids of a resumable stream; second run',
    run: async ({ url, client }) => {
      const thread = await client.threads.create();
      const body = { assistant_id: 'annotation', input: { messages: [{ role: 'user', content: 'x' }] }, stream_mode: ['values', 'updates'], stream_resumable: true };
      const first = await sseIds(await post(`${url}/threads/${thread.thread_id}/runs/stream`, body));
      const second = await sseIds(await post(`${url}/threads/${thread.thread_id}/runs/stream`, { assistant_id: 'annotation', input: { messages: [] }, stream_mode: 'updates' }));
      return `${first} / ${second}`;
    },
  },
  {
    item: '7 state shape',
    name: 'tasks[0].checkpoint keys of an interrupted subgraph',
    run: async ({ client }) => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, 'nested_ask', { input: {} });
      return keys((await client.threads.getState(thread.thread_id)).tasks[0]?.checkpoint);
    },
  },
  { item: '8 error texts', name: 'unknown thread', run: ({ client }) => client.threads.get(ghost) },
  { item: '8 error texts', name: 'unknown graph in a run', run: ({ client }) => client.runs.wait(null, 'no_such_graph', { input: {} }) },
  { item: '8 error texts', name: 'unknown assistant', run: ({ client }) => client.assistants.get(ghost) },
  {
    item: '8 error texts',
    name: 'unknown run',
    run: async ({ client }) => client.runs.get((await client.threads.create()).thread_id, ghost),
  },
  { item: '8 error texts', name: 'unknown cron', run: ({ client }) => client.crons.delete(ghost) },
  {
    item: '9 http.app',
    name: 'custom route + middleware header',
    run: async ({ url }) => {
      const response = await fetch(`${url}/custom/hello`);
      return `${response.status} ${response.headers.get('x-project-middleware')} ${await response.text()}`;
    },
  },
  { item: '9 http.app', name: 'app route wins (/info)', run: async ({ url }) => (await fetch(`${url}/info`)).text() },
  {
    item: '9 http.app',
    name: 'middleware blocks a server route',
    run: async ({ url }) => {
      const response = await post(`${url}/assistants/search`, {}, { 'x-block': 'yes' });
      return `${response.status} ${await response.text()}`;
    },
  },
  {
    item: '9 ui',
    name: 'POST /ui/zod_agent points at own URL',
    run: async ({ url }) => {
      const html = await (await post(`${url}/ui/zod_agent`, { name: 'weather' })).text();
      return html.includes(`${url}/ui/zod_agent/entrypoint.js`) ? 'script from this server' : html.slice(0, 160);
    },
  },
  {
    item: '10 no 500',
    name: 'as_node of an unknown node',
    run: async ({ client }) => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, 'logged', { input: {} });
      return client.threads.updateState(thread.thread_id, { values: { greeting: 'x' }, asNode: 'no_such_node' });
    },
  },
  { item: '10 no 500', name: 'graph raises in a stateless run', run: ({ client }) => client.runs.wait(null, 'logged', { input: { fail: true } }) },
  {
    item: '11 webhook',
    name: 'webhook "/custom/webhook" reaches the http.app',
    run: async ({ url, client }) => {
      const thread = await client.threads.create();
      const run = await client.runs.create(thread.thread_id, 'logged', { input: {}, webhook: '/custom/webhook' });
      await client.runs.join(thread.thread_id, run.run_id);
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 200))) {
        const response = await fetch(`${url}/custom/webhook/${run.run_id}`);
        if (response.ok) {
          const payload = (await response.json()) as { run_id: string; status: string; values: unknown };
          return { same_run: payload.run_id === run.run_id, status: payload.status, values: payload.values };
        }
      }
      return 'not delivered in 15 s';
    },
  },
  {
    item: '11 state shape',
    name: 'subgraphs=true: keys of a task’s subgraph state',
    run: async ({ client }) => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, 'nested_ask', { input: {} });
      return keys((await client.threads.getState(thread.thread_id, undefined, { subgraphs: true })).tasks[0]?.state);
    },
  },
  {
    item: '11 OpenAPI',
    name: '/openapi.json path of a thread’s run',
    run: async ({ url }) => {
      const document = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
      return Object.keys(document.paths).filter((path) => /^\/threads\/\{[^}]+\}\/runs\/\{[^}]+\}$/.test(path));
    },
  },
  {
    item: '11 bad values',
    name: 'state update: messages: 5',
    run: async ({ client }) => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, 'annotation', { input: { messages: [] } });
      return client.threads.updateState(thread.thread_id, { values: { messages: 5 } });
    },
  },
  {
    item: '11 bad values',
    name: 'state update: StateSchema count: "many"',
    run: async ({ client }) => {
      const thread = await client.threads.create();
      await client.runs.wait(thread.thread_id, 'state_schema', { input: {} });
      return client.threads.updateState(thread.thread_id, { values: { count: 'many' } });
    },
  },
  {
    item: '12 http.app',
    name: 'middleware reads, then replaces, a thread-create body',
    run: async ({ url }) => {
      const create = (headers: Record<string, string>) => post(`${url}/threads`, { metadata: { team: 'a' } }, headers).then(async (r) => `${r.status} ${JSON.stringify(((await r.json()) as { metadata?: unknown }).metadata)}`);
      return `read: ${await create({ 'x-read-body': 'yes' })}; replaced: ${await create({ 'x-read-body': 'yes', 'x-stamp': 'project' })}`;
    },
  },
  { item: '12 http.app', name: 'new Client() inside a route', run: async ({ url }) => { const r = await fetch(`${url}/custom/graphs`); return `${r.status} ${await r.text()}`; } },
  { item: '10 no 500', name: 'input failing Zod validation', run: ({ client }) => client.runs.wait(null, 'zod_agent', { input: { mood: 'angry' }, raiseError: false }) },
];

function render(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return (text ?? 'undefined').replace(/\|/g, '\\|').replace(/\s+/g, ' ').slice(0, 220);
}

async function answers(server: Server) {
  const results: string[] = [];
  for (const probe of probes) {
    try {
      results.push(render(await probe.run(server)));
    } catch (error) {
      results.push(`throws: ${render((error as Error).message)}`);
    }
  }
  return results;
}

/** The reference dev server over a copy of the fixture inside bench/reference (so its imports resolve there). */
async function startReferenceProject() {
  const project = join(referenceDir, 'conformance');
  rmSync(project, { recursive: true, force: true });
  cpSync(join(root, 'test/fixtures/conformance'), project, { recursive: true });
  const port = await freePort();
  const server = await startReference(join(project, 'langgraph.json'), port);
  return { url: `http://127.0.0.1:${port}`, stop: () => stopProcess(server.child) };
}

async function startPlatform() {
  const port = await freePort();
  const server = await startServe(join(root, 'test/fixtures/conformance/langgraph.json'), port, { args: ['--dev'] });
  return { url: `http://127.0.0.1:${port}`, stop: server.stop };
}

async function measureOn(start: () => Promise<{ url: string; stop: () => Promise<void> }>) {
  const server = await start();
  try {
    const client = new Client({ apiUrl: server.url, callerOptions: { maxRetries: 0 } });
    // The reference extracts schemas lazily with the TypeScript compiler in a worker that gives up after
    // 30 s on a loaded machine; warm each graph's schemas up (a second try once the first timed out).
    const timed = async () => {
      const started = performance.now();
      await client.assistants.getSchemas('typed').catch(() => client.assistants.getSchemas('typed').catch(() => undefined));
      return Math.round(performance.now() - started);
    };
    const schemaMs = { first: await timed(), second: await timed() };
    for (const graphId of ['zod_agent', 'state_schema', 'annotation', 'configured', 'logged', 'nested_ask']) {
      await client.assistants.getSchemas(graphId).catch(() => client.assistants.getSchemas(graphId).catch(() => undefined));
    }
    const results = (await answers({ url: server.url, client })).map((answer) => answer.replaceAll(server.url, '<url>'));
    return { results, schemaMs };
  } finally {
    await server.stop();
  }
}

/**
 * How long reading schemas from TypeScript types takes (one type-checker program, as the runtime's
 * worker runs it) for the fixture project and for a project of 50 graphs like its `typed` one, each
 * with a subgraph; made inside bench/ so that its imports resolve.
 */
function timeTypeSchemas() {
  const time = (specs: Parameters<typeof readTypeSchemas>[0]) => {
    const started = performance.now();
    const schemas = readTypeSchemas(specs);
    return { ms: Math.round(performance.now() - started), graphs: Object.keys(schemas).length };
  };
  const fixture = time(readGraphConfig(join(root, 'test/fixtures/conformance/langgraph.json')).graphs);
  const dir = join(root, 'bench', '.type-schemas-50');
  mkdirSync(dir, { recursive: true });
  try {
    const source = readFileSync(join(root, 'test/fixtures/conformance/typed.ts'), 'utf8');
    const specs = Array.from({ length: 50 }, (_, i) => {
      const file = join(dir, `graph-${i}.ts`);
      writeFileSync(file, source.replaceAll("'fast' | 'smart'", `'fast' | 'smart' | 'model-${i}'`));
      return { graphId: `graph_${i}`, file, exportName: 'graph' };
    });
    const fifty = time(specs);
    console.log(`Schemas from TypeScript types (cold: a new type-checker program): fixture project (${fixture.graphs} graphs) ${fixture.ms} ms; 50-graph project ${fifty.ms} ms (${fifty.graphs} graphs typed).`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const { values: args } = parseArgs({ options: { 'skip-reference': { type: 'boolean', default: false } } });
  timeTypeSchemas();
  const platformRun = await measureOn(startPlatform);
  const referenceRun = args['skip-reference'] ? undefined : await measureOn(startReferenceProject);
  const platform = platformRun.results;
  const reference = referenceRun?.results ?? probes.map(() => '(skipped)');
  console.log('\n| item | probe | reference (langgraph-cli dev) | agent-platform serve | same |');
  console.log('|---|---|---|---|---|');
  probes.forEach((probe, i) =>
    console.log(`| ${probe.item} | ${probe.name} | ${reference[i]} | ${platform[i]} | ${reference[i] === platform[i] ? 'yes' : '**no**'} |`),
  );
  const same = probes.filter((_, i) => reference[i] === platform[i]).length;
  console.log(`\n${same} of ${probes.length} probes answer the same.`);
  const ms = (run?: { schemaMs: { first: number; second: number } }) => (run ? `first ${run.schemaMs.first} ms, then ${run.schemaMs.second} ms` : 'skipped');
  console.log(`GET /assistants/typed/schemas right after start (schemas from TypeScript types): reference ${ms(referenceRun)}; platform ${ms(platformRun)}.`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
