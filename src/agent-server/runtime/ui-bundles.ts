// `ui` of langgraph.json: each graph's generative UI components, bundled for the browser by the
// reference server's own bundler (`@langchain/langgraph-ui`: esbuild, React and the SDK kept external,
// Tailwind CSS), rebuilt when their files change, and kept in memory for `/ui/{graph_id}`.
import { basename, dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { UiBundles, UiFile } from '../services/served-deployment/runtime-protocol.js';
import type { GraphConfig } from '../../contracts/graph-config.js';


// A component file that does not build is reported and left out rather than holding up start-up.
const FIRST_BUILD_TIMEOUT_MS = 120_000;

/** Bundles the config's UI components (resolves once each has built or failed); undefined without `ui`. */
export async function bundleGraphUis(config: Pick<GraphConfig, 'root' | 'ui'>, logger: Logger): Promise<UiBundles | undefined> {
  if (!config.ui) return undefined;
  // Loaded only for projects with UI: the bundler brings esbuild and Tailwind with it.
  const { watch } = await import('@langchain/langgraph-ui');
  const bundles = new Map<string, UiFile[]>();
  const pending = new Map<string, () => void>();
  const built = Object.keys(config.ui.components).map((graphId) => new Promise<void>((resolve) => pending.set(graphId, resolve)));
  const onOutput = (graphId: string, files: UiFile[]) => {
    bundles.set(graphId, files);
    pending.get(graphId)?.();
    logger.debug({ graphId, files: files.map((file) => file.basename) }, 'bundled generative UI');
  };
  // Each component is bundled from its own folder: the bundler takes paths relative to its `cwd`,
  // and a component may live anywhere the config names.
  for (const [graphId, file] of Object.entries(config.ui.components)) {
    const path = resolve(config.root, file);
    await watch({ cwd: dirname(path), defs: { [graphId]: `./${basename(path)}` }, config: { shared: config.ui.shared }, onOutput });
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, FIRST_BUILD_TIMEOUT_MS);
    timer.unref();
  });
  await Promise.race([Promise.all(built), timeout]);
  clearTimeout(timer);
  for (const graphId of pending.keys()) if (!bundles.has(graphId)) logger.warn({ graphId }, 'the generative UI of this graph did not build');
  return { files: (graphId) => bundles.get(graphId) };
}
