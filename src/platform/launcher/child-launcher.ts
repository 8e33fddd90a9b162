// The control plane's launcher: each deployed revision's agent server runs in an OS process of its own
// (agent-server/main.ts, then deployed-agent-server.ts), inside the deployment's sandbox
// (platform/launcher/sandbox.ts: bubblewrap, its own mount, PID, IPC, UTS and network namespaces,
// its revision's files read-only, its own OS user when the platform is root), whose environment holds
// what that agent server needs and nothing of the platform's:
//   - the deployment's secrets, as environment variables;
//   - the URL of the deployment's own database, with its own login (deployment-database.ts), which no
//     other database of the server lets in: the platform's database password is not in it;
//   - a signing key derived from the installation's key for this one process (key id recorded in
//     deployment_runtimes): the gateway signs the identity of the callers it forwards with the same
//     derivation, and the process can neither read the platform's secrets nor sign for another
//     deployment's agent server;
//   - the platform's URL and a trace key of this one process (tenancy.service.ts,
//     createDeploymentTraceKey), with which its agent server sends its runs' traces to the public
//     ingest API, over connections this launcher opens and hands it (handPlatformConnections: its own
//     network reaches nothing of the host's): the key writes only the deployment's tracing project and
//     is refused by every other route. It is revoked once the process has exited (its last traces
//     sent), and with the deployment.
// The child serves on a listening socket the launcher makes (serveChild), whose address the launcher
// records in deployment_runtimes (where the gateway finds it), holding the row's liveness lock. A child that dies unasked is started again (its runs in flight go back to
// the queue, executed again by whichever runtime takes them, through the new process's recovery or the
// `runs.sweep` schedule of an agent server of the deployment).
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { dirname } from 'node:path';
import type { Deps } from '../../context.js';
import { deploymentSecrets } from '../services/deployments/deployments.service.js';
import { deleteDeploymentRuntime, findDeployment, insertDeploymentRuntime } from '../services/deployments/deployments.store.js';
import { logRevision } from '../services/deployments/revisions.service.js';
import { type ControlDeploymentRow, findControlDeployment } from '../services/deployments/revisions.store.js';
import { type PreparedSandbox, sandboxFor } from './sandbox.js';
import { revisionDirectory } from './source-checkout.js';
import { ChildOutputLog } from './child-output.js';
import { HAND_OVER_FOLLOW_MS, type LaunchedRuntime, type LaunchSpec, type PreparedRuntime, type RuntimeLauncher, type RuntimeStopOptions, runtimeLockKey } from '../../contracts/launcher-protocol.js';
import { advertisedHost, type ChildCommand, type ChildReport } from '../../contracts/launcher-protocol.js';
import { ensureDeploymentDatabase } from '../services/deployments/deployment-database.js';
import { createDeploymentTraceKey, revokeDeploymentTraceKeys } from '../services/tenancy/api-keys.service.js';
import { deploymentCaches, seedDeploymentCaches } from './agent-server-caches.js';
import { holdSessionLock } from '../../database/session-lock.js';

const CHILD_ENTRY = new URL('../../agent-server/child-entry.mjs', import.meta.url).pathname;
const START_TIMEOUT_MS = 120_000;
const RESTART_DELAY_MS = [500, 1000, 2000, 5000, 10_000, 30_000];

/** The environment every child starts from: enough for node and user code to run, nothing else of the platform's. */
function baseEnvironment(): Record<string, string> {
  const env: Record<string, string> = { NODE_ENV: process.env.NODE_ENV ?? 'production' };
  // Plus the machine's proxy and trust anchors, so graphs reach model APIs as the platform does (no credentials).
  for (const name of ['PATH', 'TZ', 'LANG', 'TMPDIR', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR']) {
    if (process.env[name]) env[name] = process.env[name]!;
  }
  return env;
}

/**
 * The deployment's database URL for its agent server (deployment-database.ts: its own database and
 * login, made now if they do not exist yet). The platform reaches the embedded server through a Unix
 * socket (cheaper per message than loopback TCP); a sandboxed runtime does too when the socket's
 * folder holds nothing but PostgreSQL's sockets (embedded-postgres.ts gives them a folder of their own),
 * which its sandbox then sees read-only (spawnChild). Anywhere else (the platform's data directory, a
 * shared folder) it connects over loopback TCP.
 */
async function agentServerDatabaseUrl(deps: Deps, deploymentId: string, sandboxed: boolean): Promise<string> {
  const url = new URL((await ensureDeploymentDatabase(deps, deploymentId)).url);
  const socketDir = url.searchParams.get('host');
  if (sandboxed && socketDir && !holdsOnlyDatabaseSockets(socketDir)) url.searchParams.delete('host');
  return url.toString();
}

/** Whether a folder holds PostgreSQL's socket files (and their lock files) and nothing else. */
function holdsOnlyDatabaseSockets(dir: string): boolean {
  try {
    const entries = readdirSync(dir);
    return entries.length > 0 && entries.every((name) => /^\.s\.PGSQL\.\d+(\.lock)?$/.test(name));
  } catch {
    return false;
  }
}

/**
 * Records a serving agent server in deployment_runtimes, where the gateway finds it, for as long as it
 * runs: the row's liveness lock is held on a connection of the launcher's own, so a launcher that dies
 * leaves a row the platform's sweep removes (pruneDeadAgentServers). Returns its removal. `keyId`
 * names the key its requests are signed with (none: the installation's, for an agent server the
 * platform process runs itself).
 */
export async function recordAgentServer(deps: Deps, values: { id: string; deploymentId: string; url: string; revisionId?: string; keyId?: string }): Promise<() => Promise<void>> {
  // A database outage frees the lock, and the sweep then removes the row: both come back with the database.
  const lock = await holdSessionLock(deps.db.url, runtimeLockKey(values.id), {
    applicationName: 'agent-platform-runtime-liveness',
    logger: deps.logger,
    retaken: () => insertDeploymentRuntime(deps.db, values),
  });
  try {
    await insertDeploymentRuntime(deps.db, values);
  } catch (error) {
    await lock.release();
    throw error;
  }
  let removed: Promise<void> | undefined;
  return () =>
    (removed ??= (async () => {
      // The lock first, so that no retake puts the row back after it went; the server still answers meanwhile.
      await lock.release();
      await deleteDeploymentRuntime(deps.db, values.id).catch((error: unknown) => deps.logger.warn({ err: error }, "could not remove a stopped runtime's row"));
    })());
}

/** Waits for the child's next report; rejects (killing it) when it exits or takes too long. */
function nextReport(child: ChildProcess, output: () => string, timeoutMs: number): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      child.off('error', onError);
    };
    const onMessage = (report: ChildReport) => {
      // Asked of the launcher meanwhile (handPlatformConnections), not a report of its life.
      if (report.type === 'connect-platform') return;
      settle();
      resolve(report);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      settle();
      reject(new Error(`exited (${signal ?? code}) before it was ready\n${output()}`));
    };
    // Not started at all (its revision's folder removed meanwhile, say): no `exit` follows.
    const onError = (error: Error) => {
      settle();
      reject(new Error(`could not start: ${error.message}`));
    };
    const timer = setTimeout(() => {
      settle();
      child.kill('SIGKILL');
      reject(new Error(`did not start within ${timeoutMs / 1000} s\n${output()}`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/**
 * Where a deployment's agent server reaches the platform's ingest API: the public URL, else this
 * process's own api (on a port the sandbox shares, as it shares loopback). Undefined in a process
 * without the api role and no PUBLIC_URL: its deployments' runs are then not traced.
 */
function platformUrl(deps: Deps): string | undefined {
  if (deps.config.publicUrl) return deps.config.publicUrl;
  if (!deps.config.roles.includes('api')) return undefined;
  // Before the api listens (deployments restored at start-up), its configured port says where it will.
  if (deps.apiUrl) return deps.apiUrl;
  const host = ['0.0.0.0', '::'].includes(deps.config.host) ? '127.0.0.1' : deps.config.host;
  return deps.config.port ? `http://${host.includes(':') ? `[${host}]` : host}:${deps.config.port}` : undefined;
}

/** A child's trace key (see the top of this file) and where to send its traces. */
type ChildTraces = { url: string; key: string; keyId: string; project: string };

/** What a child's environment is made from: the deployment's row and its workspace's organization. */
type DeploymentOfChild = ControlDeploymentRow & { organization_id: string };

type Child = { process: ChildProcess; output: () => string; log: ChildOutputLog };
/** A runtime's sandbox, and the revision folder it sees (read-only). */
type Sandboxing = { prepared: PreparedSandbox; revisionDir: string };

/**
 * Forks a runtime child. Its output goes to its revision's log (`log`, secrets masked) and the last
 * lines of it, masked too, are kept for the error when it fails to start.
 */
function spawnChild(env: Record<string, string>, cwd: string, log: ChildOutputLog, sandbox: Sandboxing): Child {
  // In the deployment's sandbox, which sees the revision's files read-only (its own folders are writable).
  // tsx keeps its cache in /tmp/tsx-<uid>, the sandbox's fresh /tmp: a link there leads it to the deployment's own.
  const uid = sandbox.prepared.files.uid ?? process.getuid?.();
  const links = uid === undefined ? [] : [{ target: deploymentCaches(sandbox.prepared.files).tsx, at: `/tmp/tsx-${uid}` }];
  // The database's socket folder, when its URL names one (agentServerDatabaseUrl), read-only: connecting to a socket is not writing to its folder.
  const socketDir = env.DATABASE_URL ? new URL(env.DATABASE_URL).searchParams.get('host') : null;
  const readOnly = socketDir ? [sandbox.revisionDir, socketDir] : [sandbox.revisionDir];
  const child = sandbox.prepared.sandbox.spawn(process.execPath, [CHILD_ENTRY], { readOnly, writable: [], links, cwd }, { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    output = (output + text).slice(-8000);
    log.append(text);
  };
  // A child that could not be started says so here (nextReport rejects); unheard, it would end the process.
  child.on('error', (error) => log.append(`${error.message}\n`));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.once('exit', () => void log.drain());
  return { process: child, output: () => log.mask(output), log };
}

/**
 * Starts a child (that may open connections to `platform`, where its traces go) and waits until it
 * loaded the graphs; rejects with the loader's error.
 */
async function spawnLoaded(env: Record<string, string>, cwd: string, log: ChildOutputLog, sandbox: Sandboxing, platform: URL | undefined): Promise<Child & { graphIds: string[] }> {
  const child = spawnChild(env, cwd, log, sandbox);
  if (platform) handPlatformConnections(child.process, platform);
  const report = await nextReport(child.process, child.output, START_TIMEOUT_MS);
  if (report.type !== 'loaded') {
    child.process.kill('SIGKILL');
    throw new Error(log.mask(report.type === 'failed' ? report.message : `unexpected report ${report.type}`));
  }
  return { ...child, graphIds: report.graphIds };
}

/**
 * Tells a loaded child to serve, on a listening socket made here (bound where the platform listens:
 * the child's own network reaches nothing of the host's, and so the address recorded for the gateway
 * is the launcher's, never one the child names); resolves with its `ready` report and that address.
 */
async function serveChild(child: Child, host: string, publicUrl: string | undefined): Promise<Extract<ChildReport, { type: 'ready' }> & { url: string }> {
  // From here on its output is the deploy's.
  await child.log.drain();
  child.log.type = 'deploy';
  const listener = createServer();
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(0, host, () => resolve());
  });
  const url = `http://${advertisedHost(host, publicUrl)}:${(listener.address() as AddressInfo).port}`;
  try {
    // The child has its own copy of the socket once sent; this process accepts nothing on it.
    await new Promise<void>((resolve, reject) => child.process.send('serve' satisfies ChildCommand, listener, (error) => (error ? reject(error) : resolve())));
  } finally {
    listener.close();
  }
  const report = await nextReport(child.process, child.output, START_TIMEOUT_MS);
  if (report.type !== 'ready') {
    child.process.kill('SIGKILL');
    throw new Error(child.log.mask(`${report.type === 'failed' ? report.message : `unexpected report ${report.type}`}\n${child.output()}`));
  }
  return { ...report, url };
}

/** Connections to the platform one child may be opening at once, and per minute. */
const PLATFORM_CONNECTIONS = { atOnce: 8, perMinute: 600 };

/**
 * Answers a child's `connect-platform`: a socket connected to the platform's address, handed over its
 * IPC channel (its own network does not reach the platform: sandbox-network.ts). What it may send
 * there is what any caller with its trace key may; how many it may open is bounded.
 */
function handPlatformConnections(child: ChildProcess, platform: URL): void {
  const port = Number(platform.port || (platform.protocol === 'https:' ? 443 : 80));
  const host = platform.hostname.replace(/^\[|\]$/g, '');
  let opening = 0;
  let window = { start: Date.now(), count: 0 };
  child.on('message', (report: ChildReport) => {
    if (report.type !== 'connect-platform' || !child.connected) return;
    const answer = (error?: string, socket?: Socket) => {
      if (!child.connected) return socket?.destroy();
      child.send({ type: 'platform-connection', id: report.id, ...(error ? { error } : {}) } satisfies ChildCommand, socket, () => socket?.destroy());
    };
    if (Date.now() - window.start > 60_000) window = { start: Date.now(), count: 0 };
    if (opening >= PLATFORM_CONNECTIONS.atOnce || window.count >= PLATFORM_CONNECTIONS.perMinute) return answer('too many connections to the platform at once');
    opening += 1;
    window.count += 1;
    const socket = connect({ host, port });
    socket.once('connect', () => {
      opening -= 1;
      answer(undefined, socket);
    });
    socket.once('error', (error) => {
      opening -= 1;
      answer(error.message);
    });
  });
}

async function stopChild(child: ChildProcess, handOver?: RuntimeStopOptions['handOver']): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  let released: Promise<void> | undefined;
  const onReport = (report: ChildReport) => {
    if (report.type === 'released') released ??= handOver?.released();
  };
  if (handOver) child.on('message', onReport);
  if (child.connected) child.send((handOver ? 'hand-over' : 'stop') satisfies ChildCommand);
  else child.kill('SIGTERM');
  // Its runtime drains first (AGENT_PLATFORM_RUN_DRAIN_SECONDS, 8 s by default), then stops; handing
  // over, it answers what it holds for a while longer.
  const timer = setTimeout(() => child.kill('SIGKILL'), 25_000 + (handOver ? HAND_OVER_FOLLOW_MS : 0));
  await exited;
  clearTimeout(timer);
  child.off('message', onReport);
  // A child that exited without saying so (killed, or an earlier version) has let go all the same.
  await (released ?? handOver?.released());
}

/** The child-process launcher (see the top of this file). */
export function childProcessLauncher(deps: Deps): RuntimeLauncher & Required<Pick<RuntimeLauncher, 'prepare'>> {
  // Each child gets a fresh login password and signing key: a restarted child does not reuse its predecessor's.
  // Its log never shows the values that the environment holds for it alone.
  const childEnvironment = async (spec: LaunchSpec, row: DeploymentOfChild, log: ChildOutputLog, sandbox: Sandboxing, traces: ChildTraces | undefined) => {
    const secrets = deploymentSecrets(deps, row);
    const cwd = dirname(spec.configPath);
    const keyId = `${spec.deploymentId}:${randomBytes(16).toString('hex')}`;
    const databaseUrl = await agentServerDatabaseUrl(deps, spec.deploymentId, sandbox.prepared.status.enabled);
    const signingKey = deps.secrets.derive(keyId).key.toString('base64');
    log.hide([...secrets.map((secret) => secret.value), decodeURIComponent(new URL(databaseUrl).password), signingKey, ...(traces ? [traces.key] : [])]);
    return {
      // The secrets first: nothing of the runtime's own configuration can be overridden by one.
      ...Object.fromEntries(secrets.map((secret) => [secret.name, secret.value])),
      ...baseEnvironment(),
      // HOME, TMPDIR and PATH of its sandbox: its own folders, never the platform's.
      ...sandbox.prepared.env,
      LOG_LEVEL: deps.config.logLevel,
      // The installation's keep-alive cadence (the proxies in front of it are the platform's).
      AGENT_PLATFORM_SSE_HEARTBEAT_SECONDS: String(deps.config.sseHeartbeatSeconds),
      // Its runtime's own graph-request server, which only its agent server, in the same process, calls:
      // on its network's loopback (the address it is reached at from outside is the launcher's socket).
      HOST: '127.0.0.1',
      ...(deps.config.publicUrl ? { PUBLIC_URL: deps.config.publicUrl } : {}),
      DATABASE_URL: databaseUrl,
      AGENT_PLATFORM_SECRET_KEY: signingKey,
      AGENT_PLATFORM_RUNTIME_KEY_ID: keyId,
      AGENT_PLATFORM_DATA_DIR: cwd,
      AGENT_PLATFORM_ROLES: 'runtime',
      // Its own (seeded from the platform's, agent-server-caches.ts): a cache shared with other deployments' code could be poisoned by one of them.
      AGENT_PLATFORM_COMPILE_CACHE: deploymentCaches(sandbox.prepared.files).v8,
      AGENT_PLATFORM_TSX_CACHE: deploymentCaches(sandbox.prepared.files).tsx,
      AGENT_PLATFORM_GRAPH_CONFIG: spec.configPath,
      AGENT_PLATFORM_DEPLOYMENT_ID: spec.deploymentId,
      AGENT_PLATFORM_DEPLOYMENT_NAME: row.name,
      AGENT_PLATFORM_WORKSPACE_ID: row.tenant_id,
      AGENT_PLATFORM_ORGANIZATION_ID: row.organization_id,
      ...(spec.revisionId ? { AGENT_PLATFORM_REVISION_ID: spec.revisionId } : {}),
      ...(traces ? { AGENT_PLATFORM_TRACES_URL: traces.url, AGENT_PLATFORM_TRACES_API_KEY: traces.key, AGENT_PLATFORM_TRACES_PROJECT: traces.project } : {}),
    };
  };

  /** Serves a loaded child, and keeps a runtime up: one that dies unasked is started again. */
  const launchLoaded = async (spec: LaunchSpec, row: DeploymentOfChild, loaded: Child & { keyId: string }, sandbox: Sandboxing): Promise<LaunchedRuntime> => {
    const { log } = loaded;
    const startChild = async (child?: Child & { keyId: string }) => {
      // A prepared child that died while it waited is replaced by a fresh one.
      const alive = child && child.process.exitCode === null && child.process.signalCode === null && child.process.connected;
      const running = alive ? child : await spawnLoadedWithKey(spec, row, log, sandbox);
      const report = await serveChild(running, deps.config.host, deps.config.publicUrl);
      const removeRow = await recordAgentServer(deps, { id: report.runtimeId, deploymentId: spec.deploymentId, url: report.url, revisionId: spec.revisionId, keyId: running.keyId });
      running.process.once('exit', () => void removeRow());
      return { ...running, report, removeRow };
    };

    let current = await startChild(loaded);
    let stopping = false;
    let restarts = 0;

    const superviseChild = (running: typeof current) => {
      running.process.once('exit', (code, signal) => {
        if (stopping) return;
        deps.logger.error({ deploymentId: spec.deploymentId, code, signal }, 'a deployment runtime died; starting it again');
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

    return {
      get url() {
        return current.report.url;
      },
      graphIds: current.report.graphIds,
      where: 'child process',
      pid: () => current.process.pid,
      async stop(options) {
        stopping = true;
        // Out of deployment_runtimes first: the gateway sends it nothing more, and a deploy waiting for it goes on.
        await current.removeRow();
        await stopChild(current.process, options?.handOver);
        sandbox.prepared.sandbox.release();
      },
    };
  };

  /** A fresh trace key for a child about to start, when the platform's URL is known (else its runs go untraced, as the deploy log says). */
  const childTraces = async (deploymentId: string, log: ChildOutputLog): Promise<ChildTraces | undefined> => {
    // AGENT_SERVER_TRACING=false turns the tracing of deployed revisions' runs off too.
    if (!deps.config.agentServerTracing.enabled) return undefined;
    const url = platformUrl(deps);
    if (!url) {
      log.append('Runs are not traced: set PUBLIC_URL, where deployments reach the platform, on the worker that launches them.\n');
      return undefined;
    }
    const key = await createDeploymentTraceKey(deps, deploymentId);
    return { url, key: key.key, keyId: key.id, project: key.project };
  };

  const spawnLoadedWithKey = async (spec: LaunchSpec, row: DeploymentOfChild, log: ChildOutputLog, sandbox: Sandboxing) => {
    const traces = await childTraces(spec.deploymentId, log);
    // Once the child has exited (its last traces sent), its key writes nothing more.
    const revokeTraceKey = () =>
      traces &&
      void revokeDeploymentTraceKeys(deps, spec.deploymentId, traces.keyId).catch((error: unknown) =>
        deps.logger.warn({ err: error, deploymentId: spec.deploymentId }, "could not revoke a stopped runtime's trace key"),
      );
    try {
      const [env] = await Promise.all([childEnvironment(spec, row, log, sandbox, traces), seedDeploymentCaches(deps, sandbox.prepared)]);
      const loaded = await spawnLoaded(env, dirname(spec.configPath), log, sandbox, traces && new URL(traces.url));
      if (loaded.process.exitCode !== null || loaded.process.signalCode !== null) revokeTraceKey();
      else loaded.process.once('exit', revokeTraceKey);
      return { ...loaded, keyId: env.AGENT_PLATFORM_RUNTIME_KEY_ID };
    } catch (error) {
      revokeTraceKey();
      throw error;
    }
  };

  const prepare = async (spec: LaunchSpec): Promise<PreparedRuntime> => {
    const row = await findControlDeployment(deps.db, spec.deploymentId);
    const home = await findDeployment(deps.db, spec.deploymentId);
    if (!row || !home) throw new Error(`Deployment ${spec.deploymentId} not found`);
    const deployment: DeploymentOfChild = { ...row, organization_id: home.organization_id };
    const sandbox: Sandboxing = {
      prepared: sandboxFor(deps, row),
      revisionDir: spec.revisionId ? revisionDirectory(deps.config.dataDir, spec.revisionId) : dirname(spec.configPath),
    };
    // One log (and one output budget) per revision, restarts of its runtime included.
    const log = new ChildOutputLog((type, message) => (spec.revisionId ? logRevision(deps, spec.revisionId, type, message) : Promise.resolve()));
    const loaded = await spawnLoadedWithKey(spec, deployment, log, sandbox);
    return {
      graphIds: loaded.graphIds,
      launch: () => launchLoaded(spec, deployment, loaded, sandbox),
      discard: () => stopChild(loaded.process),
    };
  };

  return {
    prepare,
    async launch(spec) {
      return (await prepare(spec)).launch();
    },
  };
}
