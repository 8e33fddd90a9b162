// Control-plane test plumbing: git repositories made by the test (`git init` in a tmp dir, served as
// `file://` urls), the /v2 API over real HTTP, and waiting for a revision to finish.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { startTestPlatform, type TestPlatform } from './helpers.js';

export type GitRepo = { dir: string; url: string; commit(branch: string, files: Record<string, string>): string };

/** A repository with a `main` branch holding `files`; `commit` adds a branch (from main) with more files. */
export function makeGitRepo(files: Record<string, string>): GitRepo {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-repo-'));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.com', ...args], { cwd: dir, encoding: 'utf8' }).trim();
  const write = (more: Record<string, string>) => {
    for (const [path, content] of Object.entries(more)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
  };
  // Readable by others, as a repository a deployment may clone must be: the clone runs as the deployment's own OS user.
  chmodSync(dir, 0o755);
  git('init', '--quiet', '--initial-branch=main');
  write(files);
  git('add', '-A');
  git('commit', '--quiet', '-m', 'main');
  return {
    dir,
    url: `file://${dir}`,
    commit(branch, more) {
      git('checkout', '--quiet', '-B', branch, 'main');
      write(more);
      git('add', '-A');
      git('commit', '--quiet', '-m', branch);
      const sha = git('rev-parse', 'HEAD');
      git('checkout', '--quiet', 'main');
      return sha;
    },
  };
}

/** A dependency-free LangGraph.js graph answering `<version>: <input>`, and telling what its process sees. */
export function echoGraph(version: string): Record<string, string> {
  return {
    'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' } }),
    'agent.ts': `
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  input: Annotation<string>(),
  reply: Annotation<string>(),
  seen: Annotation<Record<string, unknown>>(),
});

// Output of the runtime: kept in the revision's build and deploy logs, secrets masked.
console.log('loading graph ${version} with secret', process.env.GREETING_SECRET);

export const graph = new StateGraph(State)
  .addNode('answer', async (state) => {
    console.error('answering', state.input, 'with secret', process.env.GREETING_SECRET);
    if (state.input === 'slow') await new Promise((resolve) => setTimeout(resolve, 60_000));
    // 'sleep <ms>': a run of that length.
    if (state.input.startsWith('sleep ')) await new Promise((resolve) => setTimeout(resolve, Number(state.input.slice(6))));
    return {
      reply: '${version}: ' + state.input,
      seen: {
        pid: process.pid,
        secret: process.env.GREETING_SECRET ?? null,
        other_secret: process.env.OTHER_SECRET ?? null,
        database_url: process.env.DATABASE_URL ?? null,
        secret_key: process.env.AGENT_PLATFORM_SECRET_KEY ?? null,
        env_names: Object.keys(process.env),
        // A repository without package.json loads as ES modules, where there is no require.
        module_system: typeof require === 'function' ? 'commonjs' : 'module',
      },
    };
  })
  .addEdge(START, 'answer')
  .addEdge('answer', END)
  .compile();
`,
  };
}

export type Api = (method: string, path: string, options?: { body?: unknown; key?: string; tenant?: string | null; raw?: string }) => Promise<{ status: number; body: any }>;

/** Calls the platform's /v2 API with a key and tenant. */
export function controlPlaneApi(url: string, defaults: { key: string; tenant: string }): Api {
  return async (method, path, options = {}) => {
    const tenant = options.tenant === undefined ? defaults.tenant : options.tenant;
    const response = await fetch(`${url}${path}`, {
      method,
      headers: {
        'x-api-key': options.key ?? defaults.key,
        ...(tenant ? { 'x-tenant-id': tenant } : {}),
        ...(options.body !== undefined || options.raw !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body };
  };
}

const FINISHED = ['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN'];

/** Polls a revision (as the spec's client does, faster) until it finishes; returns it. */
export async function waitForRevision(api: Api, deploymentId: string, revisionId: string, timeoutMs = 150_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, body } = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`);
    expect(status).toBe(200);
    if (FINISHED.includes(body.status)) {
      // A failure says why in the test's output: the revision's last log lines.
      if (body.status.endsWith('_FAILED') && process.env.TEST_SHOW_REVISION_LOGS) console.error(await revisionLogs(api, deploymentId, revisionId));
      return body;
    }
    if (Date.now() > deadline) {
      throw new Error(`revision ${revisionId} still ${body.status} after ${timeoutMs} ms\n${await revisionLogs(api, deploymentId, revisionId)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Waits for a revision that must deploy; if it does not, the test fails with the revision's build and deploy logs, which say why. */
export async function waitForDeployed(api: Api, deploymentId: string, revisionId: string, timeoutMs?: number): Promise<any> {
  const revision = await waitForRevision(api, deploymentId, revisionId, timeoutMs);
  if (revision.status !== 'DEPLOYED') expect.fail(`revision ${revisionId} ended ${revision.status}, not DEPLOYED\n${await revisionLogs(api, deploymentId, revisionId)}`);
  return revision;
}

/** A revision's build and deploy logs, their last lines: what a failed test shows of why. */
async function revisionLogs(api: Api, deploymentId: string, revisionId: string): Promise<string> {
  const logs: string[] = [];
  for (const type of ['build', 'deploy']) {
    const { body } = await api('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?type=${type}&limit=1000`);
    const lines: string[] = (body?.resources ?? []).map((line: { message: string }) => line.message);
    logs.push(`${type} log:\n${lines.join('\n').slice(-4000)}`);
  }
  return logs.join('\n');
}

export const deploymentBody = (repoUrl: string, overrides: { name?: string; repo_ref?: string; graph_config_path?: string; secrets?: { name: string; value: string }[] } = {}) => ({
  name: overrides.name ?? 'echo',
  source: 'github',
  source_config: { repo_url: repoUrl, deployment_type: 'dev', build_on_push: false, custom_url: null, resource_spec: null },
  source_revision_config: { repo_ref: overrides.repo_ref ?? 'main', graph_config_path: overrides.graph_config_path ?? 'langgraph.json', image_uri: null },
  secrets: overrides.secrets ?? [],
});

/** A test platform whose worker runs the control plane's pipeline (test platforms leave it off: test files share one database and job queues). */
export const startControlPlanePlatform = (config: Record<string, string> = {}) => startTestPlatform({ jobs: true, config: { AGENT_PLATFORM_CONTROL_PLANE_WORKER: 'true', ...config } });

/** Stops the runtimes the platform's pipeline launched, then the platform. */
export async function stopControlPlanePlatform(platform: TestPlatform | undefined): Promise<void> {
  await platform?.deps.deployedRuntimes?.stop();
  await platform?.stop();
}

/**
 * Source for a deployed graph's module: `platformStatus(url, init)` answers the HTTP status of a
 * request to the platform, sent the one way deployed code can still reach it from its own network:
 * over a connection its launcher hands its process (the way its traces go), asked for on the process's
 * IPC channel as its agent server asks. `directStatus` tries the platform's address itself, and
 * answers the connection's error code (the network of its own reaches nothing of the host's).
 */
export const PLATFORM_CALLS_SOURCE = `
import { request } from 'node:http';
import type { Socket } from 'node:net';

let nextConnection = 1_000_000;
function platformSocket(): Promise<Socket> {
  const id = nextConnection++;
  return new Promise((resolve, reject) => {
    const onMessage = (message: any, handle?: Socket) => {
      if (message?.type !== 'platform-connection' || message.id !== id) return;
      process.off('message', onMessage);
      if (handle) resolve(handle);
      else reject(new Error(message.error ?? 'no connection'));
    };
    process.on('message', onMessage);
    process.send!({ type: 'connect-platform', id });
  });
}

export function platformStatus(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { method: init.method ?? 'GET', headers: init.headers, createConnection: (_options: unknown, done: (error: Error | null, socket?: Socket) => void) => void platformSocket().then((socket) => done(null, socket), done) } as any, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    sent.on('error', reject);
    sent.end(init.body);
  });
}

export function directStatus(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<string> {
  return fetch(url, init).then((response) => String(response.status), (error) => String(error.cause?.code ?? error.message));
}
`;
