// The compile caches a deployment's agent server (its child process) starts with. Every child imports
// LangGraph and the agent server's code: a few hundred TypeScript files that tsx transforms and a few thousand JavaScript
// files that V8 compiles, which a cold child did on every deployment's first deploy (its sandbox's
// /tmp, where tsx keeps its cache, is new each time, and its V8 cache folder starts empty).
//
// The platform warms a seed of both once (again when it is older than SEED_MAX_AGE_MS, since tsx
// reads entries of the last week only), in a process of its own that imports those modules and runs
// no deployment code; each deployment's cache folder starts as a copy of the seed. The copy is the
// deployment's own (writable by its sandbox user only): a deployment that poisons its cache poisons
// only itself, never the seed or another deployment's.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Deps } from '../../context.js';
import { type DeploymentFiles, type PreparedSandbox, writeFileOfPlatform } from './sandbox.js';

const CHILD_ENTRY = new URL('../../agent-server/child-entry.mjs', import.meta.url).pathname;
const SEED_MAX_AGE_MS = 3 * 24 * 3600_000;
const WARM_UP_TIMEOUT_MS = 120_000;

/** A warmed seed: tsx's cache folder and V8's compile cache, named by when it was made. */
type CacheSeed = { id: string; dir: string; tsx: string; v8: string };

/** Where a deployment's child keeps its caches: tsx's (bound at its sandbox's /tmp/tsx-<uid>) and V8's. */
export const deploymentCaches = (files: DeploymentFiles) => ({ tsx: join(files.cache, 'tsx'), v8: join(files.cache, 'v8') });

const seeds = new Map<string, Promise<CacheSeed | undefined>>();

/**
 * The seed under the data directory, warmed now when missing or old; undefined when warming failed
 * (logged) or was stopped. The worker role warms it when it starts, so the first deploy finds it;
 * its `stop` aborts `signal`, which ends a warm-up still running (it would outlive the process and
 * keep writing under the data directory otherwise).
 */
export function warmAgentServerCaches(deps: Pick<Deps, 'config' | 'logger'>, signal?: AbortSignal): Promise<CacheSeed | undefined> {
  // The folder's name is older than the name of what it holds: kept, so an installation's seed stays found.
  const root = join(deps.config.dataDir, 'runtime-cache');
  let seed = seeds.get(root);
  if (!seed) {
    seed = findSeed(root)
      .then((found) => found ?? warmSeed(root, signal))
      .catch((error: unknown) => {
        if (signal?.aborted) {
          seeds.delete(root);
          return undefined;
        }
        // Not tried again by this process: every launch would wait for a warm-up that fails.
        deps.logger.warn({ err: error }, 'agent servers of deployments start with cold compile caches: warming them failed');
        return undefined;
      });
    seeds.set(root, seed);
  }
  return seed;
}

async function findSeed(root: string): Promise<CacheSeed | undefined> {
  const current = join(root, 'seed');
  if (!existsSync(join(current, 'id'))) return undefined;
  if (Date.now() - statSync(join(current, 'id')).mtimeMs > SEED_MAX_AGE_MS) return undefined;
  // One an earlier version made may hold folders only the platform could read.
  openToOthers(current);
  return seedAt(current);
}

function seedAt(dir: string): CacheSeed | undefined {
  const tsxParent = join(dir, 'tmp');
  const tsx = readdirSync(tsxParent).find((name) => name.startsWith('tsx-'));
  return tsx ? { id: readFileSync(join(dir, 'id'), 'utf8'), dir, tsx: join(tsxParent, tsx), v8: join(dir, 'v8') } : undefined;
}

/** Imports the agent server's modules in a child of the platform's code only, with both caches pointed into a new seed. */
async function warmSeed(root: string, signal: AbortSignal | undefined): Promise<CacheSeed | undefined> {
  signal?.throwIfAborted();
  const id = `${Date.now()}-${process.pid}`;
  const building = join(root, `building-${id}`);
  mkdirSync(join(building, 'tmp'), { recursive: true });
  // tsx names a cache entry by the tsconfig it applied too: a sandboxed child finds none (the
  // platform's is not in its sandbox), so neither may the warm-up (an empty one is the same).
  writeFileSync(join(building, 'tsconfig.json'), '{}');
  const child = spawn(process.execPath, [CHILD_ENTRY], {
    cwd: building,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      TMPDIR: join(building, 'tmp'),
      TSX_TSCONFIG_PATH: join(building, 'tsconfig.json'),
      AGENT_PLATFORM_COMPILE_CACHE: join(building, 'v8'),
      AGENT_PLATFORM_WARM_UP: '1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors = (errors + chunk.toString('utf8')).slice(-2000)));
  const end = () => child.kill('SIGKILL');
  const timer = setTimeout(end, WARM_UP_TIMEOUT_MS);
  signal?.addEventListener('abort', end, { once: true });
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', (error) => ((errors += String(error)), resolve(null)));
    child.once('exit', resolve);
  }).finally(() => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', end);
  });
  if (code !== 0) {
    rmSync(building, { recursive: true, force: true });
    throw new Error(`the warm-up exited with ${code}: ${errors}`);
  }
  // Another process sharing the data directory (a second worker) may have put a seed in place
  // meanwhile: that one stays, as a launch may be copying from it now.
  const made = await findSeed(root);
  if (made) {
    rmSync(building, { recursive: true, force: true });
    return made;
  }
  writeFileSync(join(building, 'id'), id);
  // Deployments copy it as their own OS users: it holds the compiled code of the platform's own
  // packages and nothing else, readable by all (tsx and V8 make some of it private to its maker).
  openToOthers(building);
  // Made whole, then put in place: a process that looks meanwhile finds the previous seed or none.
  const current = join(root, 'seed');
  const retired = join(root, `retired-${id}`);
  if (existsSync(current)) renameSync(current, retired);
  renameSync(building, current);
  rmSync(retired, { recursive: true, force: true });
  return seedAt(current);
}

/**
 * The shell script that starts a deployment's caches from a seed, run inside the deployment's sandbox
 * (its arguments: the seed's tsx and V8 folders, the deployment's, the sandbox user's id). Node names
 * its cache's folder by the Node version and the OS user (`v22.23.3-x64-<hash>-<uid>`): the seed's,
 * made as the platform's user, is renamed for the deployment's.
 */
const SEED_SCRIPT = `set -e
rm -rf "$3" "$4"
mkdir -p "$4"
cp -R --preserve=mode,timestamps "$1" "$3"
for dir in "$2"/*; do
  [ -d "$dir" ] || continue
  name=\${dir##*/}
  cp -R --preserve=mode,timestamps "$dir" "$4/\${name%-*}-$5"
done`;

/**
 * Starts the deployment's caches from the platform's seed unless they came from this seed already
 * (a deployment's next revisions keep what their predecessors cached). The deployment's cache folder
 * is its own to write, so what is in it may be anything its code put there (links to the platform's
 * files among them): the copy runs inside its sandbox, as its user, where that resolves within its own
 * view; which seed it came from is kept beside it, in the folder the platform owns. Never fails a
 * launch: a child without them starts cold.
 */
export async function seedDeploymentCaches(deps: Pick<Deps, 'config' | 'logger'>, prepared: PreparedSandbox): Promise<void> {
  const { files } = prepared;
  const seed = await warmAgentServerCaches(deps);
  if (!seed) return;
  const marker = join(files.root, 'cache-seed');
  try {
    if (existsSync(marker) && readFileSync(marker, 'utf8') === seed.id) return;
    const caches = deploymentCaches(files);
    const uid = files.uid ?? process.getuid?.() ?? 0;
    await prepared.sandbox.run(
      '/bin/sh',
      ['-c', SEED_SCRIPT, 'seed-caches', seed.tsx, seed.v8, caches.tsx, caches.v8, String(uid)],
      { readOnly: [seed.dir], writable: [], cwd: files.cache, network: 'none' },
      { env: prepared.env, timeoutMs: 60_000, label: 'seeding the compile caches' },
    );
    writeFileOfPlatform(marker, seed.id);
  } catch (error) {
    deps.logger.warn({ err: error, folder: files.cache }, "a deployment's compile caches could not be seeded");
  }
}

/** Makes the seed's folders listable and its files readable by every OS user (the platform's own tree: links in it are not followed). */
function openToOthers(path: string): void {
  const found = lstatSync(path);
  if (found.isSymbolicLink()) return;
  chmodSync(path, found.mode | (found.isDirectory() ? 0o055 : 0o044));
  if (found.isDirectory()) for (const name of readdirSync(path)) openToOthers(join(path, name));
}
