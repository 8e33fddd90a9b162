// `npm run bench:custom-auth`: the custom-auth fixture project (test/fixtures/custom-auth: per-user
// bearer tokens, `owner` stamped on what each user creates and filtered on, store items under the
// user's namespace) served by the reference dev server (`langgraph-cli dev` 1.4.5) and by
// `agent-platform serve`. The same requests go to both, through the official SDK and fetch; one table
// prints each server's status codes and the resources each user sees. Then the cost of a filtering
// handler: thread searches per second at `serve` with the project's auth against the same project
// without auth, in alternating rounds of one run.
//
// The reference needs its own folder (its peer dependencies clash with ours): REF_AUTH_DIR, by
// default /tmp/ref-auth, installed on first use with
//   npm i @langchain/langgraph-cli@1.4.5 @langchain/langgraph-api@1.4.5 @langchain/langgraph@1.7.3
//         @langchain/core@1.4.0 @langchain/langgraph-checkpoint@1.2.2 @langchain/langgraph-sdk typescript@5.9.3
// Options: --skip-reference, --skip-cost, --threads <n> (seeded for the cost, default 2000),
// --rounds <n> (default 3), --seconds <s> per round (default 5). Prints; asserts nothing.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Client } from '@langchain/langgraph-sdk';
import { CPU_PARTS, perRun, sampleProcesses } from './process-cpu.js';
import { freePort, startProcess, startServe, stopProcess } from './processes.js';

const root = join(new URL('.', import.meta.url).pathname, '..');
const fixture = join(root, 'test/fixtures/custom-auth');
const { values: args } = parseArgs({
  options: {
    'skip-reference': { type: 'boolean', default: false },
    'skip-cost': { type: 'boolean', default: false },
    threads: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
  },
});

/** `watch`: the serve process and its PostgreSQL, whose CPU time the cost figures read. */
type Server = { url: string; studioKey: string; watch?: { pid: number; postgresDir: string } };
type Probe = { name: string; run: (server: Server) => Promise<string> };

const clientFor = (server: Server, headers: Record<string, string>, apiKey?: string) =>
  new Client({ apiUrl: server.url, apiKey, defaultHeaders: headers, callerOptions: { maxRetries: 0 } });
const bearer = (server: Server, token: string) => clientFor(server, { authorization: `Bearer ${token}` });
const studio = (server: Server, key: string) => clientFor(server, { 'x-auth-scheme': 'langsmith' }, key);

/** Ids differ per server, and key order is no difference: both are normalised away. */
const normalise = (text: string) => text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>');
const sortedJson = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === 'object' && !Array.isArray(inner) ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a.localeCompare(b))) : inner,
  );

/** The SDK's error as "<status> <message>", a success as "200 <what it shows>" (by default: a primitive result, or nothing). */
async function outcome(call: () => Promise<unknown>, show: (value: never) => unknown = (value: unknown) => (typeof value === 'object' ? '' : value)): Promise<string> {
  try {
    const shown = show((await call()) as never);
    return normalise(`200 ${typeof shown === 'string' ? shown : sortedJson(shown)}`.trim());
  } catch (error) {
    const text = String(error);
    const match = /HTTP (\d{3}): ?(.*)/s.exec(text);
    return normalise(match ? `${match[1]} ${match[2]!.slice(0, 70)}`.trim() : `error ${text.slice(0, 80)}`);
  }
}

async function raw(server: Server, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<string> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = (await response.text()).replace(/\s+/g, ' ');
  return normalise(`${response.status} ${response.ok ? '' : text.slice(0, 70)}`.trim());
}

// What each server holds once the scenario ran: ids differ per server, so probes name them by role.
type World = { aliceThread: string; bobThread: string; bobRun: string; aliceRun: string; bobAssistant: string };
const worlds = new Map<string, World>();
const world = (server: Server) => worlds.get(server.url)!;
const owners = (items: { metadata?: Record<string, unknown> | null }[]) => items.map((item) => item.metadata?.owner ?? '-').sort().join(',');

async function seed(server: Server): Promise<void> {
  const alice = bearer(server, 'token-alice');
  const bob = bearer(server, 'token-bob');
  const aliceThread = (await alice.threads.create({ metadata: { topic: 'a' } })).thread_id;
  const bobThread = (await bob.threads.create({ metadata: { topic: 'b' } })).thread_id;
  await alice.runs.wait(aliceThread, 'whoami', { input: {} });
  await bob.runs.wait(bobThread, 'whoami', { input: {} });
  const [aliceRun] = await alice.runs.list(aliceThread);
  const [bobRun] = await bob.runs.list(bobThread);
  await alice.assistants.create({ graphId: 'whoami', name: 'alice-assistant' });
  const bobAssistant = (await bob.assistants.create({ graphId: 'whoami', name: 'bob-assistant' })).assistant_id;
  await alice.store.putItem(['notes'], 'todo', { text: 'alice' });
  await bob.store.putItem(['notes'], 'todo', { text: 'bob' });
  worlds.set(server.url, { aliceThread, bobThread, aliceRun: aliceRun!.run_id, bobRun: bobRun!.run_id, bobAssistant });
}

const probes: Probe[] = [
  { name: 'no credentials: POST /threads/search', run: (s) => raw(s, 'POST', '/threads/search', {}, {}) },
  { name: 'unknown token: POST /threads/search', run: (s) => raw(s, 'POST', '/threads/search', { authorization: 'Bearer nobody' }, {}) },
  { name: 'authenticate handler crashes', run: (s) => raw(s, 'POST', '/threads/search', { authorization: 'Bearer crash' }, {}) },
  { name: 'no credentials: GET /info', run: (s) => raw(s, 'GET', '/info', {}) },
  { name: 'no credentials: GET /ok', run: (s) => raw(s, 'GET', '/ok', {}) },
  { name: 'reader (no write): create thread', run: (s) => outcome(() => bearer(s, 'token-reader').threads.create()) },
  { name: 'reader: search threads (owners seen)', run: (s) => outcome(() => bearer(s, 'token-reader').threads.search(), owners) },
  { name: 'alice: search threads (owners seen)', run: (s) => outcome(() => bearer(s, 'token-alice').threads.search(), owners) },
  { name: 'alice: count threads', run: (s) => outcome(() => bearer(s, 'token-alice').threads.count()) },
  { name: 'reader: count threads', run: (s) => outcome(() => bearer(s, 'token-reader').threads.count()) },
  { name: 'alice: thread created carries owner', run: (s) => outcome(() => bearer(s, 'token-alice').threads.get(world(s).aliceThread), (t: { metadata: unknown }) => t.metadata) },
  {
    name: 'alice: run output (user in graph config)',
    run: (s) => outcome(() => bearer(s, 'token-alice').runs.wait(world(s).aliceThread, 'whoami', { input: {} }), (values: unknown) => values),
  },
  {
    name: 'alice: run kwargs configurable.langgraph_auth_user_id',
    run: (s) =>
      outcome(
        () => bearer(s, 'token-alice').runs.get(world(s).aliceThread, world(s).aliceRun),
        (run: { kwargs?: { config?: { configurable?: Record<string, unknown> } } }) => run.kwargs?.config?.configurable?.langgraph_auth_user_id ?? '(none)',
      ),
  },
  { name: "alice: GET bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').threads.get(world(s).bobThread)) },
  { name: "alice: PATCH bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').threads.update(world(s).bobThread, { metadata: { x: 1 } })) },
  { name: "alice: copy bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').threads.copy(world(s).bobThread)) },
  { name: "alice: state of bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').threads.getState(world(s).bobThread)) },
  { name: "alice: history of bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').threads.getHistory(world(s).bobThread)) },
  { name: "alice: update state of bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').threads.updateState(world(s).bobThread, { values: {} })) },
  { name: "alice: list runs of bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').runs.list(world(s).bobThread), (runs: unknown[]) => `${runs.length} runs`) },
  { name: "alice: GET bob's run", run: (s) => outcome(() => bearer(s, 'token-alice').runs.get(world(s).bobThread, world(s).bobRun)) },
  { name: "alice: join bob's run", run: (s) => outcome(() => bearer(s, 'token-alice').runs.join(world(s).bobThread, world(s).bobRun)) },
  { name: "alice: cancel bob's run", run: (s) => outcome(() => bearer(s, 'token-alice').runs.cancel(world(s).bobThread, world(s).bobRun)) },
  { name: "alice: run on bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').runs.wait(world(s).bobThread, 'whoami', { input: {} })) },
  { name: "alice: stream bob's thread (GET /threads/{id}/stream)", run: (s) => raw(s, 'GET', `/threads/${world(s).bobThread}/stream`, { authorization: 'Bearer token-alice' }) },
  { name: "alice: delete bob's run", run: (s) => outcome(() => bearer(s, 'token-alice').runs.delete(world(s).bobThread, world(s).bobRun)) },
  { name: "alice: delete bob's thread", run: (s) => outcome(() => bearer(s, 'token-alice').threads.delete(world(s).bobThread)) },
  { name: "bob: his thread still there", run: (s) => outcome(() => bearer(s, 'token-bob').threads.get(world(s).bobThread), (t: { metadata: unknown }) => t.metadata) },
  {
    name: 'alice: search assistants (names seen)',
    run: (s) => outcome(() => bearer(s, 'token-alice').assistants.search(), (items: { name: string }[]) => items.map((a) => a.name).sort().join(',')),
  },
  { name: 'alice: count assistants', run: (s) => outcome(() => bearer(s, 'token-alice').assistants.count()) },
  { name: "alice: GET bob's assistant", run: (s) => outcome(() => bearer(s, 'token-alice').assistants.get(world(s).bobAssistant)) },
  { name: "alice: PATCH bob's assistant", run: (s) => outcome(() => bearer(s, 'token-alice').assistants.update(world(s).bobAssistant, { name: 'x' })) },
  { name: "alice: delete bob's assistant", run: (s) => outcome(() => bearer(s, 'token-alice').assistants.delete(world(s).bobAssistant)) },
  { name: 'alice: GET store [notes] todo', run: (s) => outcome(() => bearer(s, 'token-alice').store.getItem(['notes'], 'todo'), (item: { value: unknown } | null) => item?.value ?? null) },
  {
    name: 'alice: search store under [notes]',
    run: (s) => outcome(() => bearer(s, 'token-alice').store.searchItems(['notes']), (page: { items: { namespace: string[] }[] }) => page.items.map((i) => i.namespace.join('/')).join(',')),
  },
  {
    name: 'alice: search store under [] (everything)',
    run: (s) => outcome(() => bearer(s, 'token-alice').store.searchItems([]), (page: { items: { namespace: string[] }[] }) => page.items.map((i) => i.namespace.join('/')).sort().join(',')),
  },
  {
    name: 'bob: list store namespaces',
    run: (s) => outcome(() => bearer(s, 'token-bob').store.listNamespaces(), (page: { namespaces: string[][] }) => page.namespaces.map((n) => n.join('/')).sort().join(',')),
  },
  { name: 'reader: put a store item', run: (s) => outcome(() => bearer(s, 'token-reader').store.putItem(['notes'], 'x', { text: 'x' })) },
  { name: 'alice: create a cron', run: (s) => outcome(() => bearer(s, 'token-alice').crons.create('whoami', { schedule: '0 0 1 1 *', input: {} }), () => 'created') },
  { name: 'bob: search crons (count seen)', run: (s) => outcome(() => bearer(s, 'token-bob').crons.search(), (items: unknown[]) => `${items.length} crons`) },
  { name: 'studio (x-auth-scheme: langsmith + platform key): search threads', run: (s) => outcome(() => studio(s, s.studioKey).threads.search(), owners) },
  { name: 'studio scheme with a bogus key: search threads', run: (s) => outcome(() => studio(s, 'lsv2_bogus').threads.search(), owners) },
];

/** Installs the reference 1.4.5 in REF_AUTH_DIR once, and copies the fixture project into it (so its imports resolve there). */
function referenceProject(): { dir: string; configPath: string } {
  const dir = process.env.REF_AUTH_DIR ?? '/tmp/ref-auth';
  if (!existsSync(join(dir, 'node_modules/.bin/langgraphjs'))) {
    mkdirSync(dir, { recursive: true });
    if (!existsSync(join(dir, 'package.json'))) writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'ref-auth', private: true, type: 'module' }));
    const packages = ['@langchain/langgraph-cli@1.4.5', '@langchain/langgraph-api@1.4.5', '@langchain/langgraph@1.7.3', '@langchain/core@1.4.0', '@langchain/langgraph-checkpoint@1.2.2', '@langchain/langgraph-sdk', 'typescript@5.9.3'];
    console.error(`Installing the reference server in ${dir} (once)…`);
    const install = spawnSync('npm', ['i', '--no-audit', '--no-fund', ...packages], { cwd: dir, stdio: 'inherit' });
    if (install.status !== 0) throw new Error(`npm i in ${dir} failed`);
  }
  const project = join(dir, 'project');
  rmSync(project, { recursive: true, force: true });
  cpSync(fixture, project, { recursive: true });
  return { dir, configPath: join(project, 'langgraph.json') };
}

async function withReference<T>(work: (server: Server) => Promise<T>): Promise<T> {
  const { dir, configPath } = referenceProject();
  const port = await freePort();
  const reference = await startProcess(join(dir, 'node_modules/.bin/langgraphjs'), ['dev', '--port', String(port), '--host', '127.0.0.1', '--no-browser', '--config', configPath], {
    cwd: join(dir, 'project'),
    env: { LANGSMITH_TRACING: 'false', LANGCHAIN_TRACING_V2: 'false' },
    ready: /Server running at/,
  });
  try {
    // The reference checks no key on the studio's scheme: any value is sent.
    return await work({ url: `http://127.0.0.1:${port}`, studioKey: 'lsv2_any' });
  } finally {
    await stopProcess(reference.child);
  }
}

async function withServe<T>(configPath: string, work: (server: Server) => Promise<T>): Promise<T> {
  const port = await freePort();
  const serve = await startServe(configPath, port);
  try {
    // A fresh installation prints its first platform key (just after the ready line): the studio's credential here.
    for (let waited = 0; !/API key: \S+\n/.test(serve.output()) && waited < 5000; waited += 50) await delay(50);
    const studioKey = /API key: (\S+)/.exec(serve.output())?.[1] ?? '';
    return await work({ url: `http://127.0.0.1:${port}`, studioKey, watch: { pid: serve.child.pid!, postgresDir: join(serve.dataDir, 'data', 'postgres') } });
  } finally {
    await serve.stop();
  }
}

async function answers(server: Server): Promise<string[]> {
  await seed(server);
  const results: string[] = [];
  for (const probe of probes) results.push(await probe.run(server));
  return results;
}

// autocannon ships no type declarations: the part used here.
type Autocannon = (options: {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
}) => Promise<{ requests: { average: number; total: number }; non2xx: number; errors: number }>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** Thread search req/s at serve with the project's auth (alice's token, filtered to her threads) against the same project without auth. */
async function cost(): Promise<void> {
  const plainDir = mkdtempSync(join(tmpdir(), 'custom-auth-cost-'));
  const config = JSON.parse(readFileSync(join(fixture, 'langgraph.json'), 'utf8')) as { graphs: Record<string, string>; auth?: unknown };
  const graphs = Object.fromEntries(Object.entries(config.graphs).map(([id, spec]) => [id, join(fixture, spec)]));
  const plainConfig = join(plainDir, 'langgraph.json');
  writeFileSync(plainConfig, JSON.stringify({ graphs }));
  const threads = Number(args.threads);
  const rounds = Number(args.rounds);
  const seconds = Number(args.seconds);
  try {
    await withServe(join(fixture, 'langgraph.json'), (authServer) =>
      withServe(plainConfig, async (plainServer) => {
        // The same rows in both: half alice's, half bob's (the plain server gets the same metadata).
        const alice = bearer(authServer, 'token-alice');
        const bob = bearer(authServer, 'token-bob');
        const plain = clientFor(plainServer, {});
        for (let i = 0; i < threads; i += 50) {
          await Promise.all(
            Array.from({ length: Math.min(50, threads - i) }, (_, j) => {
              const owner = (i + j) % 2 ? 'bob' : 'alice';
              return Promise.all([(owner === 'alice' ? alice : bob).threads.create(), plain.threads.create({ metadata: { owner } })]);
            }),
          );
        }
        // Requests per second move with the machine's load; CPU time per request (the serve process and
        // its PostgreSQL, from /proc) hardly does, so both are printed.
        const cpu = new Map<string, number[]>();
        const measure = async (server: Server, path: string, method: 'GET' | 'POST', headers: Record<string, string>) => {
          const body = method === 'POST' ? JSON.stringify({ limit: 10 }) : undefined;
          const before = sampleProcesses(server.watch!.pid, server.watch!.postgresDir);
          const result = await autocannon({ url: `${server.url}${path}`, method, headers: { 'content-type': 'application/json', ...headers }, body, connections: 8, duration: seconds });
          if (result.non2xx || result.errors) throw new Error(`${path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
          const used = perRun(before, sampleProcesses(server.watch!.pid, server.watch!.postgresDir), result.requests.total).cpuMicroseconds;
          const key = `${server.url}${path}`;
          cpu.set(key, [...(cpu.get(key) ?? []), CPU_PARTS.reduce((sum, part) => sum + used[part], 0)]);
          return result.requests.average;
        };
        const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
        const alicesToken = { authorization: 'Bearer token-alice' };
        // Thread search: authenticate, the threads:search handler and its filter in SQL. GET /ok: authenticate alone.
        for (const [label, path, method] of [
          ['POST /threads/search {limit: 10}', '/threads/search', 'POST'],
          ['GET /ok (authenticate only)', '/ok', 'GET'],
        ] as const) {
          await measure(authServer, path, method, alicesToken);
          await measure(plainServer, path, method, {});
          cpu.clear();
          const withAuth: number[] = [];
          const without: number[] = [];
          for (let round = 0; round < rounds; round++) {
            withAuth.push(await measure(authServer, path, method, alicesToken));
            without.push(await measure(plainServer, path, method, {}));
          }
          const cpuWith = median(cpu.get(`${authServer.url}${path}`)!);
          const cpuWithout = median(cpu.get(`${plainServer.url}${path}`)!);
          console.log(`\nCost of custom auth: ${label} over ${threads} threads (half alice's), 8 connections, ${rounds} alternating rounds of ${seconds} s`);
          console.log(`  with auth (alice's token):      ${withAuth.map((v) => v.toFixed(0)).join(', ')} req/s; median ${median(withAuth).toFixed(0)}`);
          console.log(`  without auth (no auth entry):   ${without.map((v) => v.toFixed(0)).join(', ')} req/s; median ${median(without).toFixed(0)}`);
          console.log(`  ratio with ÷ without: ${(median(withAuth) / median(without)).toFixed(2)}`);
          console.log(`  CPU per request (serve process + its PostgreSQL), median: with ${cpuWith.toFixed(0)} µs, without ${cpuWithout.toFixed(0)} µs: +${(cpuWith - cpuWithout).toFixed(0)} µs (×${(cpuWith / cpuWithout).toFixed(2)})`);
        }
      }),
    );
  } finally {
    rmSync(plainDir, { recursive: true, force: true });
  }
}

const reference = args['skip-reference'] ? undefined : await withReference(answers);
const platform = await withServe(join(fixture, 'langgraph.json'), answers);
const width = Math.max(...probes.map((probe) => probe.name.length));
console.log(`${'request'.padEnd(width)} | reference (langgraph-cli dev 1.4.5) | agent-platform serve | same`);
probes.forEach((probe, i) => {
  const ours = platform[i]!;
  const theirs = reference?.[i] ?? '(skipped)';
  console.log(`${probe.name.padEnd(width)} | ${theirs} | ${ours} | ${reference ? (theirs === ours ? 'yes' : 'NO') : ''}`);
});
if (!args['skip-cost']) await cost();
