// npm run bench:deploy — the control plane end to end: create a deployment of a dependency-free
// LangGraph.js repository (a local git repository, `file://`), poll its revision to DEPLOYED, then
// time the first run through the new url with the official SDK. Prints p50/min/max; asserts nothing.
//
// Times depend on the machine's load (printed with them); the CPU seconds that the platform's child
// processes (git, the runtime children) spent per deployment do much less: they count the cold starts.
//
// It also prints what the sandbox costs one start: `node -e 0` in a deployment's sandbox (bubblewrap,
// its own OS user and cgroups as the platform makes them) against the same command bare.
//
// Then the same with a repository of a template's size (a yarn.lock of about 500 packages: LangGraph,
// LangChain's core and a template's dev tooling, written at the bench's start): its first deploy (the
// deployment's own package-manager cache cold), and a redeploy of a commit that changes only its
// graph's code (the lockfile unchanged, so the serving revision's packages are taken), side by side
// with the floor: the same frozen `yarn install` by hand on this machine, cold and warm cache.
//
//   BENCH_DEPLOYS (default 10)   deployments created one after the other
//   BENCH_DEPENDENCY_DEPLOYS (3) deployments (each then redeployed) of the template-sized repository; 0 skips it
//   AGENT_PLATFORM_SANDBOX=none AGENT_PLATFORM_ALLOW_UNSANDBOXED=true   the same without the sandbox
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { spawnSync } from 'node:child_process';
import { deploymentFiles, deploymentSandbox, probeSandbox, sandboxEnvironment } from '../src/platform/launcher/sandbox.js';
import { createBenchTenant, startBenchPlatform } from './tenant.js';

const DEPLOYS = Number(process.env.BENCH_DEPLOYS ?? 10);
const DEPENDENCY_DEPLOYS = Number(process.env.BENCH_DEPENDENCY_DEPLOYS ?? 3);

/** What a LangGraph.js template depends on: the graph's packages and the dev tooling templates carry. */
const TEMPLATE_PACKAGE = {
  name: 'bench-template',
  private: true,
  type: 'module',
  packageManager: 'yarn@1.22.22',
  dependencies: { '@langchain/core': '0.3.80', '@langchain/langgraph': '0.2.74', '@langchain/openai': '0.6.17', zod: '3.25.76', dotenv: '16.6.1' },
  devDependencies: { typescript: '5.9.3', jest: '29.7.0', 'ts-jest': '29.4.5', eslint: '8.57.1', prettier: '3.6.2', '@typescript-eslint/parser': '5.62.0', '@typescript-eslint/eslint-plugin': '5.62.0' },
};
const YARN = ['exec', '--yes', '--package=yarn@1.22.22', '--', 'yarn'];


function makeRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-repo-'));
  // Readable by the deployment's own OS user, which clones it.
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { agent: './agent.ts:graph' } }));
  writeFileSync(
    join(dir, 'agent.ts'),
    `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ input: Annotation<string>(), reply: Annotation<string>() });
export const graph = new StateGraph(State).addNode('echo', (s) => ({ reply: s.input })).addEdge(START, 'echo').addEdge('echo', END).compile();
`,
  );
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.test', ...args], { cwd: dir });
  git('init', '--quiet', '--initial-branch=main');
  git('add', '-A');
  git('commit', '--quiet', '-m', 'bench');
  return dir;
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const row = (label: string, values: number[]) =>
  console.log(`${label.padEnd(34)} p50 ${(percentile(values, 50) / 1000).toFixed(2)} s   min ${(Math.min(...values) / 1000).toFixed(2)} s   max ${(Math.max(...values) / 1000).toFixed(2)} s`);

/** CPU seconds of this process's ended and reaped children (/proc/self/stat cutime + cstime; Linux). */
function childCpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}
const showLoad = () => loadavg().map((value) => value.toFixed(2)).join(' ');

const platform = await startBenchPlatform({
  AGENT_PLATFORM_ROLES: 'api,worker',
  // To measure without the sandbox: AGENT_PLATFORM_SANDBOX=none AGENT_PLATFORM_ALLOW_UNSANDBOXED=true.
  AGENT_PLATFORM_SANDBOX: process.env.AGENT_PLATFORM_SANDBOX,
  AGENT_PLATFORM_ALLOW_UNSANDBOXED: process.env.AGENT_PLATFORM_ALLOW_UNSANDBOXED,
});
const repo = makeRepo();
try {
  const tenant = await createBenchTenant(platform.deps);
  const headers = { 'x-api-key': tenant.key, 'x-tenant-id': tenant.workspace.id, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${platform.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: response.status, body: response.status === 204 ? undefined : ((await response.json()) as any) };
  };
  const toDeployed: number[] = [];
  const toFirstRun: number[] = [];
  console.log(`load average at start: ${showLoad()}`);
  const childCpuAtStart = childCpuSeconds();
  for (let i = 0; i < DEPLOYS; i++) {
    const started = performance.now();
    const created = await call('POST', '/v2/deployments', {
      name: `bench-${i}`,
      source: 'github',
      source_config: { repo_url: `file://${repo}` },
      source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
    });
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
    for (;;) {
      const revision = await call('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}`);
      if (revision.body.status === 'DEPLOYED') break;
      if (/FAILED|SKIPPED|INTERRUPTED/.test(revision.body.status)) {
        const logs = await call('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=build`);
        throw new Error(`revision ended ${revision.body.status}:\n${logs.body.resources.map((line: { message: string }) => line.message).join('\n')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const deployed = performance.now();
    const client = new Client({ apiUrl: created.body.url, defaultHeaders: { 'x-api-key': tenant.key } });
    await client.runs.wait(null, 'agent', { input: { input: 'hi' } });
    const answered = performance.now();
    toDeployed.push(deployed - started);
    toFirstRun.push(answered - deployed);
    console.log(`deployment ${i + 1}/${DEPLOYS}: DEPLOYED after ${((deployed - started) / 1000).toFixed(2)} s, first run answered ${((answered - deployed) / 1000).toFixed(2)} s later`);
    if (i === DEPLOYS - 1) {
      // Where the time of the last one went: its pipeline's log lines, as seconds after the create.
      const createdAt = Date.parse(created.body.created_at);
      for (const type of ['build', 'deploy']) {
        const logs = await call('GET', `/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}/logs?type=${type}`);
        for (const line of logs.body.resources) console.log(`  +${((Date.parse(line.timestamp) - createdAt) / 1000).toFixed(2)} s  ${type}: ${line.message.split('\n')[0].slice(0, 80)}`);
      }
    }
    await call('DELETE', `/v2/deployments/${created.body.id}`);
    // Until its runtime child has exited (and been reaped), so its CPU time is counted.
    while (platform.deps.deployedRuntimes?.runtimeOf(created.body.latest_revision_id)) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const childCpu = (childCpuSeconds() - childCpuAtStart) / DEPLOYS;
  console.log('');
  console.log(`load average at end: ${showLoad()}`);
  console.log(`child processes' CPU per deployment (git, runtime children)  ${childCpu.toFixed(2)} s`);
  row('create → DEPLOYED', toDeployed);
  row('DEPLOYED → first run answered', toFirstRun);
  row('create → first run answered', toDeployed.map((value, i) => value + toFirstRun[i]!));
  await sandboxStartCost();
  if (DEPENDENCY_DEPLOYS > 0) await templateSizedDeploys(call, tenant.key);
} finally {
  await platform.stop();
  rmSync(repo, { recursive: true, force: true });
}

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** Seconds `yarn install --frozen-lockfile` takes in `dir` with `cache` as yarn's cache (node_modules removed first). */
function timedYarnInstall(dir: string, cache: string): number {
  rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
  const started = performance.now();
  execFileSync('npm', [...YARN, 'install', '--frozen-lockfile', '--non-interactive', '--no-progress', '--silent'], { cwd: dir, env: { ...process.env, YARN_CACHE_FOLDER: cache }, stdio: 'ignore' });
  return (performance.now() - started) / 1000;
}

/** A git repository of a template's size: its yarn.lock written by yarn here, and the floor measured on it. */
function makeTemplateRepo(): { dir: string; floor: { cold: number; warm: number } } {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-template-'));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'package.json'), JSON.stringify(TEMPLATE_PACKAGE, null, 2));
  writeFileSync(join(dir, '.gitignore'), 'node_modules\n');
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ node_version: '20', graphs: { agent: './agent.ts:graph' }, env: '.env', dependencies: ['.'] }));
  writeFileSync(
    join(dir, 'agent.ts'),
    `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ input: Annotation<string>(), reply: Annotation<string>() });
export const graph = new StateGraph(State).addNode('echo', (s) => ({ reply: s.input })).addEdge(START, 'echo').addEdge('echo', END).compile();
`,
  );
  const cache = mkdtempSync(join(tmpdir(), 'agent-platform-bench-yarn-cache-'));
  try {
    execFileSync('npm', [...YARN, 'install', '--non-interactive', '--no-progress', '--silent'], { cwd: dir, env: { ...process.env, YARN_CACHE_FOLDER: cache }, stdio: 'ignore' });
    rmSync(cache, { recursive: true, force: true });
    const cold = timedYarnInstall(dir, cache);
    const warm = timedYarnInstall(dir, cache);
    rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.test', ...args], { cwd: dir });
    git('init', '--quiet', '--initial-branch=main');
    git('add', '-A');
    git('commit', '--quiet', '-m', 'template');
    return { dir, floor: { cold, warm } };
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

/** Waits for a revision to finish; its time since `started`, or throws with its build log. */
async function deployedAfter(call: Call, deploymentId: string, revisionId: string, started: number): Promise<number> {
  for (;;) {
    const revision = await call('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`);
    if (revision.body.status === 'DEPLOYED') return performance.now() - started;
    if (/FAILED|SKIPPED|INTERRUPTED/.test(revision.body.status)) {
      const logs = await call('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=build&limit=1000`);
      throw new Error(`revision ended ${revision.body.status}:\n${logs.body.resources.map((line: { message: string }) => line.message).join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** First deploys and unchanged-lockfile redeploys of the template-sized repository, beside the floor. */
async function templateSizedDeploys(call: Call, key: string) {
  const { dir, floor } = makeTemplateRepo();
  try {
    const packages = readFileSync(join(dir, 'yarn.lock'), 'utf8').match(/^"?[^\s#].*:$/gm)?.length ?? 0;
    console.log(`\ntemplate-sized repository: ${packages} packages in its yarn.lock; load average ${showLoad()}`);
    const first: number[] = [];
    const again: number[] = [];
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.test', ...args], { cwd: dir });
    for (let i = 0; i < DEPENDENCY_DEPLOYS; i++) {
      let started = performance.now();
      const created = await call('POST', '/v2/deployments', {
        name: `bench-template-${i}`,
        source: 'github',
        source_config: { repo_url: `file://${dir}` },
        source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
      });
      if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
      first.push(await deployedAfter(call, created.body.id, created.body.latest_revision_id, started));
      // A commit that changes only the graph's code.
      git('checkout', '--quiet', '-B', `change-${i}`, 'main');
      writeFileSync(join(dir, 'agent.ts'), `${readFileSync(join(dir, 'agent.ts'), 'utf8')}// change ${i}\n`);
      git('commit', '--quiet', '-am', `change ${i}`);
      git('checkout', '--quiet', 'main');
      started = performance.now();
      const patched = await call('PATCH', `/v2/deployments/${created.body.id}`, { source_revision_config: { repo_ref: `change-${i}` } });
      if (patched.status !== 200) throw new Error(`patch answered ${patched.status}: ${JSON.stringify(patched.body)}`);
      again.push(await deployedAfter(call, created.body.id, patched.body.latest_revision_id, started));
      const logs = await call('GET', `/v2/deployments/${created.body.id}/revisions/${patched.body.latest_revision_id}/logs?type=build&limit=1000`);
      const reused = logs.body.resources.some((line: { message: string }) => line.message.includes('its packages taken as they are'));
      const client = new Client({ apiUrl: created.body.url, defaultHeaders: { 'x-api-key': key } });
      await client.runs.wait(null, 'agent', { input: { input: 'hi' } });
      console.log(`template deployment ${i + 1}/${DEPENDENCY_DEPLOYS}: first deploy ${(first.at(-1)! / 1000).toFixed(2)} s, redeploy ${(again.at(-1)! / 1000).toFixed(2)} s (packages ${reused ? 'taken from the serving revision' : 'installed again'})`);
      await call('DELETE', `/v2/deployments/${created.body.id}`);
    }
    console.log(`load average at end: ${showLoad()}`);
    row('template: create → DEPLOYED (first)', first);
    row('template: redeploy → DEPLOYED', again);
    console.log(`${'floor: yarn install --frozen-lockfile'.padEnd(34)} cold ${floor.cold.toFixed(2)} s   warm ${floor.warm.toFixed(2)} s (by hand, no sandbox)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One start of `node -e 0` in a deployment's sandbox vs bare, alternated, 20 of each. */
async function sandboxStartCost() {
  const { config, logger } = platform.deps;
  const status = probeSandbox(config.sandbox);
  console.log(`sandbox: ${status.enabled ? `bubblewrap ${status.version}, own OS user ${status.perDeploymentUser}, limits ${status.limits.how}` : `none (${status.reason})`}`);
  if (!status.enabled) return;
  const deployment = { id: '00000000-0000-4000-8000-00000000be4c', sandbox_id: 999_999 };
  const files = deploymentFiles(config.dataDir, deployment, status, config.sandbox, logger);
  const sandbox = deploymentSandbox(status, config.sandbox, files, deployment, logger);
  const env = { ...sandboxEnvironment(status, files) };
  const bare: number[] = [];
  const sandboxed: number[] = [];
  for (let i = 0; i < 20; i++) {
    let started = performance.now();
    spawnSync(process.execPath, ['-e', '0'], { env });
    bare.push(performance.now() - started);
    started = performance.now();
    await sandbox.run(process.execPath, ['-e', '0'], { readOnly: [], writable: [], cwd: '/tmp' }, { env, timeoutMs: 30_000, label: 'sandboxed node' });
    sandboxed.push(performance.now() - started);
  }
  sandbox.release();
  const ms = (values: number[]) => `p50 ${percentile(values, 50).toFixed(1)} ms  min ${Math.min(...values).toFixed(1)} ms`;
  console.log(`node -e 0 bare                     ${ms(bare)}`);
  console.log(`node -e 0 in a deployment sandbox  ${ms(sandboxed)}   (sandbox start: +${(percentile(sandboxed, 50) - percentile(bare, 50)).toFixed(1)} ms)`);
}
