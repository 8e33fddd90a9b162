// Deployed code thinks about what the platform does on its behalf, and about what it shares with the
// platform and other deployments, and attacks both from inside its sandbox, as a hostile customer's
// graph would:
//   1. links in its own folders, placed where the platform (as root) once wrote, chowned and bound:
//      its tsx cache folder to a root-only folder, its old cache-seed file and its git config to
//      root-owned files; then its runtime restarts and the build-on-push watch reads its ref;
//   2. the server's maintenance databases (`postgres`, `template1`), where the platform took its locks;
//   3. connection slots: lifting its own limits, then opening connections until refused;
//   4. processes: starting as many as it can;
//   5. disk: temporary files of its queries beyond its bound, and lifting that bound;
//   6. the host's network: a listener on the host's loopback, its own routes.
// Each attempt is shown to be made (the answer is the attempt's own error, or what it got), and each
// must reach nothing, or only the deployment itself.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionBudgetError } from '../../../src/database/admin-login.js';
import { deploymentDatabaseName, ensureDeploymentDatabase } from '../../../src/platform/services/deployments/deployment-database.js';
import { probeSandbox } from '../../../src/platform/launcher/sandbox.js';
import { REFUSED_NETWORKS } from '../../../src/platform/launcher/sandbox-network.js';
import { watchPushedRefs } from '../../../src/platform/jobs/revisions-watch.job.js';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForDeployed } from '../../support/deployments.js';

const LIMITS = { pids: 160, connections: 40, tempFiles: 8 * 1024 * 1024, filesMb: 20, databaseMb: 60 };

const project = {
  'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' } }),
  'agent.ts': `
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({ action: Annotation<string>(), targets: Annotation<any>(), report: Annotation<Record<string, unknown>>() });

const code = (error: any) => String(error?.code ?? error?.message ?? error);
const attempt = async (work: () => unknown) => {
  try {
    const value = await work();
    return 'ok' + (value === undefined ? '' : ' ' + String(value).slice(0, 200));
  } catch (error) {
    return code(error);
  }
};
const ownDatabase = (database?: string, user?: string) => {
  const url = new URL(process.env.DATABASE_URL!);
  if (database) url.pathname = '/' + database;
  return new pg.Client({ connectionString: url.toString(), application_name: 'attacker' });
};
const onDatabase = async (database: string | undefined, sql: string[]) => {
  const client = ownDatabase(database);
  try {
    await client.connect();
    let last: unknown;
    for (const statement of sql) last = (await client.query(statement)).rows[0];
    return 'ok ' + JSON.stringify(last ?? null);
  } catch (error) {
    return code(error);
  } finally {
    await client.end().catch(() => undefined);
  }
};
// Held across runs: what it opened stays open while the test looks from outside.
const held: { clients: pg.Client[]; processes: ChildProcess[] } = { clients: [], processes: [] };

async function act(action: string, targets: any): Promise<Record<string, unknown>> {
  const cache = dirname(process.env.AGENT_PLATFORM_COMPILE_CACHE!);
  const home = process.env.HOME!;
  if (action === 'links') {
    return {
      // Its own folders are mount points of its sandbox, inside a folder it cannot write.
      replace_cache: await attempt(() => renameSync(cache, cache + '-moved')),
      tsx_to_secret: await attempt(() => { rmSync(join(cache, 'tsx'), { recursive: true, force: true }); symlinkSync(targets.secretDir, join(cache, 'tsx')); }),
      seed_marker_to_victim: await attempt(() => { rmSync(join(cache, 'seed'), { force: true }); symlinkSync(targets.victimFile, join(cache, 'seed')); }),
      git_config_to_victim: await attempt(() => { rmSync(join(home, '.gitconfig'), { force: true }); symlinkSync(targets.gitVictimFile, join(home, '.gitconfig')); }),
    };
  }
  if (action === 'look') {
    return {
      tsx_cache: await attempt(() => readdirSync('/tmp/tsx-' + process.getuid!()).join(',')),
      secret: await attempt(() => readFileSync(join(targets.secretDir, 'secret.txt'), 'utf8')),
      secret_through_cache: await attempt(() => readFileSync(join(cache, 'tsx', 'secret.txt'), 'utf8')),
    };
  }
  if (action === 'databases') {
    const own = new URL(process.env.DATABASE_URL!).pathname.slice(1);
    return {
      postgres: await onDatabase('postgres', ['SELECT pg_advisory_lock(hashtext($$agent-platform:embedded-logins$$))']),
      template1: await onDatabase('template1', ['SELECT 1']),
      own: await onDatabase(undefined, ['SELECT current_database() = ' + "'" + own + "'" + ' AS own']),
      database_owner_is_me: await onDatabase(undefined, ['SELECT pg_get_userbyid(datdba) = current_user AS mine FROM pg_database WHERE datname = current_database()']),
      my_connection_limit: await onDatabase(undefined, ['SELECT rolconnlimit FROM pg_roles WHERE rolname = current_user']),
      lift_database_limit: await onDatabase(undefined, ['ALTER DATABASE "' + own + '" CONNECTION LIMIT -1']),
      lift_role_limit: await onDatabase(undefined, ['ALTER ROLE CURRENT_USER CONNECTION LIMIT -1']),
      lift_temp_file_limit: await onDatabase(undefined, ['SET temp_file_limit = -1']),
      // A sort spilled to disk, several times its bound of temporary files.
      big_sort: await onDatabase(undefined, ["SET work_mem = '64kB'", 'SELECT count(*) FROM (SELECT g FROM generate_series(1, 2000000) g ORDER BY g DESC) s']),
    };
  }
  if (action === 'connections') {
    let error = 'none';
    for (let i = 0; i < 200; i++) {
      const client = ownDatabase();
      client.on('error', () => undefined);
      try {
        await client.connect();
        held.clients.push(client);
      } catch (failure) {
        error = code(failure);
        break;
      }
    }
    return { opened: held.clients.length, error };
  }
  if (action === 'processes') {
    let error = 'none';
    for (let i = 0; i < 400; i++) {
      const child = spawn('/bin/sleep', ['60'], { stdio: 'ignore' });
      const failed = await new Promise<unknown>((resolve) => { child.once('spawn', () => resolve(undefined)); child.once('error', resolve); });
      if (failed) { error = code(failed); break; }
      held.processes.push(child);
    }
    return { started: held.processes.length, error };
  }
  if (action === 'fill-database') {
    return { ballast: await onDatabase(undefined, ["CREATE TABLE IF NOT EXISTS ballast AS SELECT repeat(md5(g::text), 30) AS filler FROM generate_series(1, 80000) g", 'SELECT pg_database_size(current_database()) AS bytes']) };
  }
  if (action === 'fill-files') {
    writeFileSync(join(home, 'ballast.bin'), Buffer.alloc(30 * 1024 * 1024, 1));
    return {};
  }
  if (action === 'release') {
    for (const child of held.processes.splice(0)) child.kill('SIGKILL');
    await Promise.all(held.clients.splice(0).map((client) => client.end().catch(() => undefined)));
    return {};
  }
  if (action === 'network') {
    const reach = (host: string, port: number) => new Promise<string>((resolve) => {
      const socket = connect({ host, port, timeout: 5000 });
      socket.once('connect', () => { socket.destroy(); resolve('connected'); });
      socket.once('timeout', () => { socket.destroy(); resolve('timeout'); });
      socket.once('error', (error) => resolve(code(error)));
    });
    return {
      routes: spawnSync('/usr/sbin/ip', ['route', 'show'], { encoding: 'utf8' }).stdout.split('\\n').map((line) => line.trim()).filter(Boolean),
      host_loopback: await reach('127.0.0.1', targets.hostPort),
      host_loopback_through_gateway: await reach('10.0.2.2', targets.hostPort),
      change_routes: spawnSync('/usr/sbin/ip', ['route', 'del', 'prohibit', '10.0.0.0/8'], { encoding: 'utf8' }).stderr.trim() || 'ok',
      name_server: readFileSync('/etc/resolv.conf', 'utf8').trim(),
    };
  }
  throw new Error('unknown action ' + action);
}

export const graph = new StateGraph(State)
  .addNode('attack', async (state) => ({ report: await act(state.action, state.targets) }))
  .addEdge(START, 'attack')
  .addEdge('attack', END)
  .compile();
`,
};

const probe = probeSandbox({ mode: 'auto', allowUnsandboxed: false, uidBase: 1_000_000_000, memoryBytes: 2 ** 31, cpus: 1, pids: 1024, network: { mode: 'isolated', allowed: [] } });
const asRoot = process.getuid?.() === 0;

let platform: TestPlatform;
let api: Api;
let client: Client;
let attacker: { id: string; latest_revision_id: string };
let outside: string;
let hostListener: Server;
let adminKey: string;
const hostConnections: string[] = [];

const run = async (action: string, targets: Record<string, unknown> = {}) =>
  ((await client.runs.wait(null, 'agent', { input: { action, targets } })) as { report: Record<string, any> }).report;

beforeAll(async () => {
  platform = await startControlPlanePlatform({
    AGENT_PLATFORM_SANDBOX_PIDS: String(LIMITS.pids),
    AGENT_PLATFORM_DEPLOYMENT_DB_CONNECTIONS: String(LIMITS.connections),
    AGENT_PLATFORM_DEPLOYMENT_TEMP_FILES: `${LIMITS.tempFiles / 1024 / 1024}mb`,
    AGENT_PLATFORM_USAGE_CHECK_SECONDS: '1',
  });
  const tenant = await buildTenant(platform.system);
  adminKey = tenant.adminKey;
  api = controlPlaneApi(platform.url, { key: tenant.adminKey, tenant: tenant.workspace.id });
  const body = deploymentBody(makeGitRepo(project).url, { name: 'escapist' });
  body.source_config.build_on_push = true;
  body.source_config.resource_spec = { disk_mb: LIMITS.filesMb, database_mb: LIMITS.databaseMb } as never;
  const created = await api('POST', '/v2/deployments', { body });
  attacker = created.body;
  await waitForDeployed(api, attacker.id, attacker.latest_revision_id);
  client = new Client({ apiUrl: `${platform.url}/deployments/${attacker.id}`, defaultHeaders: { 'x-api-key': tenant.adminKey } });
  // Root-owned targets outside every sandbox, made by the test.
  outside = mkdtempSync('/tmp/agent-platform-outside-');
  chmodSync(outside, 0o755);
  hostListener = createServer((socket) => {
    hostConnections.push(String(socket.remoteAddress));
    socket.destroy();
  });
  await new Promise<void>((resolve) => hostListener.listen(0, '127.0.0.1', resolve));
}, 240_000);
afterAll(async () => {
  await run('release').catch(() => undefined);
  if (attacker) await api('DELETE', `/v2/deployments/${attacker.id}`);
  await stopControlPlanePlatform(platform);
  hostListener?.close();
  if (outside) rmSync(outside, { recursive: true, force: true });
});

describe.skipIf(!probe.enabled || !asRoot)("the platform's hands, as root", () => {
  it("never follow the deployment's links: its restart and the build-on-push watch chown, write and bind nothing of the host's", async () => {
    const secretDir = join(outside, 'root-only');
    mkdirSync(secretDir, { mode: 0o700 });
    writeFileSync(join(secretDir, 'secret.txt'), 'root secret');
    const victimFile = join(outside, 'victim.conf');
    const gitVictimFile = join(outside, 'git-victim.conf');
    for (const file of [victimFile, gitVictimFile]) writeFileSync(file, 'root-owned contents\n', { mode: 0o600 });
    const targets = { secretDir, victimFile, gitVictimFile };

    const planted = await run('links', targets);
    expect(planted).toEqual({ replace_cache: 'EBUSY', tsx_to_secret: 'ok', seed_marker_to_victim: 'ok', git_config_to_victim: 'ok' });

    // Its runtime restarts (it dies; its launcher starts it again) with its caches seeded afresh, and
    // the watch looks its ref up as its user, with a git config of the platform's.
    const root = join(platform.deps.config.dataDir, 'deployments', attacker.id);
    rmSync(join(root, 'cache-seed'), { force: true });
    const before = await runtimeRow(attacker.id);
    process.kill(platform.deps.deployedRuntimes!.runtimeOf(attacker.latest_revision_id)!.pid!()!, 'SIGKILL');
    await expect.poll(async () => (await runtimeRow(attacker.id)) ?? before, { timeout: 60_000, interval: 200 }).not.toBe(before);
    await watchPushedRefs(platform.deps);

    for (const path of [secretDir, victimFile, gitVictimFile]) expect([path, statSync(path).uid, statSync(path).gid]).toEqual([path, 0, 0]);
    expect(statSync(secretDir).mode & 0o777).toBe(0o700);
    expect(readFileSync(victimFile, 'utf8')).toBe('root-owned contents\n');
    expect(readFileSync(gitVictimFile, 'utf8')).toBe('root-owned contents\n');
    // The deployment's folder is the platform's; what the platform writes there, it writes as files of its own.
    expect(statSync(root).uid).toBe(0);
    expect(statSync(join(root, 'cache-seed')).isFile()).toBe(true);
    // Inside, its tsx cache is a copy of the seed again, and the secret is not in its reach.
    const looked = await run('look', targets);
    expect(looked.tsx_cache).toMatch(/^ok /);
    expect(looked.tsx_cache).not.toContain('secret.txt');
    expect(looked.secret).toBe('ENOENT');
    expect(looked.secret_through_cache).toBe('ENOENT');
  }, 120_000);
});

describe.skipIf(!probe.enabled)("the database server's shared parts", () => {
  it('the maintenance databases are closed, and no limit of its own is the deployment\'s to lift', async () => {
    const report = await run('databases');
    expect(report).toEqual({
      // 42501: no CONNECT on them (the platform's start-up lock lives in its own database).
      postgres: '42501',
      template1: '42501',
      own: 'ok {"own":true}',
      database_owner_is_me: 'ok {"mine":false}',
      my_connection_limit: `ok {"rolconnlimit":${LIMITS.connections}}`,
      lift_database_limit: '42501',
      lift_role_limit: '42501',
      lift_temp_file_limit: '42501',
      // 53400: temporary file size exceeds temp_file_limit.
      big_sort: '53400',
    });
  });

  it('opens no more connections than its limit, and the platform still gets its own', async () => {
    const report = await run('connections');
    // 53300: too many connections for role (its agent server holds some of its limit already).
    expect(report.error).toBe('53300');
    expect(report.opened).toBeGreaterThan(0);
    expect(report.opened).toBeLessThan(LIMITS.connections);
    const { rows } = await platform.deps.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [deploymentDatabaseName(attacker.id)]);
    expect(rows[0]!.n).toBeLessThanOrEqual(LIMITS.connections);
    // Meanwhile the platform opens new connections of its own.
    const fresh = new pg.Client({ connectionString: platform.deps.db.url });
    await fresh.connect();
    expect((await fresh.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    await fresh.end();
    await run('release');
  });

  it("a deployment's limit must fit beside the others' in what the server keeps for deployments", async () => {
    const { rows } = await platform.deps.db.pool.query<{ max: number }>("SELECT current_setting('max_connections')::int AS max");
    const greedy = { ...platform.deps, config: { ...platform.deps.config, deploymentDatabaseConnections: rows[0]!.max } };
    const refused = await ensureDeploymentDatabase(greedy, randomUUID()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConnectionBudgetError);
    expect((refused as Error).message).toMatch(/no room for this deployment's \d+ connections/);
  });
});

describe.skipIf(!probe.enabled || !probe.limits.enforced)('processes', () => {
  it('stop at its pids limit', async () => {
    const report = await run('processes');
    expect(report.error).toBe('EAGAIN');
    expect(report.started).toBeGreaterThan(0);
    expect(report.started).toBeLessThan(LIMITS.pids);
    await run('release');
  });
});

describe.skipIf(!probe.enabled || !probe.network.isolated)('its network', () => {
  it("reaches nothing on the host's loopback, and refuses link-local and private ranges by routes it cannot change", async () => {
    const report = await run('network', { hostPort: (hostListener.address() as { port: number }).port });
    expect(report.host_loopback).toBe('ECONNREFUSED');
    // slirp4netns's gateway maps no host loopback: it answers "network unreachable".
    expect(report.host_loopback_through_gateway).toBe('ENETUNREACH');
    expect(hostConnections).toEqual([]);
    for (const range of REFUSED_NETWORKS) expect(report.routes).toContain(`prohibit ${range}`);
    expect(report.routes).toContain('default via 10.0.2.2 dev tap0');
    expect(report.change_routes).toMatch(/Operation not permitted/);
    expect(report.name_server).toBe('nameserver 10.0.2.3');
  });
});

describe.skipIf(!probe.enabled)('disk', () => {
  const status = async () => (await api('GET', `/v2/deployments/${attacker.id}`)).body.status;
  const metrics = async () => (await fetch(`${platform.url}/metrics`, { headers: { 'x-api-key': adminKey } })).text();
  const gateway = () => fetch(`${platform.url}/deployments/${attacker.id}/threads/search`, { method: 'POST', headers: { 'x-api-key': adminKey, 'content-type': 'application/json' }, body: '{}' });
  /** Runs a filling action: it fills what it fills, or is stopped meanwhile for outgrowing its limit. */
  const filling = async (action: string) => {
    const report = await run(action).catch((error: Error) => {
      expect(error.message).toMatch(/shut down during the run|outgrew its disk limits/);
      return undefined;
    });
    if (report && action === 'fill-database') expect(report.ballast).toMatch(/^ok /);
  };
  const resize = (spec: Record<string, number>) => api('PATCH', `/v2/deployments/${attacker.id}`, { body: { source_config: { resource_spec: spec } } });

  it('a database that outgrows its limit stops the deployment, saying why, until the limit is raised', async () => {
    const usage = await metrics();
    expect(usage).toMatch(new RegExp(`agent_platform_deployment_database_limit_bytes\\{deployment_id="${attacker.id}"[^}]*\\} ${LIMITS.databaseMb * 1024 * 1024}`));
    expect(usage).toMatch(new RegExp(`agent_platform_deployment_pids\\{deployment_id="${attacker.id}"[^}]*\\} \\d+`));
    expect(usage).toMatch(new RegExp(`agent_platform_deployment_over_limit\\{deployment_id="${attacker.id}"[^}]*\\} 0`));

    // The worker may stop it while the run still fills its database (it measures every second here).
    await filling('fill-database');
    await expect.poll(status, { timeout: 30_000, interval: 250 }).toBe('OVER_LIMIT');
    const refused = await gateway();
    expect(refused.status).toBe(503);
    expect(await refused.text()).toMatch(/outgrew its disk limits .*database \d+\.\d MB of 60\.0 MB/);
    expect(await metrics()).toMatch(new RegExp(`agent_platform_deployment_over_limit\\{deployment_id="${attacker.id}"[^}]*\\} 1`));
    // Another organization's admin sees nothing of it.
    const stranger = await buildTenant(platform.system);
    expect(await (await fetch(`${platform.url}/metrics`, { headers: { 'x-api-key': stranger.adminKey } })).text()).not.toContain(attacker.id);

    expect((await resize({ disk_mb: LIMITS.filesMb, database_mb: 500 })).status).toBe(200);
    await expect.poll(status, { timeout: 40_000, interval: 250 }).toBe('READY');
    await expect.poll(async () => (await gateway()).status, { timeout: 40_000, interval: 500 }).toBe(200);
  }, 120_000);

  it('files that outgrow their limit do the same', async () => {
    await filling('fill-files');
    await expect.poll(status, { timeout: 30_000, interval: 250 }).toBe('OVER_LIMIT');
    expect(await (await gateway()).text()).toMatch(/files \d+\.\d MB of 20\.0 MB/);
  }, 60_000);
});

async function runtimeRow(deploymentId: string): Promise<string | undefined> {
  const { rows } = await platform.deps.db.pool.query<{ id: string }>('SELECT id FROM deployment_runtimes WHERE deployment_id = $1 ORDER BY started_at DESC LIMIT 1', [deploymentId]);
  return rows[0]?.id;
}
