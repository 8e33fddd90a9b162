// A revision's dependencies, installed as its repository says: with the package manager its lockfile
// names (yarn classic or berry, pnpm, npm), at the version its `packageManager` field asks, frozen
// (the lockfile is the truth; a resolution that would change it fails the build), as the hosted
// platform's build does. npm resolves afresh only where there is no lockfile. Each folder that
// langgraph.json's `dependencies` names is installed at its nearest lockfile, up to the repository's
// root (a workspace's root, in a monorepo).
//
// Everything the repository's packages run (install scripts) runs inside the deployment's sandbox, with
// the package manager fetched from the npm registry by npm (`npm exec --package=…`: this Node ships
// no corepack), cached in the deployment's own home. What the platform reads of the checkout itself
// (package.json, which lockfile) it reads refusing links, bounded.
//
// A redeploy whose install inputs are unchanged (the lockfile, every package.json and package-manager
// config under the install's folder, the package manager and its version: as committed, read by git)
// takes the previous revision's installed packages as hard links, made by the deployment's own OS user
// (their files are its own already), instead of installing again: writing ~30k files is what an install
// spends its time on, and a link costs a fraction of that.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { AppError } from '../../errors.js';
import type { GraphConfig } from '../../contracts/graph-config.js';
import { ChildOutputLog } from './child-output.js';
import { type PreparedSandbox, writeFileOfPlatform } from './sandbox.js';

export type BuildLog = (message: string) => Promise<void>;

/** Lockfiles, in the order a folder holding several is read (the hosted build's order). */
const LOCKFILES = [
  { file: 'pnpm-lock.yaml', manager: 'pnpm' },
  { file: 'yarn.lock', manager: 'yarn' },
  { file: 'package-lock.json', manager: 'npm' },
  { file: 'npm-shrinkwrap.json', manager: 'npm' },
] as const;
const BUN_LOCKFILES = ['bun.lockb', 'bun.lock'];
/** What an install's result depends on besides the lockfile, as git pathspecs under its folder. */
const INSTALL_INPUTS = [':(glob)**/package.json', ':(glob)**/.npmrc', ':(glob)**/.yarnrc', ':(glob)**/.yarnrc.yml', ':(glob)**/pnpm-workspace.yaml', ':(glob)**/.pnpmfile.cjs', ':(glob).yarn/patches/**', ':(glob)patches/**'];
const INSTALL_TIMEOUT_MS = 15 * 60_000;
/** Where a revision records what each of its installs was made from (a file of the platform's, in its folder). */
const INSTALL_KEYS_FILE = 'install-keys.json';

type Manager = 'npm' | 'yarn' | 'yarn-berry' | 'pnpm';

/** One install: in `folder` (absolute), with `command` (run in the sandbox), made from the inputs `key` names. */
export type InstallPlan = { folder: string; manager: Manager; lockfile?: string; describe: string; command: string; args: string[]; env: Record<string, string> };

/**
 * A file of the checkout, read as the platform (root, maybe) may read what a repository holds: never
 * through a link, never a named pipe or device, at most `limit` bytes. Undefined when it is not a
 * regular file.
 */
function readCheckoutFile(path: string, limit: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    const buffer = Buffer.alloc(Math.min(stat.size, limit));
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** `packageManager` of a package.json (`yarn@4.9.1+sha512.…` → yarn, 4.9.1), if it names one. */
function packageManagerOf(folder: string): { name: string; version: string } | undefined {
  try {
    const declared = (JSON.parse(readCheckoutFile(join(folder, 'package.json'), 1024 * 1024) ?? '{}') as { packageManager?: unknown }).packageManager;
    const match = typeof declared === 'string' ? /^(npm|yarn|pnpm)@(\d+\.\d+\.\d+[\w.-]*)/.exec(declared) : null;
    return match ? { name: match[1]!, version: match[2]! } : undefined;
  } catch {
    return undefined;
  }
}

/** The nearest folder from `start` up to `repo` holding a lockfile, and which. */
function nearestLockfile(repo: string, start: string): { folder: string; file: string; manager: 'npm' | 'yarn' | 'pnpm' } | undefined {
  for (let folder = start; ; folder = dirname(folder)) {
    const found = LOCKFILES.find((lockfile) => readCheckoutFile(join(folder, lockfile.file), 1) !== undefined);
    if (found) return { folder, file: found.file, manager: found.manager };
    const bun = BUN_LOCKFILES.find((name) => existsSync(join(folder, name)));
    if (bun) throw AppError.badRequest(`${relative(repo, join(folder, bun))}: bun's lockfile is not supported here; commit a package-lock.json, yarn.lock or pnpm-lock.yaml`);
    if (folder === repo || relative(repo, folder).startsWith('..')) return undefined;
  }
}

/** Runs `bin` of the npm package `pkg` (fetched by npm into the deployment's own cache). */
const throughNpmExec = (pkg: string, bin: string, args: string[]) => ({ command: 'npm', args: ['exec', '--yes', `--package=${pkg}`, '--', bin, ...args] });

/**
 * How `dependency` (a folder langgraph.json names) gets its packages: at its nearest lockfile with
 * the package manager that wrote it; else `npm install` where it has a package.json; else nothing.
 */
function planFor(repo: string, dependency: string): InstallPlan | undefined {
  const locked = nearestLockfile(repo, dependency);
  if (!locked) {
    if (readCheckoutFile(join(dependency, 'package.json'), 1) === undefined) return undefined;
    return { folder: dependency, manager: 'npm', describe: 'npm install (no lockfile)', command: 'npm', args: ['install', '--no-audit', '--no-fund'], env: {} };
  }
  const { folder, file } = locked;
  const declared = packageManagerOf(folder);
  // The version `packageManager` asks, when it names the lockfile's package manager (the lockfile wins otherwise).
  const asked = declared?.name === locked.manager ? declared.version : undefined;
  if (locked.manager === 'npm') return { folder, manager: 'npm', lockfile: file, describe: `npm ci (${file})`, command: 'npm', args: ['ci', '--no-audit', '--no-fund'], env: {} };
  if (locked.manager === 'pnpm') {
    // pnpm's lockfile format names the pnpm that wrote it: 9.0 (pnpm 9 and 10), 6.x (8), 5.x (7).
    const format = /^lockfileVersion:\s*'?(\d+)/m.exec(readCheckoutFile(join(folder, file), 4096) ?? '')?.[1];
    const version = asked ?? (format === '5' ? '7' : format === '6' ? '8' : '10');
    return { folder, manager: 'pnpm', lockfile: file, describe: `pnpm@${version} install --frozen-lockfile`, ...throughNpmExec(`pnpm@${version}`, 'pnpm', ['install', '--frozen-lockfile', '--reporter=append-only']), env: {} };
  }
  // Yarn 2+ ("berry") writes a `__metadata` block; yarn 1 does not.
  const berry = (readCheckoutFile(join(folder, file), 64 * 1024) ?? '').includes('__metadata:');
  if (berry) {
    const version = asked && !asked.startsWith('1.') ? asked : '4';
    return {
      folder,
      manager: 'yarn-berry',
      lockfile: file,
      describe: `yarn@${version} install --immutable`,
      ...throughNpmExec(`@yarnpkg/cli-dist@${version}`, 'yarn', ['install', '--immutable']),
      // node_modules whatever the repository's linker (Plug'n'Play's loader is not the runtime's); the lockfile stays as it is.
      env: { YARN_NODE_LINKER: 'node-modules', YARN_ENABLE_TELEMETRY: '0', YARN_ENABLE_PROGRESS_BARS: 'false', YARN_ENABLE_GLOBAL_CACHE: 'false' },
    };
  }
  const version = asked?.startsWith('1.') ? asked : '1.22.22';
  return {
    folder,
    manager: 'yarn',
    lockfile: file,
    describe: `yarn@${version} install --frozen-lockfile`,
    ...throughNpmExec(`yarn@${version}`, 'yarn', ['install', '--frozen-lockfile', '--non-interactive', '--no-progress']),
    env: {},
  };
}

/** The installs a config needs, one per folder (several dependencies of one workspace install once). */
function installPlans(repo: string, config: Pick<GraphConfig, 'dependencies'>): InstallPlan[] {
  const plans = new Map<string, InstallPlan>();
  for (const dependency of config.dependencies) {
    const plan = planFor(repo, dependency);
    if (plan && !plans.has(plan.folder)) plans.set(plan.folder, plan);
  }
  return [...plans.values()];
}

/** Runs a command as the deployment's own OS user (not in its sandbox: it touches only that user's files); resolves with its output. */
function asDeploymentUser(command: string, args: string[], options: { cwd: string; uid?: number; env: NodeJS.ProcessEnv }): Promise<string> {
  return new Promise((resolvePromise, reject) =>
    execFile(command, args, { cwd: options.cwd, uid: options.uid, gid: options.uid, env: options.env, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} failed: ${(stderr || error.message).trim().slice(-2000)}`)) : resolvePromise(stdout),
    ),
  );
}

/**
 * What an install is made from: its package manager and version, and the committed lockfile, package
 * manifests and package-manager configs under its folder (their blob ids, as git lists them, as the
 * deployment's user: nothing of the repository has run yet).
 */
async function installKey(plan: InstallPlan, uid: number | undefined, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (!plan.lockfile) return undefined;
  const listed = await asDeploymentUser('git', ['-c', 'core.quotePath=false', 'ls-files', '--stage', '--', plan.lockfile, ...INSTALL_INPUTS], { cwd: plan.folder, uid, env }).catch(() => undefined);
  if (!listed || !listed.includes(plan.lockfile)) return undefined;
  return createHash('sha256').update(`${plan.describe}\n${process.versions.node}\n${listed}`).digest('hex');
}

/** The installs a revision recorded (relative folder → key), from its folder (the platform's). */
function recordedKeys(revisionDir: string): Record<string, string> {
  try {
    return JSON.parse(readCheckoutFile(join(revisionDir, INSTALL_KEYS_FILE), 64 * 1024) ?? '{}') as Record<string, string>;
  } catch {
    return {};
  }
}

/**
 * Hard links of the previous revision's installed packages (every node_modules folder under the
 * install's folder, not nested in another) into the new checkout, made as the deployment's user.
 */
async function linkInstalled(previousFolder: string, folder: string, uid: number | undefined, env: NodeJS.ProcessEnv): Promise<number> {
  const found = await asDeploymentUser('find', ['.', '-name', 'node_modules', '-type', 'd', '-prune', '-print'], { cwd: previousFolder, uid, env });
  const folders = found.split('\n').filter(Boolean);
  for (const modules of folders) {
    await asDeploymentUser('cp', ['-al', '--', join(previousFolder, modules), join(folder, modules)], { cwd: folder, uid, env });
  }
  return folders.length;
}

/**
 * Installs what the config's dependency folders need, each at its nearest lockfile with its package
 * manager (installPlans), in the deployment's sandbox, streaming the install's output into the build
 * log; or, where `previous` (the deployment's revision serving now) installed from the same inputs,
 * takes its packages (linkInstalled). Records each install's inputs for the next revision. Throws
 * with the install's last output when it fails.
 */
export async function installDependencies(
  revision: { dir: string; repo: string },
  config: Pick<GraphConfig, 'dependencies'>,
  log: BuildLog,
  sandbox: PreparedSandbox,
  environment: NodeJS.ProcessEnv,
  previous?: { dir: string; repo: string },
): Promise<InstallPlan[]> {
  const plans = installPlans(revision.repo, config);
  const uid = sandbox.files.uid;
  const keys: Record<string, string> = {};
  const earlier = previous ? recordedKeys(previous.dir) : {};
  for (const plan of plans) {
    const where = relative(revision.repo, plan.folder) || '.';
    const key = await installKey(plan, uid, environment);
    const previousFolder = previous && resolve(previous.repo, where);
    const started = Date.now();
    if (key && previousFolder && earlier[where] === key && existsSync(join(previousFolder, 'node_modules'))) {
      const linked = await linkInstalled(previousFolder, plan.folder, uid, environment).catch(async (error: unknown) => {
        await log(`Could not take the previous revision's packages (${(error as Error).message}): installing`);
        return undefined;
      });
      if (linked !== undefined) {
        keys[where] = key;
        await log(`${where}: lockfile and package manager unchanged since the revision serving now: its packages taken as they are (${linked} node_modules folders, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
        continue;
      }
    }
    await log(`${plan.describe} in ${where}`);
    const output = new ChildOutputLog((_type, message) => log(message));
    try {
      await sandbox.sandbox.run(
        plan.command,
        plan.args,
        { readOnly: [revision.dir], writable: [revision.repo], cwd: plan.folder },
        { env: { ...environment, ...sandbox.env, ...plan.env }, timeoutMs: INSTALL_TIMEOUT_MS, label: plan.describe, onOutput: (text) => output.append(text) },
      );
    } finally {
      await output.drain();
    }
    await log(`${plan.describe} took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    if (key) keys[where] = key;
  }
  writeFileOfPlatform(join(revision.dir, INSTALL_KEYS_FILE), JSON.stringify(keys));
  return plans;
}
