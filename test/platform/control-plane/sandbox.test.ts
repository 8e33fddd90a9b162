// Deployed code attacks from inside its sandbox, as a hostile customer would write it: once from a
// dependency install script during the build, once from its graph at run time. Each attack is aimed
// right (the test checks from outside that the file exists, the process runs), and each must fail:
// the platform's data directory (its secret key, the database superuser's password), another
// deployment's process (environment, signals) and checkout (read, write), the platform's process,
// and becoming root.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../../src/platform/launcher/sandbox.js';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForDeployed, waitForRevision } from '../../support/deployments.js';

/** What the attacker tries; each answer is 'ok <what it got>' or the error's code. */
const ATTACK = `
const { readdirSync, readFileSync, writeFileSync } = require('node:fs');

const attempt = (fn) => {
  try {
    const value = fn();
    return 'ok ' + String(value ?? '').slice(0, 300);
  } catch (error) {
    return error.code ?? error.message;
  }
};

exports.attack = function attack(targets) {
  const report = { uid: process.getuid(), pid: process.pid, visible_pids: readdirSync('/proc').filter((name) => /^\\d+$/.test(name)) };
  for (const file of targets.platformFiles) report['read ' + file] = attempt(() => readFileSync(file, 'utf8'));
  report['list data dir'] = attempt(() => readdirSync(targets.dataDir).join(','));
  for (const pid of targets.victimPids) {
    report['environ ' + pid] = attempt(() => readFileSync('/proc/' + pid + '/environ', 'utf8'));
    report['kill ' + pid] = attempt(() => process.kill(pid, 'SIGKILL'));
  }
  report['platform environ'] = attempt(() => readFileSync('/proc/' + targets.platformPid + '/environ', 'utf8'));
  report['signal platform'] = attempt(() => process.kill(targets.platformPid, 0));
  report['read victim checkout'] = attempt(() => readFileSync(targets.victimFile, 'utf8'));
  report['write victim checkout'] = attempt(() => writeFileSync(targets.victimFile, 'export const graph = "owned";'));
  // In a process of its own (a graph runs in a worker thread, where process.setuid is not offered).
  report['become root'] = attempt(() => {
    const tried = require('node:child_process').spawnSync(process.execPath, ['-e', "try { process.setuid(0); console.log('ok') } catch (error) { console.log(error.code) }"], { encoding: 'utf8' });
    const answer = tried.stdout.trim();
    if (answer === 'ok') return answer;
    throw Object.assign(new Error(answer), { code: answer });
  });
  report['env names'] = Object.keys(process.env).sort().join(',');
  report['env holds the platform key'] = String(JSON.stringify(process.env).includes(targets.platformSecretKey));
  return report;
}
`;

const attackerProject = (targets: unknown) => ({
  'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' } }),
  'package.json': JSON.stringify({ name: 'attacker', version: '1.0.0', private: true, scripts: { postinstall: 'node install-attack.cjs' } }),
  'targets.json': JSON.stringify(targets),
  'attack.cjs': ATTACK,
  // A dependency install script: it runs during the build, in the build's sandbox.
  'install-attack.cjs': `
const { readFileSync, writeFileSync } = require('node:fs');
const { attack } = require('./attack.cjs');
writeFileSync('install-report.json', JSON.stringify(attack(JSON.parse(readFileSync('targets.json', 'utf8')))));
`,
  'agent.ts': `
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const { attack } = createRequire(import.meta.url)('./attack.cjs');

const State = Annotation.Root({ report: Annotation<Record<string, unknown>>() });
const here = (name: string) => new URL(name, import.meta.url);

export const graph = new StateGraph(State)
  .addNode('attack', async () => {
    const report = attack(JSON.parse(readFileSync(here('./targets.json'), 'utf8')));
    try {
      writeFileSync(here('./owned.txt'), 'x');
      report['write own checkout'] = 'ok';
    } catch (error) {
      report['write own checkout'] = (error as NodeJS.ErrnoException).code;
    }
    return { report };
  })
  .addEdge(START, 'attack')
  .addEdge('attack', END)
  .compile();
`,
});

/** A process and every process under it, from outside (/proc/<pid>/task/<tid>/children). */
function processTree(pid: number): number[] {
  const tree = [pid];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    for (const child of children ? children.split(/\s+/).map(Number) : []) tree.push(...processTree(child));
  }
  return tree;
}

const probe = probeSandbox({ mode: 'auto', allowUnsandboxed: false, uidBase: 1_000_000_000, memoryBytes: 2 ** 31, cpus: 1, pids: 1024, network: { mode: 'isolated', allowed: [] } });
const sandboxed = probe.enabled;
const limitsEnforced = probe.enabled && probe.limits.enforced;

let platform: TestPlatform;
let api: Api;
let key: string;
let victim: { id: string; latest_revision_id: string };
let attacker: { id: string; latest_revision_id: string };
let victimPids: number[];
let targets: { platformFiles: string[]; dataDir: string; victimPids: number[]; platformPid: number; victimFile: string; platformSecretKey: string };

beforeAll(async () => {
  platform = await startControlPlanePlatform();
  const tenant = await buildTenant(platform.system);
  key = tenant.adminKey;
  api = controlPlaneApi(platform.url, { key, tenant: tenant.workspace.id });
  const body = deploymentBody(makeGitRepo(echoGraph('victim')).url, { name: 'victim', secrets: [{ name: 'GREETING_SECRET', value: 'victim-s3cret' }] });
  body.source_config.resource_spec = { memory_mb: 1024, cpu: 0.5 } as never;
  const created = await api('POST', '/v2/deployments', { body });
  victim = created.body;
  await waitForDeployed(api, victim.id, victim.latest_revision_id);

  const { dataDir } = platform.deps.config;
  // The data directory's secret files: the database superuser's password (embedded PostgreSQL) and an installation key file.
  writeFileSync(join(dataDir, 'secret-key'), platform.deps.config.secretKey!.toString('base64'), { mode: 0o600, flag: 'w' });
  const victimRuntime = platform.deps.deployedRuntimes!.runtimeOf(victim.latest_revision_id)!;
  // Its sandbox and runtime, which live as long as it serves (not a helper the runtime starts and
  // ends on its own, such as tsx's esbuild service, whose pid could meanwhile be another process's).
  victimPids = processTree(victimRuntime.pid!()!).filter((pid) => /bwrap|child-entry/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')));
  targets = {
    dataDir,
    platformFiles: [join(dataDir, 'postgres-password'), join(dataDir, 'secret-key')],
    victimPids,
    platformPid: process.pid,
    victimFile: join(dataDir, 'revisions', victim.latest_revision_id, 'repo', 'agent.ts'),
    platformSecretKey: platform.deps.config.secretKey!.toString('base64'),
  };
  const attack = await api('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(attackerProject(targets)).url, { name: 'attacker' }) });
  attacker = attack.body;
  const revision = await waitForRevision(api, attacker.id, attacker.latest_revision_id);
  if (revision.status !== 'DEPLOYED') throw new Error(JSON.stringify((await api('GET', `/v2/deployments/${attacker.id}/revisions/${attacker.latest_revision_id}/logs?type=build`)).body));
}, 300_000);
afterAll(async () => {
  for (const deployment of [victim, attacker]) if (deployment) await api('DELETE', `/v2/deployments/${deployment.id}`);
  await stopControlPlanePlatform(platform);
});

/** The targets exist and the victim runs: the attacks below were aimed right. */
function expectTargetsReal() {
  for (const file of targets.platformFiles) expect(readFileSync(file, 'utf8').length).toBeGreaterThan(0);
  for (const pid of victimPids) expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).toContain('AGENT_PLATFORM_DEPLOYMENT_ID');
  expect(victimPids.some((pid) => readFileSync(`/proc/${pid}/environ`, 'utf8').includes('victim-s3cret'))).toBe(true);
  expect(readFileSync(targets.victimFile, 'utf8')).toContain('victim');
}

/** What every attack gets, from the build's install script or the runtime: nothing. */
function expectNothingReached(report: Record<string, unknown>) {
  for (const file of targets.platformFiles) expect([file, report[`read ${file}`]]).toEqual([file, 'ENOENT']);
  // The data directory shows only the folders bound into the sandbox (its deployment's and revision's,
  // and at run time the database's socket folder), never the database's files or the platform's secrets.
  const shown = String(report['list data dir']).replace(/^ok /, '').split(',').filter(Boolean);
  expect(shown.filter((name) => !['deployments', 'revisions', 'postgres-socket'].includes(name))).toEqual([]);
  for (const pid of victimPids) {
    expect([pid, report[`environ ${pid}`]]).toEqual([pid, 'ENOENT']);
    expect([pid, report[`kill ${pid}`]]).toEqual([pid, 'ESRCH']);
  }
  expect(report['platform environ']).toBe('ENOENT');
  expect(report['signal platform']).toBe('ESRCH');
  expect(report['read victim checkout']).toBe('ENOENT');
  expect(report['write victim checkout']).toMatch(/^(ENOENT|EROFS|EACCES)$/);
  // EPERM, or EINVAL where root is not even mapped into the sandbox's user namespace.
  expect(report['become root']).toMatch(/^(EPERM|EINVAL)$/);
  expect(report['env holds the platform key']).toBe('false');
  expect(String(report['env names'])).not.toMatch(/GREETING_SECRET/);
  // Its own PID namespace: a handful of processes, none of the machine's.
  expect((report.visible_pids as string[]).length).toBeLessThan(6);
}

describe.skipIf(!sandboxed)('deployed code in its sandbox', () => {
  it('a dependency install script reaches nothing of the platform or of another deployment', () => {
    expectTargetsReal();
    const report = JSON.parse(readFileSync(join(platform.deps.config.dataDir, 'revisions', attacker.latest_revision_id, 'repo', 'install-report.json'), 'utf8'));
    expectNothingReached(report);
  });

  it('a graph at run time reaches nothing either, cannot change its own checkout, and runs as its own OS user', async () => {
    expectTargetsReal();
    const client = new Client({ apiUrl: `${platform.url}/deployments/${attacker.id}`, apiKey: key });
    const { report } = (await client.runs.wait(null, 'agent', { input: {} })) as { report: Record<string, unknown> };
    expectNothingReached(report);
    expect(report['write own checkout']).toBe('EROFS');

    // Each deployment runs as an OS user of its own, which alone owns its checkout (in a folder the platform owns).
    const victimRepo = join(platform.deps.config.dataDir, 'revisions', victim.latest_revision_id, 'repo');
    const attackerRepo = join(platform.deps.config.dataDir, 'revisions', attacker.latest_revision_id, 'repo');
    if (process.getuid?.() === 0) {
      expect(report.uid).not.toBe(0);
      expect(statSync(attackerRepo).uid).toBe(report.uid);
      expect(statSync(dirname(attackerRepo)).uid).toBe(0);
      expect(statSync(victimRepo).uid).not.toBe(report.uid);
      expect(statSync(victimRepo).mode & 0o777).toBe(0o700);
    }

    // The victim lived through it all and still answers, unchanged.
    for (const pid of victimPids) expect(() => process.kill(pid, 0)).not.toThrow();
    const victimClient = new Client({ apiUrl: `${platform.url}/deployments/${victim.id}`, apiKey: key });
    expect(((await victimClient.runs.wait(null, 'agent', { input: { input: 'still there?' } })) as { reply: string }).reply).toBe('victim: still there?');
  }, 60_000);
});


describe.skipIf(!sandboxed || process.getuid?.() !== 0)('the clone, as the deployment’s own OS user', () => {
  it('cannot take another deployment’s checkout as its repository (a local path or file:// url)', async () => {
    const victimRepo = join(platform.deps.config.dataDir, 'revisions', victim.latest_revision_id, 'repo');
    // Aimed right: it is a git repository the platform itself could clone.
    expect(statSync(join(victimRepo, '.git')).isDirectory()).toBe(true);
    for (const repoUrl of [victimRepo, `file://${victimRepo}`]) {
      const created = await api('POST', '/v2/deployments', { body: deploymentBody(repoUrl, { name: 'thief' }) });
      expect(created.status).toBe(201);
      expect((await waitForRevision(api, created.body.id, created.body.latest_revision_id)).status).toBe('BUILD_FAILED');
      const logs = await api('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=build`);
      const text = logs.body.resources.map((line: { message: string }) => line.message).join('\n');
      // Refused because the deployment's own user cannot read it (git's ownership check, which stops a
      // clone as the platform's own user, is not what holds here: the clone trusts any owner).
      expect(text).toMatch(/git clone failed/);
      expect(text).toMatch(/does not exist|Permission denied|does not appear to be a git repository/);
      expect(text).not.toMatch(/dubious ownership/);
      expect(text).not.toMatch(/victim: /);
      await api('DELETE', `/v2/deployments/${created.body.id}`);
    }
  }, 60_000);
});

describe.skipIf(!limitsEnforced)('resource limits', () => {
  it('runs a deployment in cgroups holding its resource_spec (memory_mb, cpu)', () => {
    // cgroup v1 here: the memory and cpu hierarchies, each with a group per deployment.
    const groups = new Map(readFileSync(`/proc/${victimPids.at(-1)}/cgroup`, 'utf8').trim().split('\n').map((line) => [line.split(':')[1]!, line.split(':')[2]!]));
    const memory = groups.get('memory');
    if (memory !== undefined) {
      expect(memory.endsWith(`/agent-platform/${victim.id}`)).toBe(true);
      expect(readFileSync(join('/sys/fs/cgroup/memory', memory, 'memory.limit_in_bytes'), 'utf8').trim()).toBe(String(1024 * 1024 * 1024));
      if (process.env.TEST_SHOW_MEMORY) console.error('peak memory of the deployment cgroup', readFileSync(join('/sys/fs/cgroup/memory', memory, 'memory.max_usage_in_bytes'), 'utf8').trim(), readFileSync(join('/sys/fs/cgroup/memory', memory, 'memory.stat'), 'utf8').split('\n').filter((line) => /^(total_)?(rss|cache) /.test(line)).join(', '));
      const cpu = [...groups].find(([controllers]) => controllers.split(',').includes('cpu'))![1];
      expect(readFileSync(join('/sys/fs/cgroup/cpu', cpu, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('50000');
      // All deployments together weigh as many cores as the machine has against the platform's threads
      // and the database's backends (one core's weight each), not one core's.
      expect(readFileSync(join('/sys/fs/cgroup/cpu', dirname(cpu), 'cpu.shares'), 'utf8').trim()).toBe(String(availableParallelism() * 1024));
    } else {
      const unified = groups.get('')!;
      expect(unified.endsWith(`/agent-platform/${victim.id}`)).toBe(true);
      expect(readFileSync(join('/sys/fs/cgroup', unified, 'memory.max'), 'utf8').trim()).toBe(String(1024 * 1024 * 1024));
      expect(readFileSync(join('/sys/fs/cgroup', dirname(unified), 'cpu.weight'), 'utf8').trim()).toBe(String(Math.min(10_000, availableParallelism() * 100)));
    }
  });
});
