// npm run bench:thread-stream-compare — the thread streaming protocol side by side: the platform's
// `serve` and the reference server (`langgraphjs dev` of @langchain/langgraph-cli 1.4.5, the release
// of the SDK with ThreadStream, installed in bench/reference-thread-stream) run the same graphs
// (test/fixtures/thread-stream: a tool-calling agent with an extension, nested subgraphs, an
// interrupt, a failing graph) through the same commands; each run's events, read as the SDK reads
// them (SSE, every channel; and over a WebSocket subscription), are compared in order. Ids, sequence
// numbers, timestamps and uuids are masked; every difference left is printed with its path, and the
// known ones with their reason. Asserts nothing.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { protocolSseEvents } from '../test/support/protocol-socket.js';
import { freePort, startProcess, startServe, stopProcess } from './processes.js';

const here = new URL('.', import.meta.url).pathname;
const fixtures = join(here, '../test/fixtures');
const referenceDir = join(here, 'reference-thread-stream');
const GRAPHS = { tools: 'thread-stream/tools.ts', nested: 'thread-stream/nested.ts', interrupt: 'thread-stream/interrupt.ts', failing: 'thread-stream/failing.ts' };
const CHANNELS = ['values', 'updates', 'messages', 'tools', 'lifecycle', 'input', 'checkpoints', 'tasks', 'custom'];

type Event = { method: string; params: { namespace: string[]; node?: string; data: unknown } };
type Server = { name: string; url: string };

/**
 * Differences with a known reason, by path pattern (the path of a differing value in a masked event).
 * Anything else printed is unexplained.
 */
const KNOWN: [RegExp, string][] = [
  [/^tasks\.data\.metadata\.(created_by|langgraph_version|langgraph_plan|langgraph_host|langgraph_api_url)$/, 'run metadata: the reference stamps its own host fields (langgraph_plan, langgraph_host, …) and the assistant’s created_by on every run; the platform does not add them to run metadata (the same in the runs API)'],
  [/^lifecycle\.data\.error$/, 'a failed run’s `error`: the reference puts its serialized error as JSON text ({"error":"Error","message":"…"}), the platform the error’s message'],
];

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
function mask(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((item) => mask(item));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, mask(v, k)]));
  if (typeof value === 'string') {
    if (/(^|_)(id|ts|timestamp)$/.test(key) && !/tool_call_id/.test(key)) return '<id>';
    return value.replace(UUID, '<uuid>').replace(/run-<uuid>/g, '<message id>');
  }
  return value;
}

const shape = (event: Event) => mask({ method: event.method, namespace: event.params.namespace, node: event.params.node, data: event.params.data }) as Json;
type Json = Record<string, unknown>;

/** Paths where two masked values differ. */
function differences(a: unknown, b: unknown, path: string): string[] {
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) === !Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((key) => differences((a as Json)[key], (b as Json)[key], path ? `${path}.${key}` : key));
  }
  return [path];
}

async function command(server: Server, threadId: string, id: number, method: string, params: Json): Promise<Json> {
  const response = await fetch(`${server.url}/threads/${threadId}/commands`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, method, params }) });
  return (await response.json()) as Json;
}

const isRootEnd = (event: Event, count = 1) => event.method === 'lifecycle' && !event.params.namespace.length && ['completed', 'failed', 'interrupted'].includes(String((event.params.data as Json).event)) && count > 0;

/** A thread's events over SSE until `ends` root terminal lifecycles have arrived (or 20 s pass). */
async function sseEvents(server: Server, threadId: string, ends: number): Promise<Event[]> {
  const events: Event[] = [];
  let seen = 0;
  try {
    for await (const { event } of protocolSseEvents<Event>(server.url, threadId, { channels: CHANNELS }, { signal: AbortSignal.timeout(20_000) })) {
      events.push(event);
      if (isRootEnd(event) && ++seen >= ends) break;
    }
  } catch {
    // timed out: what arrived is compared
  }
  return events;
}

/** The run started on a WebSocket, then followed by one subscription to every channel. */
async function socketEvents(server: Server, graph: string, input: unknown): Promise<Event[]> {
  const threadId = crypto.randomUUID();
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/threads/${threadId}/stream/events`);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const events: Event[] = [];
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 20_000);
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as Event & { type: string; id?: number };
      if (message.type === 'success' && message.id === 1) ws.send(JSON.stringify({ id: 2, method: 'subscription.subscribe', params: { channels: CHANNELS } }));
      if (message.type !== 'event') return;
      events.push(message);
      if (isRootEnd(message)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  ws.send(JSON.stringify({ id: 1, method: 'run.start', params: { assistant_id: graph, input } }));
  await done;
  ws.close();
  return events;
}

type Case = { name: string; run: (server: Server) => Promise<Event[]> };

const viaSse = (graph: string, input: unknown, resume?: unknown): Case['run'] => async (server) => {
  const threadId = crypto.randomUUID();
  await command(server, threadId, 1, 'run.start', { assistant_id: graph, input });
  if (resume === undefined) return sseEvents(server, threadId, 1);
  const first = await sseEvents(server, threadId, 1);
  const request = first.find((event) => event.method === 'input.requested');
  const interruptId = (request?.params.data as { interrupt_id?: string } | undefined)?.interrupt_id;
  await command(server, threadId, 2, 'input.respond', { namespace: [], interrupt_id: interruptId, response: resume });
  // The stream of both runs (the first replayed), as a reader joining after the resume sees it.
  return sseEvents(server, threadId, 2);
};

const CASES: Case[] = [
  { name: 'tools agent (SSE): messages, tools, extension, custom writer', run: viaSse('tools', { messages: [{ role: 'user', content: 'Weather in Paris?' }] }) },
  { name: 'nested subgraphs (SSE)', run: viaSse('nested', { trail: [] }) },
  { name: 'interrupt, then input.respond (SSE)', run: viaSse('interrupt', { topic: 'cats' }, 'purr') },
  { name: 'failing graph (SSE)', run: viaSse('failing', { count: 0 }) },
  { name: 'nested subgraphs (WebSocket subscription after run.start)', run: (server) => socketEvents(server, 'nested', { trail: [] }) },
  { name: 'tools agent (WebSocket subscription after run.start)', run: (server) => socketEvents(server, 'tools', { messages: [{ role: 'user', content: 'Weather?' }] }) },
];

function installReference() {
  if (existsSync(join(referenceDir, 'node_modules/.bin/langgraphjs'))) return;
  console.error('Installing the reference server in bench/reference-thread-stream (npm ci, once)…');
  const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--legacy-peer-deps'], { cwd: referenceDir, stdio: 'inherit' });
  if (install.status !== 0) throw new Error(`npm ci in bench/reference-thread-stream failed (exit ${install.status ?? install.signal})`);
}

async function main() {
  installReference();
  // Each server gets the same graph files: the reference's copies sit in its folder, so their imports
  // resolve to its own dependencies.
  mkdirSync(join(referenceDir, 'graphs'), { recursive: true });
  const platformConfig = join(mkdtempSync(join(tmpdir(), 'thread-stream-compare-')), 'langgraph.json');
  const platformGraphs: Record<string, string> = {};
  const referenceGraphs: Record<string, string> = {};
  for (const [id, file] of Object.entries(GRAPHS)) {
    platformGraphs[id] = `${join(fixtures, file)}:graph`;
    copyFileSync(join(fixtures, file), join(referenceDir, 'graphs', `${id}.ts`));
    referenceGraphs[id] = `./graphs/${id}.ts:graph`;
  }
  writeFileSync(platformConfig, JSON.stringify({ graphs: platformGraphs }));
  const referenceConfig = join(referenceDir, 'langgraph.json');
  writeFileSync(referenceConfig, JSON.stringify({ node_version: '22', graphs: referenceGraphs }));

  const [ourPort, refPort] = [await freePort(), await freePort()];
  const [ours, reference] = await Promise.all([
    startServe(platformConfig, ourPort),
    startProcess(join(referenceDir, 'node_modules/.bin/langgraphjs'), ['dev', '--port', String(refPort), '--host', '127.0.0.1', '--no-browser', '--config', referenceConfig], {
      cwd: referenceDir,
      env: { LANGSMITH_TRACING: 'false', LANGCHAIN_TRACING_V2: 'false' },
      ready: /Server running at/,
    }),
  ]);
  const servers: Server[] = [{ name: 'platform', url: `http://127.0.0.1:${ourPort}` }, { name: 'reference', url: `http://127.0.0.1:${refPort}` }];
  let unexplained = 0;
  try {
    for (const testCase of CASES) {
      const [a, b] = (await Promise.all(servers.map((server) => testCase.run(server)))) as [Event[], Event[]];
      const count = Math.max(a.length, b.length);
      const rows: string[] = [];
      const explained = new Map<string, number>();
      for (let i = 0; i < count; i++) {
        const left = a[i] ? shape(a[i]!) : undefined;
        const right = b[i] ? shape(b[i]!) : undefined;
        if (!left || !right) {
          rows.push(`  #${i}: ${left ? `${left.method} only on the platform` : `${right!.method} only on the reference`}`);
          continue;
        }
        const paths = differences(left, right, '').map((path) => `${left.method}.${path}`);
        for (const path of paths) {
          const known = KNOWN.find(([pattern]) => pattern.test(path));
          if (known) explained.set(known[1], (explained.get(known[1]) ?? 0) + 1);
          else rows.push(`  #${i} ${path}: platform ${String(JSON.stringify(pathValue(left, path))).slice(0, 160)} | reference ${String(JSON.stringify(pathValue(right, path))).slice(0, 160)}`);
        }
      }
      unexplained += rows.length;
      const methods = (events: Event[]) => events.map((event) => event.method.replace('input.requested', 'input')).join(' ');
      console.log(`\n## ${testCase.name}: platform ${a.length} events, reference ${b.length}; ${rows.length ? `${rows.length} unexplained differences` : 'same events in the same order'}`);
      if (methods(a) !== methods(b)) console.log(`  order (platform):  ${methods(a)}\n  order (reference): ${methods(b)}`);
      for (const row of rows.slice(0, 40)) console.log(row);
      for (const [why, n] of explained) console.log(`  explained (${n}×): ${why}`);
    }
    console.log(`\n${unexplained} unexplained differences in ${CASES.length} cases.`);
  } finally {
    await Promise.all([ours.stop(), stopProcess(reference.child)]);
  }
}

function pathValue(value: Json, path: string): unknown {
  return path.split('.').slice(1).reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Json)[key] : undefined), value);
}

await main();
