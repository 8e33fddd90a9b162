// `npm run upstream-suites`: the reference server's own test suites (langgraphjs
// `libs/langgraph-api/tests`: api, auth, and protocol v2, that is protocol-v2/stream-sdk and
// protocol-transport), run as a user would run them against `agent-platform serve` of this checkout.
//
// It extracts the suites with the graphs they serve into a scratch folder, installs what they import
// from the npm registry there, and starts `serve --dev` on their langgraph.json per suite. Only the
// server start is replaced: the suites' own spawning of the reference server (behind `CI`) stays off,
// their fixed ports become the port serve listens on, and the protocol v2 stream-sdk suite, which
// builds an in-process embed server with a MemorySaver, reads the thread's checkpoints through the
// SDK's thread history instead of that saver. The assertions are theirs, unchanged.
//
// Options:
//   --langgraphjs <dir>  a langgraphjs checkout or bare git dir (default: a shallow clone from GitHub)
//   --ref <ref>          the commit to take the suites from (default HEAD)
//   --dir <dir>          the scratch folder (default <tmpdir>/agent-platform-upstream-suites)
//   --suite <names>      api,auth,protocol-v2 (default all three)
// Prints each suite's passed/failed/skipped counts and the failing tests' names.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const root = resolve(new URL('.', import.meta.url).pathname, '..');
const { values: args } = parseArgs({
  options: {
    langgraphjs: { type: 'string' },
    ref: { type: 'string', default: 'HEAD' },
    dir: { type: 'string', default: join(tmpdir(), 'agent-platform-upstream-suites') },
    suite: { type: 'string', default: 'api,auth,protocol-v2' },
  },
});
const dir = resolve(args.dir);

// What the suites and their graphs import, as published. The reference's workspace packages
// (@langchain/langgraph, the SDK) come from the registry at their latest release.
const dependencies = [
  '@langchain/langgraph-sdk',
  '@langchain/langgraph',
  '@langchain/langgraph-checkpoint',
  '@langchain/core',
  'langchain',
  'hono',
  '@hono/node-server',
  'jose',
  'wait-port',
  'postgres',
  'vitest',
  'zod',
  'dedent',
  'dotenv',
];

const suites = {
  api: { files: ['tests/api.test.mts'], config: 'tests/graphs/langgraph.json' },
  auth: { files: ['tests/auth.test.mts'], config: 'tests/graphs/langgraph.auth.json' },
  // The api suite's graphs and the two its embed server adds (tests/graphs/agent_with_*.mts).
  'protocol-v2': { files: ['tests/protocol-v2/stream-sdk.test.mts', 'tests/protocol-transport.test.mts'], config: 'tests/graphs/langgraph.protocol-v2.json' },
};

function writeProtocolConfig() {
  const config = JSON.parse(readFileSync(join(dir, 'tests/graphs/langgraph.json'), 'utf8'));
  config.graphs.agent_with_tools = './agent_with_tools.mts:graph';
  config.graphs.agent_with_stats = './agent_with_stats.mts:graph';
  writeFileSync(join(dir, suites['protocol-v2'].config), JSON.stringify(config, null, 2));
}

function gitDir() {
  if (args.langgraphjs) {
    const given = resolve(args.langgraphjs);
    for (const candidate of [join(given, '.git'), join(given, 'repo'), given]) {
      if (existsSync(join(candidate, 'HEAD'))) return candidate;
    }
    throw new Error(`no git directory at ${given}`);
  }
  const clone = join(dir, '.langgraphjs');
  if (!existsSync(clone)) execFileSync('git', ['clone', '--bare', '--depth', '1', 'https://github.com/langchain-ai/langgraphjs', clone], { stdio: 'inherit' });
  return clone;
}

function extract() {
  const git = gitDir();
  rmSync(join(dir, 'tests'), { recursive: true, force: true });
  rmSync(join(dir, 'src'), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // src/auth: the auth suite unit-tests the reference's filter matching beside its server tests.
  const paths = ['tests', 'src/auth', 'vitest.config.js'].map((path) => `libs/langgraph-api/${path}`);
  const archive = execFileSync('git', ['--git-dir', git, 'archive', args.ref, ...paths], { maxBuffer: 1 << 28 });
  execFileSync('tar', ['x', '--strip-components=2', '-C', dir], { input: archive });
  const commit = execFileSync('git', ['--git-dir', git, 'rev-parse', args.ref], { encoding: 'utf8' }).trim();
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'upstream-suites', private: true, type: 'module', dependencies: {} }, null, 2));
  const marker = join(dir, 'node_modules/.upstream-suites');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== dependencies.join(',')) {
    execFileSync('npm', ['install', '--no-audit', '--no-fund', ...dependencies], { cwd: dir, stdio: 'inherit' });
    writeFileSync(marker, dependencies.join(','));
  }
  return commit;
}

/** Replaces `from` once in a suite's file, failing when the suite no longer reads that way. */
function patch(file, from, to) {
  const path = join(dir, file);
  const text = readFileSync(path, 'utf8');
  const at = typeof from === 'string' ? text.indexOf(from) : text.search(from);
  if (at < 0) throw new Error(`${file} no longer contains ${from}: the server start changed upstream; update scripts/upstream-suites.mjs`);
  writeFileSync(path, text.replace(from, to));
}

function pointAtServe(suite, port) {
  if (suite === 'api') patch('tests/api.test.mts', /localhost:2024/g, `localhost:${port}`);
  if (suite === 'auth') patch('tests/auth.test.mts', 'localhost:2025', `localhost:${port}`);
  if (suite === 'protocol-v2') {
    patch('tests/protocol-transport.test.mts', 'process.env.CI ? "2026" : "2024"', `"${port}"`);
    const file = 'tests/protocol-v2/stream-sdk.test.mts';
    patch(file, /import \{\s*createEmbedServer,[^;]*;/, '');
    patch(file, /beforeAll\(async \(\) => \{[\s\S]*?\n\}\);\n/, `beforeAll(() => {\n  serverUrl = "http://localhost:${port}";\n  checkpointer = historyReader(serverUrl);\n});\n`);
    patch(file, 'let checkpointer: MemorySaver;', 'let checkpointer: ReturnType<typeof historyReader>;');
    patch(file, /\nafterAll\(/, `
import { Client as HistoryClient } from "@langchain/langgraph-sdk";
// The thread's checkpoints, newest first as MemorySaver.list gives them, read through the API.
function historyReader(apiUrl: string) {
  const client = new HistoryClient({ apiUrl });
  return {
    async *list({ configurable }: { configurable: { thread_id: string } }): AsyncGenerator<CheckpointTuple> {
      for (const state of await client.threads.getHistory(configurable.thread_id, { limit: 1000 })) {
        yield {
          config: { configurable: { ...state.checkpoint } },
          checkpoint: { id: state.checkpoint.checkpoint_id },
          parentConfig: state.parent_checkpoint ? { configurable: { ...state.parent_checkpoint } } : undefined,
        } as unknown as CheckpointTuple;
      }
    },
  };
}

afterAll(`);
  }
}

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function run(command, argv, options) {
  return new Promise((done) => {
    const child = spawn(command, argv, { stdio: 'inherit', ...options });
    child.on('exit', (code) => done(code));
  });
}

async function startServe(suite, config, port) {
  const dataDir = join(dir, 'data', suite);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const started = Date.now();
  const child = spawn(process.execPath, [join(root, 'bin/agent-platform.mjs'), 'serve', '--config', join(dir, config), '--port', String(port), '--data-dir', dataDir, '--dev'], {
    cwd: dir,
    env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const logFile = join(dir, `serve-${suite}.log`);
  const onData = (chunk) => {
    output += chunk;
    writeFileSync(logFile, output);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  await new Promise((done, fail) => {
    const timer = setInterval(() => {
      if (/running at http/.test(output)) {
        clearInterval(timer);
        done();
      } else if (child.exitCode !== null || Date.now() - started > 180_000) {
        clearInterval(timer);
        fail(new Error(`serve did not start for ${suite}; its log: ${logFile}\n${output}`));
      }
    }, 200);
  });
  console.log(`serve for ${suite} at http://localhost:${port} after ${((Date.now() - started) / 1000).toFixed(1)} s (log: ${logFile})`);
  return child;
}

const commit = extract();
writeProtocolConfig();
console.log(`langgraphjs ${commit}: libs/langgraph-api/tests in ${dir}`);
const results = [];
for (const suite of args.suite.split(',')) {
  const { files, config } = suites[suite] ?? {};
  if (!files) throw new Error(`unknown suite ${suite}; known: ${Object.keys(suites).join(', ')}`);
  const port = await freePort();
  pointAtServe(suite, port);
  const server = await startServe(suite, config, port);
  const report = join(dir, `report-${suite}.json`);
  const env = { ...process.env };
  // With CI set, the suites spawn the reference server themselves.
  delete env.CI;
  try {
    await run(join(dir, 'node_modules/.bin/vitest'), ['run', ...files, '--reporter=default', '--reporter=json', `--outputFile=${report}`], { cwd: dir, env });
  } finally {
    server.kill('SIGTERM');
    await new Promise((done) => (server.exitCode !== null ? done() : server.once('exit', done)));
  }
  const json = JSON.parse(readFileSync(report, 'utf8'));
  const failed = json.testResults.flatMap((file) => file.assertionResults.filter((test) => test.status === 'failed').map((test) => test.fullName));
  results.push({ suite, passed: json.numPassedTests, failed: json.numFailedTests, skipped: json.numPendingTests + json.numTodoTests, failures: failed });
}

console.log(`\nlanggraphjs ${commit.slice(0, 12)} libs/langgraph-api/tests against agent-platform serve`);
for (const { suite, passed, failed, skipped, failures } of results) {
  console.log(`${suite.padEnd(12)} passed ${passed}, failed ${failed}, skipped ${skipped}`);
  for (const name of failures) console.log(`  failed: ${name}`);
}
// Explicitly: what serve's children left on its pipes would keep this process waiting.
process.exit(results.some((result) => result.failed > 0) ? 1 : 0);
