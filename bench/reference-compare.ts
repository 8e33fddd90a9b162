// npm run bench:reference-compare — the same store, crons, A2A, MCP and system requests against the
// platform's `serve` (embedded PostgreSQL) and the reference in-memory server (`langgraphjs dev`,
// installed in bench/reference), both serving bench/graphs/{two-node,memory}.ts, through the official
// SDK clients where they exist (langgraph-sdk, MCP) and plain HTTP elsewhere. Prints one table row a
// request: each server's status and answer (ids and timestamps masked) and whether they agree. Asserts
// nothing; the differences are for a person to read (the verdict column says why, where it is known).
//
//   COMPARE_OUT=path   also write the table there (markdown)
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { freePort, referenceDir, startReference, startServe, stopProcess } from './processes.js';

const here = new URL('.', import.meta.url).pathname;

type Answer = { status: number | string; body: unknown };
type Server = { name: string; url: string; client: Client; assistantId: (graphId: string) => Promise<string> };
/** `why`: the known reason when the two servers answer differently. */
type Case = { group: string; name: string; run: (server: Server) => Promise<Answer>; why?: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const VOLATILE_KEY = /(_at|At|_id|Id|^id|^messageId|^contextId|^taskId|timestamp)$/;

/**
 * Masks what differs between any two servers by nature: ids, timestamps, ports, and the order of an
 * object's keys (PostgreSQL's jsonb keeps keys sorted by length, then bytes, not in insertion order).
 */
function normalize(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((item) => normalize(item));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, normalize(v, k)]),
    );
  }
  if (typeof value === 'string' && (UUID.test(value) || VOLATILE_KEY.test(key))) return '<id|time>';
  if (typeof value === 'string') return value.replace(/http:\/\/127\.0\.0\.1:\d+/g, '<url>').replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>');
  return value;
}

async function http(server: Server, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text.length > 60 ? `${response.headers.get('content-type')?.split(';')[0]} (${text.length} bytes)` : text;
  }
  return { status: response.status, body: parsed };
}

/** An SDK call as an answer: its result, or the HTTP status and message of its error. */
async function sdk(call: () => Promise<unknown>): Promise<Answer> {
  try {
    return { status: 'ok', body: (await call()) ?? null };
  } catch (error) {
    const { status, message } = error as { status?: number; message?: string };
    return { status: status ?? 'error', body: String(message).slice(0, 160) };
  }
}

const user = `u${Date.now()}`;
const ns = (...labels: string[]) => ['compare', user, ...labels];

const CASES: Case[] = [
  // Store, through the SDK's client.store.
  { group: 'store', name: 'putItem', run: (s) => sdk(() => s.client.store.putItem(ns('prefs'), 'theme', { color: 'dark', size: 3 })) },
  { group: 'store', name: 'getItem', run: (s) => sdk(async () => pick(await s.client.store.getItem(ns('prefs'), 'theme'))) },
  { group: 'store', name: 'getItem (missing)', run: (s) => sdk(() => s.client.store.getItem(ns('prefs'), 'nope')) },
  {
    group: 'store',
    name: 'searchItems (prefix)',
    run: (s) =>
      sdk(async () => {
        await s.client.store.putItem(ns('docs', 'a'), 'one', { kind: 'note', size: 1, text: 'the quick brown fox' });
        await s.client.store.putItem(ns('docs', 'b'), 'two', { kind: 'note', size: 5, text: 'a lazy dog' });
        await s.client.store.putItem(ns('docsx'), 'other', { kind: 'note', size: 9, text: 'not under docs' });
        return keys(await s.client.store.searchItems(ns('docs')));
      }),
  },
  { group: 'store', name: 'searchItems (filter)', run: (s) => sdk(async () => keys(await s.client.store.searchItems(ns(), { filter: { kind: 'note', size: 5 } }))) },
  { group: 'store', name: 'searchItems (filter $gt)', run: (s) => sdk(async () => keys(await s.client.store.searchItems(ns(), { filter: { size: { $gt: 2 } } }))) },
  { group: 'store', name: 'searchItems (query "dog")', why: 'no `store.index`: ours keeps text matches; the reference\'s in-memory store ignores `query` without embeddings', run: (s) => sdk(async () => keys(await s.client.store.searchItems(ns('docs'), { query: 'dog' }))) },
  { group: 'store', name: 'searchItems (limit 1 offset 1)', run: (s) => sdk(async () => (await s.client.store.searchItems(ns('docs'), { limit: 1, offset: 1 })).items.length) },
  { group: 'store', name: 'listNamespaces (prefix)', run: (s) => sdk(async () => (await s.client.store.listNamespaces({ prefix: ns() })).namespaces) },
  { group: 'store', name: 'listNamespaces (maxDepth 3)', run: (s) => sdk(async () => (await s.client.store.listNamespaces({ prefix: ns(), maxDepth: 3 })).namespaces) },
  { group: 'store', name: 'listNamespaces (suffix a)', run: (s) => sdk(async () => (await s.client.store.listNamespaces({ prefix: ns(), suffix: ['a'] })).namespaces) },
  {
    group: 'store',
    name: 'deleteItem, then getItem',
    run: (s) =>
      sdk(async () => {
        await s.client.store.deleteItem(ns('prefs'), 'theme');
        return s.client.store.getItem(ns('prefs'), 'theme');
      }),
  },
  { group: 'store', name: 'label user_123', run: (s) => sdk(() => roundTrip(s, ns('user_123'))) },
  { group: 'store', name: 'label 50%', run: (s) => sdk(() => roundTrip(s, ns('50%'))) },
  { group: 'store', name: 'label a:b', why: 'LangGraph\'s BaseStore refuses \':\' and the reference\'s handler does not catch it (500); ours encodes labels', run: (s) => sdk(() => roundTrip(s, ns('a:b'))) },
  {
    group: 'store',
    name: 'ttl 0.01 min, read after 1.5 s', why: 'the reference\'s in-memory store ignores `ttl`',
    run: (s) =>
      sdk(async () => {
        await s.client.store.putItem(ns('ttl'), 'short', { v: 1 }, { ttl: 0.01 });
        await new Promise((resolve) => setTimeout(resolve, 1500));
        return s.client.store.getItem(ns('ttl'), 'short');
      }),
  },
  {
    group: 'store',
    name: 'graph writes, API reads',
    run: (s) =>
      sdk(async () => {
        await s.client.store.putItem(['memories', user], 'from-api', { fact: 'likes tea' });
        const result = (await s.client.runs.wait(null, 'memory', { input: { user, fact: 'owns a cat' } })) as { known: string[] };
        return { graphSaw: result.known, apiSees: (await s.client.store.searchItems(['memories', user])).items.map((item) => item.value.fact).sort() };
      }),
  },
  { group: 'store', name: 'PUT namespace ["a.b"]', why: 'same status; the reference answers text/plain, ours JSON with the field path', run: (s) => http(s, 'PUT', '/store/items', { namespace: ['a.b'], key: 'k', value: {} }) },
  { group: 'store', name: 'PUT namespace ["a",""]', why: 'same status; the reference answers text/plain, ours JSON with the field path', run: (s) => http(s, 'PUT', '/store/items', { namespace: ['a', ''], key: 'k', value: {} }) },
  { group: 'store', name: 'PUT namespace []', why: 'reference 400 "Namespace is required"; ours 422 like every other validation failure', run: (s) => http(s, 'PUT', '/store/items', { namespace: [], key: 'k', value: {} }) },
  { group: 'store', name: 'PUT value "text"', why: 'reference 400 with zod\'s issues; ours 422 (validation dialect of the platform)', run: (s) => http(s, 'PUT', '/store/items', { namespace: ['a'], key: 'k', value: 'text' }) },
  { group: 'store', name: 'PUT 10 MB value', why: 'ours bounds bodies (a 10 MB store value is 413); the reference stores it', run: (s) => http(s, 'PUT', '/store/items', { namespace: ['big'], key: 'k', value: { blob: 'x'.repeat(10 * 1024 * 1024) } }) },
  { group: 'store', name: 'GET namespace=a..b', why: 'the reference does not validate GET\'s namespace (500)', run: (s) => http(s, 'GET', '/store/items?namespace=a..b&key=k') },

  // Crons.
  { group: 'crons', name: 'crons.create (stateless)', why: 'reference has no crons: its schema demands thread_id, then it answers "Not implemented"', run: async (s) => sdk(async () => pick(await s.client.crons.create(await s.assistantId('two_node'), { schedule: '*/5 * * * *', input: { steps: [] } }))) },
  { group: 'crons', name: 'crons.search', why: 'reference: "Not implemented"', run: (s) => sdk(async () => (await s.client.crons.search({ limit: 10 })).length) },
  { group: 'crons', name: 'POST /runs/crons/count', why: 'reference has no such route', run: (s) => http(s, 'POST', '/runs/crons/count', {}) },
  { group: 'crons', name: 'crons.create, schedule "garbage"', why: 'reference has no crons (schema error on thread_id first)', run: async (s) => sdk(async () => s.client.crons.create(await s.assistantId('two_node'), { schedule: 'garbage' })) },

  // A2A.
  { group: 'a2a', name: 'GET agent card', why: 'reference (langgraph-api 2.0.0, JS) serves no A2A', run: async (s) => shape(await http(s, 'GET', `/.well-known/agent-card.json?assistant_id=${await s.assistantId('two_node')}`)) },
  {
    group: 'a2a',
    name: 'message/send', why: 'reference serves no A2A',
    run: async (s) =>
      shape(
        await http(s, 'POST', `/a2a/${await s.assistantId('two_node')}`, {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: { messageId: 'm1', role: 'user', kind: 'message', parts: [{ kind: 'data', data: { steps: [] } }] } },
        }, { accept: 'application/json' }),
      ),
  },
  { group: 'a2a', name: 'body not JSON-RPC', why: 'reference serves no A2A', run: async (s) => http(s, 'POST', `/a2a/${await s.assistantId('two_node')}`, { hello: 'world' }, { accept: 'application/json' }) },

  // MCP, through the official client.
  {
    group: 'mcp',
    name: 'tools/list', why: 'reference (JS) serves no /mcp',
    run: (s) => sdk(async () => withMcp(s, async (mcp) => (await mcp.listTools()).tools.map((tool) => tool.name).sort())),
  },
  {
    group: 'mcp',
    name: 'tools/call two_node', why: 'reference serves no /mcp',
    run: (s) => sdk(async () => withMcp(s, async (mcp) => (await mcp.callTool({ name: 'two_node', arguments: { steps: [] } })).content)),
  },
  { group: 'mcp', name: 'tools/call unknown tool', why: 'reference serves no /mcp', run: (s) => sdk(async () => withMcp(s, async (mcp) => mcp.callTool({ name: 'nope', arguments: {} }))) },

  // System.
  { group: 'system', name: 'GET /ok', run: (s) => http(s, 'GET', '/ok') },
  { group: 'system', name: 'GET /info (flags)', why: 'ours adds store, a2a, mcp flags and crons: true', run: async (s) => shape(await http(s, 'GET', '/info'), (body) => (body as { flags?: unknown }).flags ?? Object.keys(body as object)) },
  { group: 'system', name: 'GET /metrics', why: 'reference has no /metrics', run: async (s) => shape(await http(s, 'GET', '/metrics'), (body) => (typeof body === 'string' ? body.split(' (')[0] : typeof body)) },
  { group: 'system', name: 'GET /openapi.json', why: 'reference serves no OpenAPI document', run: async (s) => shape(await http(s, 'GET', '/openapi.json'), (body) => (body as { openapi?: string }).openapi) },
  { group: 'system', name: 'GET /docs', why: 'reference serves no API reference page', run: async (s) => shape(await http(s, 'GET', '/docs'), (body) => (typeof body === 'string' ? body.split(' (')[0] : typeof body)) },
];

const pick = (item: unknown) => {
  if (!item || typeof item !== 'object') return item;
  const { namespace, key, value, schedule, payload } = item as Record<string, unknown>;
  return Object.fromEntries(Object.entries({ namespace, key, value, schedule, payload }).filter(([, v]) => v !== undefined));
};
const keys = (result: { items: { key: string }[] }) => result.items.map((item) => item.key).sort();
async function roundTrip(s: Server, namespace: string[]) {
  await s.client.store.putItem(namespace, 'k', { v: namespace.at(-1) });
  const item = await s.client.store.getItem(namespace, 'k');
  const found = await s.client.store.searchItems(namespace);
  return { get: item?.value ?? null, search: found.items.map((entry) => entry.namespace.at(-1)) };
}
/** Keeps an answer's status and one telling part of its body. */
function shape(answer: Answer, part: (body: unknown) => unknown = (body) => topKeys(body)): Answer {
  return { status: answer.status, body: answer.body && typeof answer.status === 'number' && answer.status < 300 ? part(answer.body) : answer.body };
}
const topKeys = (body: unknown): unknown => {
  if (!body || typeof body !== 'object') return body;
  const record = body as Record<string, unknown>;
  if (record.result && typeof record.result === 'object') return { result: { kind: (record.result as Record<string, unknown>).kind, status: (record.result as { status?: unknown }).status } };
  return Object.keys(record).sort();
};
async function withMcp<T>(s: Server, use: (mcp: McpClient) => Promise<T>): Promise<T> {
  const mcp = new McpClient({ name: 'reference-compare', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`)));
  try {
    return await use(mcp);
  } finally {
    await mcp.close().catch(() => undefined);
  }
}

function serverFor(name: string, url: string): Server {
  const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });
  const ids = new Map<string, string>();
  return {
    name,
    url,
    client,
    async assistantId(graphId) {
      if (!ids.has(graphId)) ids.set(graphId, (await client.assistants.search({ graphId, limit: 1 }))[0]!.assistant_id);
      return ids.get(graphId)!;
    },
  };
}

const cell = (answer: Answer) => {
  const text = `${answer.status} ${JSON.stringify(normalize(answer.body))}`;
  return (text.length > 110 ? `${text.slice(0, 107)}…` : text).replace(/\|/g, '\\|');
};

async function main() {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    mkdirSync(join(referenceDir, 'graphs'), { recursive: true });
    for (const file of ['two-node.ts', 'memory.ts']) copyFileSync(join(here, 'graphs', file), join(referenceDir, 'graphs', file));

    const [platformPort, referencePort] = [await freePort(), await freePort()];
    const [platform, reference] = await Promise.all([
      startServe(join(here, 'graphs/compare.langgraph.json'), platformPort),
      startReference(join(referenceDir, 'compare/langgraph.json'), referencePort),
    ]);
    cleanups.push(() => platform.stop(), () => stopProcess(reference.child));
    const servers = [serverFor('platform', `http://127.0.0.1:${platformPort}`), serverFor('reference', `http://127.0.0.1:${referencePort}`)];
    // The reference server compiles graphs on first use; wait until both answer.
    for (const server of servers) {
      for (let i = 0; ; i++) {
        try {
          await server.assistantId('memory');
          break;
        } catch (error) {
          if (i > 120) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    }

    const rows: string[] = [];
    let same = 0;
    for (const testCase of CASES) {
      const [ours, theirs] = await Promise.all(servers.map((server) => testCase.run(server).catch((error: Error) => ({ status: 'threw', body: error.message }) as Answer)));
      const agree = JSON.stringify(normalize(ours)) === JSON.stringify(normalize(theirs));
      if (agree) same++;
      const verdict = agree ? 'same' : `**differs**${testCase.why ? `: ${testCase.why}` : ''}`;
      rows.push(`| ${testCase.group} | ${testCase.name} | ${cell(ours!)} | ${cell(theirs!)} | ${verdict.replace(/\|/g, '\\|')} |`);
    }
    const table = [
      `Platform (serve, PostgreSQL) vs reference (langgraphjs dev 2.0.0, in-memory); load average ${loadavg().map((n) => n.toFixed(1)).join(' ')}`,
      '',
      '| area | request | platform | reference | verdict |',
      '|---|---|---|---|---|',
      ...rows,
      '',
      `${same} of ${CASES.length} requests answered the same.`,
    ].join('\n');
    console.log(table);
    if (process.env.COMPARE_OUT) writeFileSync(process.env.COMPARE_OUT, `${table}\n`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}

await main();
process.exit(0);
