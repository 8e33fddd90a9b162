// `admin backup <dir>` and `admin restore <dir>` for an installation on the embedded database: the
// server's data (the platform's database and every deployment's, copied at one moment), the key
// material without which that copy is unreadable (the secret key that seals deployments' secrets,
// the logins' passwords), and deployments' files (each revision's build, each deployment's home). The
// manifest is written last: a folder without one is an interrupted backup, which restore refuses.
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { SECRET_KEY_FILE } from '../../crypto.js';
import { copyRunningServer } from '../../database/cluster-backup.js';
import { EMBEDDED_KEY_FILES, handDataDirectoryToServer, hasEmbeddedData, withEmbeddedSuperuser } from '../../database/embedded-postgres.js';
import { AppError } from '../../errors.js';
import { archivedFolderSchema, archiveDeploymentFiles, restoreDeploymentFiles } from './files-backup.js';

const MANIFEST_FILE = 'agent-platform-backup.json';
const KEY_FILES = [SECRET_KEY_FILE, ...EMBEDDED_KEY_FILES];

const manifestSchema = z.object({
  format: z.literal('agent-platform-backup'),
  version: z.literal(1),
  createdAt: z.string(),
  databases: z.array(z.object({ name: z.string(), bytes: z.number() })),
  keyFiles: z.array(z.enum(KEY_FILES as [string, ...string[]])),
  folders: z.array(archivedFolderSchema),
});
type Manifest = z.infer<typeof manifestSchema>;

type Progress = (line: string) => void;

const EXTERNAL_DATABASE =
  'with DATABASE_URL the databases are on your PostgreSQL server: back them up with its own tools (README, "Backup and restore")';

function assertEmbedded(config: Config): void {
  if (config.databaseUrl) throw AppError.badRequest(EXTERNAL_DATABASE);
  if (config.adminDatabaseUrl) {
    throw AppError.badRequest("deployments' databases are on the server of AGENT_PLATFORM_ADMIN_DATABASE_URL, which a copy of the embedded server would leave out: back both servers up with PostgreSQL's own tools (README, \"Backup and restore\")");
  }
}

/**
 * Backs the installation at `config.dataDir` up into `target` (a new or empty folder), while it runs
 * or not. Reports each database and each deployment's folder as it is copied. Throws BAD_REQUEST for
 * an external database or a folder that is not empty.
 */
export async function backupInstallation(config: Config, logger: Logger, target: string, progress: Progress): Promise<Manifest> {
  assertEmbedded(config);
  const dir = resolve(target);
  if (existsSync(dir) && readdirSync(dir).length > 0) throw AppError.badRequest(`${dir} is not empty: back up into a new folder`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });

  const started = Date.now();
  // The databases first: a revision they list then has its build among the files copied after.
  const databases = await withEmbeddedSuperuser(config.dataDir, logger, ({ superuserUrl, databaseDir }) => copyRunningServer(superuserUrl, databaseDir, join(dir, 'postgres')));
  for (const database of databases) progress(`database ${database.name}: ${megabytes(database.bytes)}`);

  mkdirSync(join(dir, 'keys'), { mode: 0o700 });
  const keyFiles = KEY_FILES.filter((name) => existsSync(join(config.dataDir, name)));
  for (const name of keyFiles) copyFileSync(join(config.dataDir, name), join(dir, 'keys', name));
  progress(`key material: ${keyFiles.join(', ')} (keep this backup as secret as the installation)`);

  const folders = await archiveDeploymentFiles(config.dataDir, dir, progress);
  const manifest: Manifest = { format: 'agent-platform-backup', version: 1, createdAt: new Date().toISOString(), databases, keyFiles, folders };
  writeFileSync(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  progress(`backup complete in ${((Date.now() - started) / 1000).toFixed(1)} s: ${dir}`);
  return manifest;
}

/**
 * Restores the backup in `source` into `config.dataDir`, which must hold no database yet, and starts
 * its server once to bring the copy to a consistent state, checking that every database of the backup
 * is there. Throws BAD_REQUEST for an incomplete backup, a data directory in use or an external database.
 */
export async function restoreInstallation(config: Config, logger: Logger, source: string, progress: Progress): Promise<Manifest> {
  assertEmbedded(config);
  const from = resolve(source);
  const manifestPath = join(from, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw AppError.badRequest(`${from} has no ${MANIFEST_FILE}: not a backup, or one that did not finish`);
  const parsed = manifestSchema.safeParse(JSON.parse(readFileSync(manifestPath, 'utf8')));
  if (!parsed.success) throw AppError.badRequest(`${manifestPath} is not a backup manifest this version reads: ${parsed.error.issues[0]?.message}`);
  const manifest = parsed.data;
  if (hasEmbeddedData(config.dataDir)) throw AppError.badRequest(`${config.dataDir} already holds a database: restore into an empty data directory`);

  const started = Date.now();
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  for (const name of manifest.keyFiles) {
    copyFileSync(join(from, 'keys', name), join(config.dataDir, name));
  }
  const databaseDir = join(config.dataDir, 'postgres');
  cpSync(join(from, 'postgres'), databaseDir, { recursive: true });
  handDataDirectoryToServer(databaseDir);
  // Started once here: it replays the WAL copied with it, up to the backup's end, and is then consistent.
  const present = await withEmbeddedSuperuser(config.dataDir, logger, ({ superuserUrl }) => databaseNames(superuserUrl));
  for (const database of manifest.databases) {
    if (!present.has(database.name)) throw new Error(`database ${database.name} of the backup is missing after the restore`);
    progress(`database ${database.name}: restored`);
  }
  await restoreDeploymentFiles(config.dataDir, from, manifest.folders, progress);
  progress(`restore complete in ${((Date.now() - started) / 1000).toFixed(1)} s: start the platform with this data directory`);
  return manifest;
}

async function databaseNames(superuserUrl: string): Promise<Set<string>> {
  const client = new pg.Client({ connectionString: superuserUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database');
    return new Set(rows.map((row) => row.datname));
  } finally {
    await client.end();
  }
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
