// Deployments' files in a backup: each revision's build (`revisions/<id>`: its checkout and installed
// packages) and each deployment's home (`deployments/<id>/home`). Those folders are written by
// deployed code, so the platform never reads or writes inside them as itself: what a deployment's
// user owns is archived and restored by `tar` running as that user, which can reach nothing a
// deployment could not (a link it planted to a file of the host's is archived as a link, never
// followed; a file it cannot read is not in its archive). What the platform owns there (the folders
// themselves, their files of the platform's) is archived by the platform.
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, lchownSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';

/** The folders of the data directory that hold deployments' files, one folder per revision or deployment below them. */
const FILE_AREAS = ['revisions', 'deployments'] as const;
/** Remade by the platform when missing (compile caches), so not worth a backup's space. */
const REMADE = new Set(['deployments/cache']);

export const archivedFolderSchema = z.object({
  /** `revisions/<id>` or `deployments/<id>`. */
  folder: z.string().regex(/^(revisions|deployments)\/[\w-]+$/),
  /** Its permission bits: its deployment's user passes through it by name. */
  mode: z.number().int().min(0).max(0o777),
  /** The archive of what the platform owns in it. */
  platformArchive: z.string().regex(/^files\/\d+\.tar$/),
  /** Each folder in it that a deployment's user owns, archived as that user. */
  owned: z.array(z.object({ name: z.string().regex(/^[\w.-]+$/).refine((name) => name !== '.' && name !== '..'), uid: z.number().int().positive(), mode: z.number().int().min(0).max(0o7777), archive: z.string().regex(/^files\/\d+\.tar$/) })),
});
export type ArchivedFolder = z.infer<typeof archivedFolderSchema>;

/** Archives every revision's and deployment's folder of `dataDir` into `<target>/files/`; calls `progress` per folder. */
export async function archiveDeploymentFiles(dataDir: string, target: string, progress: (line: string) => void): Promise<ArchivedFolder[]> {
  mkdirSync(join(target, 'files'), { mode: 0o700 });
  const me = process.getuid?.() ?? 0;
  const archived: ArchivedFolder[] = [];
  let next = 0;
  const archivePath = () => `files/${next++}.tar`;
  for (const area of FILE_AREAS) {
    const areaDir = resolve(dataDir, area);
    for (const id of listFolder(areaDir)) {
      const folder = join(areaDir, id);
      if (!lstatSync(folder).isDirectory()) continue;
      const entry: ArchivedFolder = { folder: `${area}/${id}`, mode: lstatSync(folder).mode & 0o777, platformArchive: archivePath(), owned: [] };
      const platformNames: string[] = [];
      for (const name of listFolder(folder)) {
        if (REMADE.has(`${area}/${name}`)) continue;
        const stat = lstatSync(join(folder, name));
        if (stat.uid === me) platformNames.push(name);
        // Only the platform makes entries here: another user's is one of the folders it made for that user.
        else if (stat.isDirectory()) {
          const archive = archivePath();
          await tar(['-C', join(folder, name), '-cf', '-', '.'], { uid: stat.uid, archive: join(target, archive), direction: 'out' });
          entry.owned.push({ name, uid: stat.uid, mode: stat.mode & 0o7777, archive });
        }
      }
      // (tar refuses to make an empty archive from no names, but not from an empty list of them.)
      const names = platformNames.length ? ['--', ...platformNames] : ['--files-from=/dev/null'];
      await tar(['-C', folder, '-cf', '-', ...names], { uid: me, archive: join(target, entry.platformArchive), direction: 'out' });
      archived.push(entry);
      progress(`files of ${entry.folder}`);
    }
  }
  return archived;
}

/** Puts back the folders `archiveDeploymentFiles` archived, from `source`, into `dataDir`; each user's as that user. */
export async function restoreDeploymentFiles(dataDir: string, source: string, folders: ArchivedFolder[], progress: (line: string) => void): Promise<void> {
  for (const entry of folders) {
    const folder = resolve(dataDir, entry.folder);
    // Its area is traversable by all and listable by none, as the platform makes it.
    mkdirSync(dirname(folder), { recursive: true, mode: 0o711 });
    mkdirSync(folder, { recursive: true, mode: entry.mode });
    chmodSync(folder, entry.mode);
    await tar(['-C', folder, '-xpf', '-'], { uid: process.getuid?.() ?? 0, archive: join(source, entry.platformArchive), direction: 'in' });
    for (const owned of entry.owned) {
      const dir = join(folder, owned.name);
      mkdirSync(dir, { mode: 0o700 });
      lchownSync(dir, owned.uid, owned.uid);
      await tar(['-C', dir, '-xpf', '-'], { uid: owned.uid, archive: join(source, owned.archive), direction: 'in' });
    }
    progress(`files of ${entry.folder}`);
  }
}

function listFolder(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * Runs GNU tar as `uid`, its archive on stdout (`out`) or stdin (`in`) through a file the platform
 * opened. Exit status 1 ("a file changed as it was read", the deployment running meanwhile) is not a
 * failure; anything else is, with tar's message.
 */
function tar(args: string[], options: { uid: number; archive: string; direction: 'in' | 'out' }): Promise<void> {
  const fd = openSync(options.archive, options.direction === 'out' ? 'wx' : 'r', 0o600);
  const asUser = options.uid === (process.getuid?.() ?? 0) ? {} : { uid: options.uid, gid: options.uid };
  return new Promise<void>((resolvePromise, reject) => {
    const child = spawn('tar', ['--numeric-owner', ...args], {
      cwd: '/',
      ...asUser,
      stdio: options.direction === 'out' ? ['ignore', fd, 'pipe'] : [fd, 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr = `${stderr}${chunk}`.slice(-4096)));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0 || (code === 1 && options.direction === 'out')) resolvePromise();
      else reject(new Error(`tar ${args.join(' ')} (as uid ${options.uid}) exited ${code}: ${stderr.trim()}`));
    });
  }).finally(() => closeSync(fd));
}
