// The control plane's launcher: each deployment's runtime runs in an OS process of its own
// (runtime-child.ts) whose environment holds what that runtime needs and nothing of the platform's:
//   - the deployment's secrets, as environment variables;
//   - a database login of its own (a role made for the deployment, member of the platform's role), so
//     the platform's database password is not in it;
//   - a signing key derived from the installation's key for this one runtime (key id recorded in
//     deployment_runtimes): the API signs its graph requests with the same derivation, and the runtime
//     can neither read the platform's secrets nor sign for another deployment's runtime.
// A runtime that dies unasked is started again (its runs in flight are ended `error` by the new
// runtime's recovery, or by the `runs.sweep` schedule).
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { dirname } from 'node:path';
import type { Deps } from '../services/context.js';
import { deploymentSecrets } from '../services/deployments/deployments.service.js';
import { deleteDeploymentRuntime } from '../services/deployments/deployments.store.js';
import { findControlDeployment } from '../services/deployments/revisions.store.js';
import type { LaunchedRuntime, RuntimeLauncher } from './launcher.js';
import type { ChildReport } from './runtime-child.js';

const CHILD_ENTRY = new URL('./child-entry.mjs', import.meta.url).pathname;
const START_TIMEOUT_MS = 120_000;
const RESTART_DELAY_MS = [500, 1000, 2000, 5000, 10_000, 30_000];

/** The environment every child starts from: enough for node and user code to run, nothing else of the platform's. */
function baseEnvironment(cwd: string): Record<string, string> {
  const env: Record<string, string> = { HOME: cwd, NODE_ENV: process.env.NODE_ENV ?? 'production' };
  // Plus the machine's proxy and trust anchors, so graphs reach model APIs as the platform does (no credentials).
  for (const name of ['PATH', 'TZ', 'LANG', 'TMPDIR', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR']) {
    if (process.env[name]) env[name] = process.env[name]!;
  }
  return env;
}

/**
 * A database URL for the deployment's runtime: a login role of its own (`agent_runtime_<id>`, fresh
 * password on every launch) that is a member of the platform's role and acts as it (`-c role`), so
 * tables and schemas it creates belong to the platform. When the platform's role may not create roles,
 * the platform's own URL is the fallback, with a warning in the log.
 */
async function runtimeDatabaseUrl(deps: Deps, deploymentId: string): Promise<string> {
  const role = `agent_runtime_${deploymentId.replace(/-/g, '')}`;
  const password = randomBytes(24).toString('hex');
  try {
    const { rows } = await deps.db.pool.query<{ platform_role: string; exists: boolean }>(
      'SELECT current_user AS platform_role, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS exists',
      [role],
    );
    const { platform_role: platformRole, exists } = rows[0]!;
    // Role names and the password are generated here (hex and a uuid), so quoting them is safe.
    if (exists) await deps.db.pool.query(`ALTER ROLE "${role}" LOGIN PASSWORD '${password}'`);
    else await deps.db.pool.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}' IN ROLE "${platformRole.replace(/"/g, '""')}"`);
    const url = new URL(deps.db.url);
    url.username = role;
    url.password = password;
    url.searchParams.set('options', `-c role=${platformRole}`);
    return url.toString();
  } catch (error) {
    deps.logger.warn({ err: error, deploymentId }, "could not create the runtime's own database role; it uses the platform's login");
    return deps.db.url;
  }
}

/** Waits for a child's first report; rejects when it exits or takes too long. */
function firstReport(child: ChildProcess, output: () => string, timeoutMs: number): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`did not start within ${timeoutMs / 1000} s\n${output()}`));
    }, timeoutMs);
    child.once('message', (report: ChildReport) => {
      clearTimeout(timer);
      resolve(report);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited (${signal ?? code}) before it was ready\n${output()}`));
    });
  });
}

function spawnChild(env: Record<string, string>, cwd: string): { child: ChildProcess; output: () => string } {
  const child = fork(CHILD_ENTRY, [], { cwd, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], execArgv: [] });
  // The last lines of its output, for the revision's log when it fails.
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-8000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output: () => output };
}

/**
 * Loads every graph of a config in a throwaway child process (the build's import check), with the
 * deployment's secrets and no database. Resolves with the graph ids; rejects with the loader's error.
 */
export async function checkGraphsInChild(options: { configPath: string; secrets: { name: string; value: string }[] }): Promise<string[]> {
  const cwd = dirname(options.configPath);
  const env = {
    ...Object.fromEntries(options.secrets.map((secret) => [secret.name, secret.value])),
    ...baseEnvironment(cwd),
    AGENT_PLATFORM_CHILD_MODE: 'check',
    AGENT_PLATFORM_GRAPH_CONFIG: options.configPath,
  };
  const { child, output } = spawnChild(env, cwd);
  const report = await firstReport(child, output, START_TIMEOUT_MS);
  child.kill('SIGKILL');
  if (report.type === 'failed') throw new Error(report.message);
  return report.graphIds;
}

/** The child-process launcher (see the top of this file). */
export const childProcessLauncher = (deps: Deps): RuntimeLauncher => ({
  async launch(spec) {
    const row = await findControlDeployment(deps.db, spec.deploymentId);
    const secrets = row ? deploymentSecrets(deps, row) : [];
    const cwd = dirname(spec.configPath);

    const startChild = async () => {
      const keyId = `${spec.deploymentId}:${randomBytes(16).toString('hex')}`;
      const env = {
        // The secrets first: nothing of the runtime's own configuration can be overridden by one.
        ...Object.fromEntries(secrets.map((secret) => [secret.name, secret.value])),
        ...baseEnvironment(cwd),
        LOG_LEVEL: deps.config.logLevel,
        HOST: deps.config.host === '0.0.0.0' ? '127.0.0.1' : deps.config.host,
        DATABASE_URL: await runtimeDatabaseUrl(deps, spec.deploymentId),
        AGENT_PLATFORM_SECRET_KEY: deps.secrets.derive(keyId).key.toString('base64'),
        AGENT_PLATFORM_RUNTIME_KEY_ID: keyId,
        AGENT_PLATFORM_DATA_DIR: cwd,
        AGENT_PLATFORM_ROLES: 'runtime',
        AGENT_PLATFORM_CHILD_MODE: 'serve',
        AGENT_PLATFORM_GRAPH_CONFIG: spec.configPath,
        AGENT_PLATFORM_DEPLOYMENT_ID: spec.deploymentId,
        ...(spec.revisionId ? { AGENT_PLATFORM_REVISION_ID: spec.revisionId } : {}),
      };
      const { child, output } = spawnChild(env, cwd);
      const report = await firstReport(child, output, START_TIMEOUT_MS);
      if (report.type === 'failed') {
        child.kill('SIGKILL');
        throw new Error(`${report.message}\n${output()}`);
      }
      return { child, report };
    };

    let current = await startChild();
    let stopping = false;
    let restarts = 0;

    const superviseChild = (running: typeof current) => {
      running.child.once('exit', (code, signal) => {
        if (stopping) return;
        deps.logger.error({ deploymentId: spec.deploymentId, code, signal }, 'a deployment runtime died; starting it again');
        // Its row would send graph requests to a dead address until the sweep removes it.
        void deleteDeploymentRuntime(deps.db, running.report.type === 'ready' ? running.report.runtimeId : '').catch(() => undefined);
        void restart();
      });
    };
    const restart = async () => {
      while (!stopping) {
        await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS[Math.min(restarts, RESTART_DELAY_MS.length - 1)]));
        restarts += 1;
        if (stopping) return;
        try {
          current = await startChild();
          superviseChild(current);
          deps.logger.info({ deploymentId: spec.deploymentId }, 'deployment runtime restarted');
          return;
        } catch (error) {
          deps.logger.error({ err: error, deploymentId: spec.deploymentId }, 'a deployment runtime could not be restarted');
        }
      }
    };
    superviseChild(current);

    const launched: LaunchedRuntime = {
      get url() {
        return current.report.type === 'ready' ? current.report.url : '';
      },
      graphIds: current.report.type === 'ready' ? current.report.graphIds : [],
      where: 'child process',
      pid: () => current.child.pid,
      async stop() {
        stopping = true;
        const { child } = current;
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        if (child.connected) child.send('stop');
        else child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      },
    };
    return launched;
  },
});
