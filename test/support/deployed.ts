// `TEST_AGENT_SERVER=deployed`: the agent-server tests against a deployed revision instead of `serve`.
// The test's graph config (its files under test/fixtures/) is committed to a git repository and deployed
// through the control plane of a platform started in this test file's process; the tests reach the
// deployment's url, /deployments/<id>, through a loopback proxy that adds the platform key to requests
// that carry none of their own (their own `fetch` calls included), as a client holding the key does.
// A deployment with custom auth gets no key added: its callers are its own end users. Not part of the
// suite (each file deploys once): a way to run every agent-server test at a deployment's url, through
// the gateway. What serve's harness gives tests is given here for the deployment: its own
// database (with its own login), its agent server's process (killed and started again by its launcher),
// and a second worker on its database.
import { EventEmitter } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { pino } from 'pino';
import { createDeps } from '../../src/wiring.js';
import type { Deps } from '../../src/context.js';
import { ensureDeploymentDatabase } from '../../src/platform/services/deployments/deployment-database.js';
import { getWorkspace } from '../../src/platform/services/tenancy/tenancy.service.js';
import { startBoss } from '../../src/agent-server/jobs/boss.js';
import { buildApiKey, buildTenant, buildUser } from './factories.js';
import { gone } from './processes.js';
import { testConfig, type TestPlatform } from './helpers.js';
import { controlPlaneApi, deploymentBody, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForDeployed } from './deployments.js';

const FIXTURES = new URL('../fixtures/', import.meta.url).pathname;

let platform: Promise<TestPlatform> | undefined;
let running = 0;

export type Deployed = {
  /** The deployment's url (the proxy's origin, then /deployments/<id>), as serve's url. */
  url: string;
  client: Client;
  deploymentId: string;
  /** Its own database, with its agent server's own login. */
  databaseUrl: string;
  /** Its agent server's process, as serve's harness gives serve's (kill and `exit`). */
  child: ChildProcess;
  /** Resolves once its launcher has started a new agent server in place of a killed one, and it answers. */
  restarted(): Promise<void>;
  stop(): Promise<void>;
};

/**
 * The files of a repository that deploys `configPath` (a langgraph.json naming files under
 * test/fixtures/ by absolute path, as fixtureConfig writes it): each fixture project it names, in a
 * folder of its own, and the config at the root naming them relatively. A package.json says the
 * projects are ES modules, as this repository's says of them at serve (without one, Node loads a
 * repository's .ts files as CommonJS).
 */
function repositoryOf(configPath: string): { files: Record<string, string>; customAuth: boolean } {
  const config = readFileSync(configPath, 'utf8');
  const projects = new Set([...config.matchAll(new RegExp(`${FIXTURES.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([^/"]+)/`, 'g'))].map((match) => match[1]!));
  const files: Record<string, string> = { 'langgraph.json': config.replaceAll(FIXTURES, './'), 'package.json': JSON.stringify({ private: true, type: 'module' }) };
  const strings = (value: unknown): string[] =>
    typeof value === 'string' ? [value] : value && typeof value === 'object' ? Object.values(value).flatMap(strings) : [];
  const outside = strings(JSON.parse(files['langgraph.json']!)).find((value) => value.startsWith('/'));
  if (outside) throw new Error(`${configPath} names ${outside}, outside test/fixtures/: the harness cannot deploy it`);
  for (const project of projects) {
    const folder = join(FIXTURES, project);
    for (const name of readdirSync(folder, { recursive: true }) as string[]) {
      if (statSync(join(folder, name)).isFile()) files[`${project}/${name}`] = readFileSync(join(folder, name), 'utf8');
    }
  }
  return { files, customAuth: !!(JSON.parse(config) as { auth?: { path?: string } }).auth?.path };
}

// Settings of serve's own process, which a deployment cannot be given (the control plane refuses
// secrets by these names): a deployed agent server runs with the platform's.
const RUNTIME_SETTING = /^(AGENT_PLATFORM_.*|LOG_.*)$/;
// Those of them the platform passes on to the agent servers it launches: the platform is started with
// them (the file's first deployment starts it, so its settings are the file's).
const PASSED_ON_SETTING = /^AGENT_PLATFORM_SSE_HEARTBEAT_SECONDS$/;

/**
 * Deploys the graph config at `configPath` and returns a url that answers as `serve` would (the
 * proxy's). `env` goes to the deployment as its secrets (its environment), except serve's own settings
 * (RUNTIME_SETTING), which do not apply unless the platform passes them on (PASSED_ON_SETTING); AGENT_SERVER_TRACE_WORKSPACE_ID (serve's workspace) says
 * which workspace the deployment is made in.
 */
export async function startDeployed(configPath: string, env: Record<string, string> = {}): Promise<Deployed> {
  running += 1;
  try {
    return await deploy(configPath, env);
  } catch (error) {
    await release();
    throw error;
  }
}

/** One use of the file's platform less: the last stops it. */
async function release(): Promise<void> {
  running -= 1;
  if (running > 0) return;
  const stopping = platform;
  platform = undefined;
  await stopControlPlanePlatform(await stopping?.catch(() => undefined));
}

async function deploy(configPath: string, env: Record<string, string>): Promise<Deployed> {
  platform ??= startControlPlanePlatform(Object.fromEntries(Object.entries(env).filter(([name]) => PASSED_ON_SETTING.test(name))));
  const started = await platform;
  const key = await deployerKey(started, env.AGENT_SERVER_TRACE_WORKSPACE_ID);
  const api = controlPlaneApi(started.url, key);
  const { files, customAuth } = repositoryOf(configPath);
  const secrets = Object.entries(env)
    .filter(([name]) => !RUNTIME_SETTING.test(name))
    .map(([name, value]) => ({ name, value }));
  const created = await api('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(files).url, { name: 'agent-server-test', secrets }) });
  if (created.status !== 201) throw new Error(`the fixture deployment was refused: ${created.status} ${JSON.stringify(created.body)}`);
  const deploymentId: string = created.body.id;
  const revisionId: string = created.body.latest_revision_id;
  await waitForDeployed(api, deploymentId, revisionId).catch(async (error: unknown) => {
    await api('DELETE', `/v2/deployments/${deploymentId}`);
    throw error;
  });
  const gateway = new URL(started.url);
  const base = `/deployments/${deploymentId}`;
  // `serve` answers GraphQL at its root; here that is the platform's /graphql, whose types of the
  // deployment's resources resolve through its agent server.
  const upstreamPath = (url = '/') => {
    const below = url.startsWith(base) ? url.slice(base.length) : url;
    return /^\/graphql(\/|\?|$)/.test(below) ? below : url;
  };
  // The caller's own key stays; a deployment with custom auth is reached as its end users reach it.
  const withKey = (headers: Record<string, string | string[] | undefined>) => (customAuth || headers['x-api-key'] ? headers : { ...headers, 'x-api-key': key.key });
  const proxy = createServer((req, res) => {
    // The Host stays the proxy's: what the deployment advertises (A2A cards, UI links) is its url here.
    const forwarded = request({ host: gateway.hostname, port: gateway.port, method: req.method, path: upstreamPath(req.url), headers: withKey(req.headers) }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', () => res.destroy());
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  // WebSockets (the thread stream's, GraphQL's) go to the gateway the same way.
  proxy.on('upgrade', (req, socket, head) => {
    const upstream = connect(Number(gateway.port), gateway.hostname);
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    upstream.once('connect', () => {
      const lines = Object.entries(withKey(req.headers)).flatMap(([name, value]) => (value === undefined ? [] : (Array.isArray(value) ? value : [value]).map((item) => `${name}: ${item}`)));
      upstream.write(`GET ${upstreamPath(req.url)} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${base}`;
  const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });

  // The agent server's process: the one its launcher (in this process) runs for the revision.
  const child = new DeployedChild(() => started.deps.deployedRuntimes?.runtimeOf(revisionId)?.pid?.());

  return {
    url,
    client,
    deploymentId,
    databaseUrl: (await ensureDeploymentDatabase(started.deps, deploymentId)).url,
    child: child as unknown as ChildProcess,
    async restarted() {
      const deadline = Date.now() + 120_000;
      while (!child.pid || child.pid === child.killed) {
        if (Date.now() > deadline) throw new Error('the deployment’s agent server was not started again');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // The gateway waits for a restarting revision; this answers once the new one serves.
      await client.assistants.search({ limit: 1 });
    },
    async stop() {
      proxy.closeAllConnections();
      proxy.close();
      // What the deployed agent server logged (at TEST_LOG_LEVEL), when asked for.
      if (process.env.TEST_SHOW_REVISION_LOGS) console.error('deploy log', JSON.stringify((await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=deploy`)).body));
      await api('DELETE', `/v2/deployments/${deploymentId}`);
      await release();
    },
  };
}

/** A deployed agent server's process, as a ChildProcess of serve's is used: its pid, kill, and `exit`. */
class DeployedChild extends EventEmitter {
  /** The last pid killed. */
  killed: number | undefined;

  constructor(private readonly pidNow: () => number | undefined) {
    super();
  }

  get pid(): number | undefined {
    return this.pidNow();
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    const pid = this.pidNow();
    if (!pid) return false;
    this.killed = pid;
    process.kill(pid, signal);
    void gone(pid).then(() => this.emit('exit', null, signal));
    return true;
  }
}


/** A workspace admin's key for the deployment: in `workspaceId` (serve's AGENT_SERVER_TRACE_WORKSPACE_ID), else a fresh tenant's. */
async function deployerKey(started: TestPlatform, workspaceId: string | undefined): Promise<{ key: string; tenant: string }> {
  if (!workspaceId) {
    const tenant = await buildTenant(started.system);
    return { key: tenant.adminKey, tenant: tenant.workspace.id };
  }
  const workspace = await getWorkspace(started.system, workspaceId);
  const admin = await buildUser(started.system, workspace.organizationId, { workspaces: [{ workspaceId, role: 'WORKSPACE_ADMIN' }] });
  return { key: (await buildApiKey(started.system, workspace.organizationId, admin.id)).key, tenant: workspaceId };
}

/**
 * Another worker of the deployment (as a second `serve` process is of serve's): its own pool and job
 * queue on the deployment's database, working the agent server's queues when `jobs`.
 */
export async function startDeploymentWorker(databaseUrl: string, options: { jobs?: boolean } = {}): Promise<{ deps: Deps; stop(): Promise<void> }> {
  const config = testConfig({ DATABASE_URL: databaseUrl });
  const wiring = await createDeps(config, pino({ level: config.logLevel }), { databaseUrl, applicationName: 'test-deployment-worker' });
  const boss = await startBoss(wiring.deps, { work: options.jobs ?? false });
  wiring.onStop(() => boss.stop({ graceful: false, close: true }));
  wiring.deps.boss = boss;
  return { deps: wiring.deps, stop: wiring.stop };
}

