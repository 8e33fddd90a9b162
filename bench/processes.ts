// Child servers for the benches: the platform's `serve` and the reference server, each in its own
// process group so that stopping one stops everything it started.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';

/** A port free on 127.0.0.1 right now. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer().on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });

/** Spawns a server in its own process group and resolves once its output matches `ready` (BENCH_READY_SECONDS, 120 s by default: more on a loaded machine). */
export function startProcess(command: string, args: string[], options: { cwd: string; env?: Record<string, string>; ready: RegExp }): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  return new Promise((resolve, reject) => {
    const readySeconds = Number(process.env.BENCH_READY_SECONDS ?? 120);
    const timer = setTimeout(() => reject(new Error(`not ready after ${readySeconds} s:\n${output.slice(-3000)}`)), readySeconds * 1000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (options.ready.test(output)) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output.slice(-3000)}`)));
  });
}

/** SIGTERM to the process group, SIGKILL after 10 s. */
export const stopProcess = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      child.kill('SIGTERM');
    }
    setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 10_000).unref();
  });

const benchDir = new URL('.', import.meta.url).pathname;
const root = join(benchDir, '..');
/** The reference server's folder: its own package.json and lockfile (its peer dependencies clash with ours). */
export const referenceDir = join(benchDir, 'reference');

/** Installs the reference server from its lockfile, once. */
export function installReference() {
  if (existsSync(join(referenceDir, 'node_modules/@langchain/langgraph-cli'))) return;
  console.error('Installing the reference server from bench/reference/package-lock.json (npm ci, once)…');
  const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: referenceDir, stdio: 'inherit' });
  if (install.status !== 0) throw new Error(`npm ci in bench/reference failed (exit ${install.status ?? install.signal})`);
}

/**
 * `langgraph-cli dev` over a langgraph.json inside bench/reference (so the project's imports resolve to
 * the reference's dependencies), tracing off. Ready once it says the server runs: its banner, printed
 * earlier, already names the URL.
 */
export async function startReference(configPath: string, port: number) {
  installReference();
  return startProcess(
    join(referenceDir, 'node_modules/.bin/langgraphjs'),
    ['dev', '--port', String(port), '--host', '127.0.0.1', '--no-browser', '--config', configPath],
    { cwd: dirname(configPath), env: { LANGSMITH_TRACING: 'false', LANGCHAIN_TRACING_V2: 'false' }, ready: /Server running at/ },
  );
}

/** `agent-platform serve` of a langgraph.json on its own embedded PostgreSQL in a temp folder, removed on stop. */
export async function startServe(configPath: string, port: number, options: { tracing?: boolean; args?: string[]; root?: string; env?: Record<string, string> } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-serve-'));
  chmodSync(dataDir, 0o711);
  const server = await startProcess(
    process.execPath,
    [join(options.root ?? root, 'bin/agent-platform.mjs'), 'serve', '--config', configPath, '--port', String(port), '--data-dir', join(dataDir, 'data'), ...(options.args ?? [])],
    { cwd: options.root ?? root, env: { LOG_LEVEL: 'warn', DATABASE_URL: '', AGENT_SERVER_TRACING: String(options.tracing ?? false), ...options.env }, ready: /running at http/ },
  ).catch((error: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });
  return {
    ...server,
    dataDir,
    stop: async () => {
      await stopProcess(server.child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Connects to the embedded PostgreSQL of a `serve --data-dir <dataDir>`, in the database its agent
 * server keeps its runs in: its deployment's own (`agent_deployment_<id>`), or, for a checkout from
 * before deployments had databases of their own (BENCH_BEFORE_ROOT), the platform's.
 */
export async function connectEmbedded(dataDir: string): Promise<pg.Client> {
  const password = readFileSync(join(dataDir, 'postgres-password'), 'utf8').trim();
  const port = Number(readFileSync(join(dataDir, 'postgres/postmaster.pid'), 'utf8').split('\n')[3]);
  const connect = async (database: string) => {
    const db = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database });
    await db.connect();
    return db;
  };
  const platform = await connect('agent_platform');
  const { rows } = await platform.query<{ name: string }>(`SELECT datname AS name FROM pg_database WHERE datname LIKE 'agent\\_deployment\\_%' AND NOT datistemplate`);
  if (!rows[0]) return platform;
  await platform.end();
  return connect(rows[0].name);
}

/**
 * The bench's two-node graph deployed through the control plane: `start` (its own process and embedded
 * PostgreSQL) in a temp folder, a git repository of bench/graphs created with POST /v2/deployments and
 * waited for until DEPLOYED. `deploymentUrl` is the deployment's agent server behind the gateway (key,
 * role, signed identity), in its sandbox on its own database; `key` the first start's API key.
 */
export async function startDeployedGraph(options: { env?: Record<string, string> } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-gateway-'));
  chmodSync(dataDir, 0o711);
  const repo = mkdtempSync(join(tmpdir(), 'bench-gateway-repo-'));
  chmodSync(repo, 0o755);
  const removeFolders = () => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(repo, { recursive: true, force: true });
  };
  copyFileSync(join(benchDir, 'graphs/two-node.ts'), join(repo, 'two-node.ts'));
  copyFileSync(join(benchDir, 'graphs/langgraph.json'), join(repo, 'langgraph.json'));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.test', ...args], { cwd: repo });
  git('init', '--quiet', '--initial-branch=main');
  git('add', '-A');
  git('commit', '--quiet', '-m', 'bench');
  const port = await freePort();
  const platform = await startProcess(process.execPath, [join(root, 'bin/agent-platform.mjs'), 'start', '--port', String(port), '--data-dir', join(dataDir, 'data')], {
    cwd: root,
    env: { LOG_LEVEL: 'warn', DATABASE_URL: '', AGENT_SERVER_TRACING: 'false', ...options.env },
    ready: /API key: \S+/,
  }).catch((error: unknown) => {
    removeFolders();
    throw error;
  });
  const stop = async () => {
    await stopProcess(platform.child);
    removeFolders();
  };
  try {
    const key = /API key: (\S+)/.exec(platform.output())![1]!;
    const url = `http://127.0.0.1:${port}`;
    const workspaces = (await (await fetch(`${url}/api/v1/workspaces`, { headers: { 'x-api-key': key } })).json()) as { id: string }[];
    const call = async (method: string, path: string, body?: unknown) => {
      const headers = { 'x-api-key': key, 'x-tenant-id': workspaces[0]!.id, 'content-type': 'application/json' };
      const response = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
      return (await response.json()) as any;
    };
    const created = await call('POST', '/v2/deployments', {
      name: 'bench-gateway',
      source: 'github',
      source_config: { repo_url: `file://${repo}` },
      source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
    });
    for (const deadline = Date.now() + 180_000; ; ) {
      const revision = await call('GET', `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}`);
      if (revision.status === 'DEPLOYED') break;
      if (Date.now() > deadline) throw new Error(`the bench deployment is still ${revision.status} after 3 minutes`);
      if (/FAILED|SKIPPED|INTERRUPTED/.test(revision.status)) throw new Error(`the bench deployment ended ${revision.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { ...platform, key, url, deploymentUrl: `${url}/deployments/${created.id}`, dataDir: join(dataDir, 'data'), postgresDir: join(dataDir, 'data', 'postgres'), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * `concurrency` callers each calling `call` back to back until `seconds` have passed (the calls in
 * flight then are waited for and counted): how many completed, and over how long.
 */
export async function callersFor(seconds: number, concurrency: number, call: () => Promise<unknown>): Promise<{ completed: number; elapsedSeconds: number }> {
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let completed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await call();
        completed++;
      }
    }),
  );
  return { completed, elapsedSeconds: (performance.now() - started) / 1000 };
}
