// The copies of LangChain a deployment's graphs run on: ours, or a project's own (its node_modules),
// whose classes and singletons are other module instances than the ones this code imports. The
// runtime's replacements of LangChain internals (callback-manager-copy.ts, run-config-carrier.ts) are
// installed on each.
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The directory of the @langchain/core that the @langchain/langgraph which `file` imports runs on. */
function langChainCoreOf(file: string): string {
  const langGraph = createRequire(file).resolve('@langchain/langgraph/package.json');
  return realpathSync(dirname(createRequire(langGraph).resolve('@langchain/core/package.json')));
}

/**
 * The directories of the copies of @langchain/core the graph modules at `files` run on, other than
 * ours. A file from which no @langchain/langgraph resolves (its graph imports it through another
 * module) adds none: its copy is not known.
 */
export function theirLangChainCores(files: string[]): Set<string> {
  const ours = langChainCoreOf(fileURLToPath(import.meta.url));
  const theirs = new Set<string>();
  for (const file of files) {
    try {
      theirs.add(langChainCoreOf(file));
    } catch {
      // not known
    }
  }
  theirs.delete(ours);
  return theirs;
}

/** The module a package at `packageDir` exports as `subpath` (e.g. './callbacks/manager'), as its ESM entry (the instance ESM importers hold). */
export async function importPackageExport<T>(packageDir: string, subpath: string): Promise<T> {
  const { exports } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
  let target: unknown = exports[subpath];
  while (target && typeof target === 'object') {
    const conditions = target as Record<string, unknown>;
    target = conditions.import ?? conditions.node ?? conditions.default;
  }
  if (typeof target !== 'string') throw new Error(`${packageDir} exports no ${subpath}`);
  return (await import(pathToFileURL(join(packageDir, target)).href)) as T;
}

/** The directory of the package `name` as the package at `packageDir` resolves it. */
export const dependencyOf = (packageDir: string, name: string): string => realpathSync(dirname(createRequire(join(packageDir, 'package.json')).resolve(`${name}/package.json`)));

/** SHA-256 of a function's source, whitespace runs as one space: which version of a library function a replacement was written from. */
export const sourceHash = (fn: (...args: never[]) => unknown): string => createHash('sha256').update(fn.toString().replace(/\s+/g, ' ')).digest('hex');
