// The build's work on a revision's source: clone the repository at its ref, find the graph config
// inside it, install the repository's dependencies. Every command runs through execFile (argv, never
// a shell) with an environment of its own: none of the platform's secrets reach git, npm or the
// scripts npm runs.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, lchownSync, mkdirSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { makeTraversable } from '../../database/traversable.js';
import { AppError } from '../../errors.js';
import { type GraphConfig, readGraphConfig } from '../../contracts/graph-config.js';
import { installDependencies } from './dependency-install.js';
import { type PreparedSandbox, writeFileOfPlatform } from './sandbox.js';

/** The platform's own packages: a repository without package.json imports from these. */
const PLATFORM_NODE_MODULES = fileURLToPath(new URL('../../../node_modules', import.meta.url));

export type { BuildLog } from './dependency-install.js';
import type { BuildLog } from './dependency-install.js';

/** A git host integration's access token, for clones from that host over https. */
export type GitCredentials = { host: string; token: string };

/**
 * The token as an `Authorization` header for https requests to the integration's host only, passed
 * through git's GIT_CONFIG_* environment (never argv, where other users' `ps` would see it, and never
 * written to the clone's config).
 */
function credentialEnvironment(repoUrl: string, credentials: GitCredentials | undefined): NodeJS.ProcessEnv {
  if (!credentials) return {};
  const host = credentials.host.replace(/^https?:\/\//, '').replace(/\/+$/, '').toLowerCase();
  let url: URL;
  try {
    url = new URL(repoUrl);
  } catch {
    return {};
  }
  if (url.protocol !== 'https:' || url.host.toLowerCase() !== host) return {};
  const basic = Buffer.from(`x-access-token:${credentials.token}`).toString('base64');
  return { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: `http.https://${host}/.extraHeader`, GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}` };
}

/** Every git command's options: no `ext::` transport (a url that runs a command). */
const GIT_OPTIONS = ['-c', 'protocol.ext.allow=never'];

/**
 * Git's global config in `home` for a command run as the deployment's own user: a local repository
 * owned by another OS user may be read (git refuses it otherwise, and reads `safe.directory` only from
 * global or system config; a clone's source side ignores `-c`). What that repository's config could
 * run, runs as that user, with no more reach than the deployment's own code. `home` is a folder of the
 * platform's that the deployment cannot write: written in one of the deployment's own, a link in place
 * of the file would have the platform, as root, write (and chown) wherever it points.
 */
function gitHomeFor(home: string, uid: number | undefined): void {
  if (uid === undefined) return;
  writeFileOfPlatform(join(home, '.gitconfig'), '[safe]\n\tdirectory = *\n');
}

/** Where a revision's build lives: `<data dir>/revisions/<revision id>/`, the repository in `repo/`. */
export const revisionDirectory = (dataDir: string, revisionId: string) => resolve(dataDir, 'revisions', revisionId);

/** The revisions with a checkout on this machine (their ids). */
export const revisionsOnDisk = (dataDir: string): string[] => (existsSync(resolve(dataDir, 'revisions')) ? readdirSync(resolve(dataDir, 'revisions')) : []);

/** Removes a revision's checkout and dependencies from this machine; returns whether there were any. */
export async function removeRevisionDirectory(dataDir: string, revisionId: string): Promise<boolean> {
  const dir = revisionDirectory(dataDir, revisionId);
  if (!existsSync(dir)) return false;
  await rm(dir, { recursive: true, force: true });
  return true;
}

function commandEnvironment(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { HOME: home, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  // The machine's network settings and trust anchors (a proxy's CA, say) but no credentials: without
  // NODE_EXTRA_CA_CERTS behind a TLS-inspecting proxy, npm retried for minutes and then failed.
  for (const name of [
    'PATH', 'TZ', 'LANG', 'TMPDIR', 'npm_config_registry', 'npm_config_cache', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY',
    'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'GIT_SSL_CAINFO', 'npm_config_cafile',
  ]) {
    if (process.env[name]) env[name] = process.env[name];
  }
  return env;
}

/**
 * Runs a command (in a deployment's sandbox when given one); rejects with its output (last 4 KB) when
 * it fails or takes longer than `timeoutMs`.
 */
function run(
  command: string,
  args: string[],
  options: {
    cwd: string;
    home: string;
    timeoutMs: number;
    label: string;
    env?: NodeJS.ProcessEnv;
    sandbox?: { prepared: PreparedSandbox; readOnly: string[]; writable: string[] };
    /** The OS user to run as (the deployment's, when the platform is root). */
    uid?: number;
  },
): Promise<string> {
  const env = { ...commandEnvironment(options.home), ...options.sandbox?.prepared.env, ...options.env };
  if (options.sandbox) {
    const { prepared, readOnly, writable } = options.sandbox;
    return prepared.sandbox.run(command, args, { readOnly, writable, cwd: options.cwd }, { env, timeoutMs: options.timeoutMs, label: options.label });
  }
  return new Promise((resolvePromise, reject) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env, uid: options.uid, gid: options.uid, timeout: options.timeoutMs, maxBuffer: 16 * 1024 * 1024, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`.trim();
        if (error) reject(new Error(`${options.label} failed: ${(output || error.message).slice(-4096)}`));
        else resolvePromise(output);
      },
    );
  });
}

/**
 * Clones `repoUrl` and checks out `repoRef` (a branch, tag or commit) into `<dir>/repo`; returns the
 * commit. Options that would let a URL run commands (`ext::` transports) are off. Git runs as `uid`
 * when given (the deployment's own OS user): a `file://` url or a local path then reaches only what
 * that user may read, never another deployment's checkout or the platform's files.
 */
export async function checkoutSource(dir: string, repoUrl: string, repoRef: string, log: BuildLog, credentials?: GitCredentials, uid?: number): Promise<string> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  // The revision's folder stays the platform's (what it writes there, it writes where the deployment
  // cannot); the checkout in it is the deployment's user's, who clones into it.
  mkdirSync(dir, { mode: 0o700 });
  const repo = join(dir, 'repo');
  mkdirSync(repo, { mode: 0o700 });
  if (uid !== undefined) {
    chmodSync(dir, 0o711);
    lchownSync(repo, uid, uid);
    makeTraversable(dirname(dir), { warn: () => undefined });
  }
  gitHomeFor(dir, uid);
  const git = (args: string[], cwd = repo) =>
    run('git', [...GIT_OPTIONS, '-c', 'advice.detachedHead=false', ...args], { cwd, home: dir, timeoutMs: 10 * 60_000, label: `git ${args[0]}`, env: credentialEnvironment(repoUrl, credentials), uid });
  await log(`Cloning ${repoUrl}`);
  await git(['clone', '--quiet', '--no-checkout', '--', repoUrl, repo], dir);
  // A remote branch first (what a ref usually names), then a tag or commit.
  let commit: string | undefined;
  for (const candidate of [`refs/remotes/origin/${repoRef}`, `refs/tags/${repoRef}`, repoRef]) {
    commit = await git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${candidate}^{commit}`]).catch(() => undefined);
    if (commit) break;
  }
  if (!commit) throw new Error(`repo_ref "${repoRef}" is not a branch, tag or commit of ${repoUrl}`);
  await git(['checkout', '--quiet', '--detach', commit]);
  await log(`Checked out ${repoRef} at ${commit}`);
  return commit;
}

/** Whether `path` (after symlinks) lies inside `root`. */
function inside(root: string, path: string): boolean {
  const rel = relative(realpathSync(root), realpathSync(path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The graph config at `graphConfigPath` inside the checked-out repository, read and checked: it, its
 * env file, its dependency folders and every graph file it names must lie inside the repository
 * (symlinks included), and it must be a LangGraph.js project. BAD_REQUEST otherwise.
 */
export function locateGraphConfig(dir: string, graphConfigPath: string): GraphConfig {
  const repo = join(dir, 'repo');
  const path = resolve(repo, graphConfigPath);
  if (!existsSync(path)) throw AppError.badRequest(`graph_config_path "${graphConfigPath}" does not exist in the repository`);
  if (!inside(repo, path)) throw AppError.badRequest(`graph_config_path "${graphConfigPath}" points outside the repository`);
  const config = readGraphConfig(path, { confineTo: repo });
  for (const graph of config.graphs) {
    if (existsSync(graph.file) && !inside(repo, graph.file)) throw AppError.badRequest(`graph "${graph.graphId}" points outside the repository`);
  }
  return config;
}

/**
 * Installs what the config's dependencies need (dependency-install.ts: each folder at its nearest
 * lockfile, with the package manager it names, frozen; or the packages of `previousRevisionId`'s
 * build where they were installed from the same inputs), inside the deployment's sandbox: the install
 * scripts of the repository and its packages run there, with nothing of the platform's in reach.
 * Either way the platform's own packages are reachable one folder up (`<dir>/node_modules`), so
 * imports the repository does not install resolve to the platform's (LangGraph and its peers, what a
 * dependency-free graph imports).
 */
export async function installRevisionDependencies(dir: string, config: GraphConfig, log: BuildLog, sandbox: PreparedSandbox, previous?: { dir: string }): Promise<void> {
  const platformModules = join(dir, 'node_modules');
  if (!existsSync(platformModules)) symlinkSync(PLATFORM_NODE_MODULES, platformModules, 'dir');
  const repo = join(dir, 'repo');
  if (![config.root, repo].some((folder) => existsSync(join(folder, 'package.json')))) {
    // Its files load as ES modules (LangGraph.js's templates declare `"type": "module"`), declared
    // beside the checkout, not in it. As CommonJS, which Node assumes without a package.json, its
    // imports of LangGraph would load LangGraph's CommonJS build: a second copy of LangGraph, core
    // and langsmith next to the ESM one the runtime uses, which took about a second and 30 MB more.
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ private: true, type: 'module' })}\n`);
    await log("No package.json: its files load as ES modules, and imports resolve from the platform's packages");
  }
  const revision = { dir, repo };
  await installDependencies(revision, config, log, sandbox, commandEnvironment(dir), previous && { dir: previous.dir, repo: join(previous.dir, 'repo') });
}

/** Where a built revision's graph config is (its build checked it lies inside the repository). */
export function revisionGraphConfigPath(dataDir: string, revision: { id: string; source_revision_config: Record<string, unknown> }): string {
  return resolve(revisionDirectory(dataDir, revision.id), 'repo', String(revision.source_revision_config.graph_config_path));
}

/**
 * The commit `repoRef` names in the repository at `repoUrl` now (`git ls-remote`), or undefined when
 * it names no branch or tag (a commit does not move).
 */
export async function remoteRefCommit(repoUrl: string, repoRef: string, credentials?: GitCredentials, user?: { uid?: number; home: string }): Promise<string | undefined> {
  const home = user?.home ?? tmpdir();
  const uid = user?.uid;
  gitHomeFor(home, uid);
  const output = await run('git', [...GIT_OPTIONS, 'ls-remote', '--', repoUrl, `refs/heads/${repoRef}`, `refs/tags/${repoRef}`], {
    cwd: home,
    home,
    timeoutMs: 60_000,
    label: 'git ls-remote',
    env: credentialEnvironment(repoUrl, credentials),
    uid,
  });
  return output.split('\n').find(Boolean)?.split(/\s+/)[0];
}
