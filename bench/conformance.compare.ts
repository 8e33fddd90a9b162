// `npm run bench:conformance`: the conformance fixture project (test/fixtures/conformance, written the
// way LangGraph Platform users write graphs) served twice, by the reference dev server
// (`langgraph-cli dev`, installed in bench/reference) and by `agent-platform serve` on its embedded
// PostgreSQL. The same probes (one per item of the conformance issue) run against both through the
// official SDK and fetch, and one table prints what each server answered and whether they agree.
//
// Options: --skip-reference (platform column only). Prints; asserts nothing (the tests do).
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@langchain/langgraph-sdk';
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
    for (const graphId of ['zod_agent', 'state_schema', 'annotation', 'configured', 'logged', 'nested_ask']) {
      await client.assistants.getSchemas(graphId).catch(() => client.assistants.getSchemas(graphId).catch(() => undefined));
    }
    return (await answers({ url: server.url, client })).map((answer) => answer.replaceAll(server.url, '<url>'));
  } finally {
    await server.stop();
  }
}

async function main() {
  const { values: args } = parseArgs({ options: { 'skip-reference': { type: 'boolean', default: false } } });
  const platform = await measureOn(startPlatform);
  const reference = args['skip-reference'] ? probes.map(() => '(skipped)') : await measureOn(startReferenceProject);
  console.log('\n| item | probe | reference (langgraph-cli dev) | agent-platform serve | same |');
  console.log('|---|---|---|---|---|');
  probes.forEach((probe, i) =>
    console.log(`| ${probe.item} | ${probe.name} | ${reference[i]} | ${platform[i]} | ${reference[i] === platform[i] ? 'yes' : '**no**'} |`),
  );
  const same = probes.filter((_, i) => reference[i] === platform[i]).length;
  console.log(`\n${same} of ${probes.length} probes answer the same.`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
