// A project with its own node_modules, as a deployment built from a repository has: its own
// @langchain/core (our files, hard-linked: another module instance), found through its
// @langchain/langgraph (a package.json only); its other dependencies resolve to ours, linked beside it.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export type ProjectLangChain = {
  /** A graph module of the project (empty): what the runtime is told its graphs are. */
  graphFile: string;
  /** A module of the project's @langchain/core, by its path under the package (e.g. 'dist/callbacks/manager.js'). */
  importCore<T>(path: string): Promise<T>;
};

export async function withProjectLangChainCore(work: (project: ProjectLangChain) => Promise<void>): Promise<void> {
  const ours = createRequire(import.meta.url);
  const packageDir = (name: string) => realpathSync(dirname(ours.resolve(`${name}/package.json`)));
  const project = mkdtempSync(join(tmpdir(), 'langchain-copy-project-'));
  try {
    const modules = join(project, 'node_modules');
    mkdirSync(join(modules, '@langchain', 'langgraph'), { recursive: true });
    writeFileSync(join(modules, '@langchain', 'langgraph', 'package.json'), JSON.stringify({ name: '@langchain/langgraph', version: '0.0.0-test' }));
    execFileSync('cp', ['-al', packageDir('@langchain/core'), join(modules, '@langchain', 'core')]);
    const ourModules = dirname(dirname(packageDir('@langchain/core')));
    for (const dependency of Object.keys(ours(join(packageDir('@langchain/core'), 'package.json')).dependencies as Record<string, string>)) {
      mkdirSync(dirname(join(modules, dependency)), { recursive: true });
      symlinkSync(join(ourModules, dependency), join(modules, dependency), 'dir');
    }
    const graphFile = join(project, 'graph.mjs');
    writeFileSync(graphFile, 'export {};\n');
    await work({ graphFile, importCore: async (path) => (await import(pathToFileURL(join(modules, '@langchain', 'core', path)).href)) as never });
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}
