// An online, physical copy of a whole PostgreSQL server (its data directory), as pg_basebackup makes
// one, for the embedded server: the platform's database and every deployment's are copied at one
// moment, so they agree with each other by construction. pg_basebackup itself cannot be used: the
// Debian one is older than the embedded server, and a client may not be older than its server.
//
// PostgreSQL's low-level API does it while the server runs: pg_backup_start makes a checkpoint and
// forces full-page writes, the files are copied while they change, pg_backup_stop returns the
// backup_label that tells the copy, when started, which WAL to replay, and the WAL written meanwhile
// (held by a temporary replication slot, so no checkpoint recycles it) is copied last. Starting the
// copy replays that WAL up to the backup's end: a consistent server.
import { copyFile, lstat, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';

/** Folders whose contents a copy of a server never needs (PostgreSQL's own list, as pg_basebackup skips them); kept empty. */
const EMPTIED_FOLDERS = new Set(['pg_wal', 'pg_replslot', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_stat_tmp', 'pg_subtrans']);
/** Files of the running server, or of an earlier backup, that a copy must not have. */
const SKIPPED_FILES = new Set(['postmaster.pid', 'postmaster.opts', 'backup_label', 'tablespace_map', 'backup_label.old', 'pg_internal.init']);
/** Written last: a copy whose control file is older than its other files is what crash recovery expects. */
const CONTROL_FILE = join('global', 'pg_control');

export type DatabaseCopied = { name: string; bytes: number };

/**
 * Copies the running server's data directory `databaseDir` into `target` (made, must not exist), as
 * the superuser at `superuserUrl`. Reports each database of the copy with its size. Throws, leaving a
 * partial `target`, when the server refuses (another backup running, too few replication slots).
 */
export async function copyRunningServer(superuserUrl: string, databaseDir: string, target: string): Promise<DatabaseCopied[]> {
  // One session holds the backup and the slot: both end with it, whatever happens to this process.
  const client = new pg.Client({ connectionString: superuserUrl, application_name: 'agent-platform backup' });
  await client.connect();
  try {
    const { rows: databases } = await client.query<{ name: string; bytes: string }>(
      'SELECT datname AS name, pg_database_size(datname)::text AS bytes FROM pg_database WHERE datallowconn ORDER BY datname',
    );
    await client.query('SELECT pg_create_physical_replication_slot($1, true, true)', [`agent_platform_backup_${process.pid}`]);
    await client.query('SELECT pg_backup_start($1, true)', [`agent-platform backup ${new Date().toISOString()}`]);
    await mkdir(target, { recursive: false, mode: 0o700 });
    await copyTree(databaseDir, target, '');
    const { rows } = await client.query<{ labelfile: string; spcmapfile: string | null }>('SELECT labelfile, spcmapfile FROM pg_backup_stop(false)');
    await writeFile(join(target, 'backup_label'), rows[0]!.labelfile, { mode: 0o600 });
    if (rows[0]!.spcmapfile) await writeFile(join(target, 'tablespace_map'), rows[0]!.spcmapfile, { mode: 0o600 });
    // The WAL from the backup's start to its end (and whatever followed: replay stops where it ends).
    await copyTree(join(databaseDir, 'pg_wal'), join(target, 'pg_wal'), '', { wal: true });
    await copyFile(join(databaseDir, CONTROL_FILE), join(target, CONTROL_FILE));
    return databases.map((row) => ({ name: row.name, bytes: Number(row.bytes) }));
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Copies `from` into `to` (made), skipping what a copy must not have; files removed meanwhile are skipped (the WAL brings them back). */
async function copyTree(from: string, to: string, relative: string, options: { wal?: boolean } = {}): Promise<void> {
  await mkdir(to, { recursive: true, mode: 0o700 });
  const entries = await readdir(from, { withFileTypes: true }).catch(ignoreVanished([]));
  for (const entry of entries) {
    const path = join(relative, entry.name);
    const source = join(from, entry.name);
    if (entry.isDirectory()) {
      if (!options.wal && EMPTIED_FOLDERS.has(path)) await mkdir(join(to, entry.name), { mode: 0o700 });
      else if (!entry.name.startsWith('pgsql_tmp')) await copyTree(source, join(to, entry.name), path, options);
      continue;
    }
    if (!entry.isFile() || SKIPPED_FILES.has(entry.name) || path === CONTROL_FILE) continue;
    // A temporary file of the server's (an unfinished WAL segment's), or one it renames as it goes.
    if (options.wal && entry.name.endsWith('.tmp')) continue;
    const stat = await lstat(source).catch(ignoreVanished(undefined));
    if (!stat?.isFile()) continue;
    await copyFile(source, join(to, entry.name)).catch(ignoreVanished(undefined));
  }
}

const ignoreVanished = <T>(value: T) => (error: unknown): T => {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return value;
  throw error;
};
