// LangChain's runWithConfig without a new RunTree per call. Every runnable LangGraph calls (each node,
// each channel write, each branch) goes through @langchain/core's AsyncLocalStorageProvider
// .runWithConfig, which, with no LangSmith tracer in the config, builds `new RunTree({ name:
// "<runnable_lambda>", tracingEnabled: false })` only to carry the config in the async context: about
// 17 µs each (thirty properties defined one by one, a uuid7 from the crypto RNG, LangSmith's
// environment read again), 16 times per run of the two-node bench graph (of 20 calls; the others are
// told not to), and never sent anywhere. That graph invoked in-process with a MemorySaver went from
// ~1530 to ~830 µs of CPU per invoke without them: more than the constructors' own 16 × 17 µs, a rest
// not broken down further.
//
// The replacement does what runWithConfig does, except that it carries the config on an object whose
// prototype is one such RunTree, built once: what reads the context finds a RunTree there as before
// (langsmith's getCurrentRunTree(), a traceable's parent, createChild), with its own config and its own
// list of children; what it does not have is an id of its own, which a tracing-off carrier's id never
// was used for. It is installed only over the runWithConfig whose source it was written from
// (@langchain/core 1.4.0's, by a hash of its text): another version keeps its own, and the test of this
// module fails until this one is checked against it. A project with its own node_modules runs its
// graphs on its own copy of @langchain/core: that copy gets it too (installRunConfigCarrierForGraphs).
import { CallbackManager } from '@langchain/core/callbacks/manager';
import { AsyncLocalStorageProviderSingleton } from '@langchain/core/singletons';
import { RunTree } from 'langsmith/run_trees';
import { dependencyOf, importPackageExport, sourceHash, theirLangChainCores } from './langchain-copies.js';

/** SHA-256 of @langchain/core 1.4.0's AsyncLocalStorageProvider.prototype.runWithConfig source, whitespace runs as one space. */
export const REPLACED_RUN_WITH_CONFIG_SHA256 = '36a0aeba3e33e55e7ac09968417bcc251ff69f6099edf2029390c5e0cc69643f';

// Both keys are registered symbols: every copy of @langchain/core uses the same ones.
const CHILD_CONFIG_KEY = Symbol.for('lc:child_config');
const CONTEXT_VARIABLES_KEY = Symbol.for('lc:context_variables');

type Store = Record<PropertyKey, unknown> & { extra?: Record<PropertyKey, unknown> };
type RunnableConfigLike = { callbacks?: unknown; tags?: string[]; metadata?: Record<string, unknown> } | undefined;
type Provider = {
  getInstance(): { getStore(): Store | undefined; run<T>(store: unknown, callback: () => T): T };
  runWithConfig(config: RunnableConfigLike, callback: () => unknown, avoidCreatingRootRunTree?: boolean): unknown;
};
type Tracer = { name?: string; getRunTreeWithTracingConfig(runId: string): Store | undefined };
/** What the replacement uses of a copy of @langchain/core: its CallbackManager and its langsmith's RunTree. */
type LangChainCopy = { CallbackManager: Pick<typeof CallbackManager, '_configureSync'>; RunTree: new (config: { name: string; tracingEnabled: boolean }) => object };

function runWithConfigOn({ CallbackManager: Manager, RunTree: Tree }: LangChainCopy) {
  let template: object | undefined;
  /** A RunTree for the context, as `new RunTree({ name: "<runnable_lambda>", tracingEnabled: false })` but for its id. */
  const carrier = (): Store => {
    template ??= new Tree({ name: '<runnable_lambda>', tracingEnabled: false });
    // Its own children (createChild adds them to its list); runWithConfig gives it its own extra.
    return Object.create(template, { child_runs: { value: [], writable: true, enumerable: true, configurable: true } }) as Store;
  };
  return function runWithConfig(this: Provider, config: RunnableConfigLike, callback: () => unknown, avoidCreatingRootRunTree?: boolean) {
    const callbackManager = Manager._configureSync(config?.callbacks as never, undefined, config?.tags, undefined, config?.metadata);
    const storage = this.getInstance();
    const previousValue = storage.getStore();
    const parentRunId = callbackManager?.getParentRunId();
    const langChainTracer = callbackManager?.handlers?.find((handler) => handler?.name === 'langchain_tracer') as Tracer | undefined;
    let runTree: Store | undefined;
    if (langChainTracer && parentRunId) runTree = langChainTracer.getRunTreeWithTracingConfig(parentRunId);
    else if (!avoidCreatingRootRunTree) runTree = carrier();
    if (runTree) runTree.extra = { ...runTree.extra, [CHILD_CONFIG_KEY]: config };
    if (previousValue !== undefined && previousValue[CONTEXT_VARIABLES_KEY] !== undefined) {
      runTree ??= {};
      runTree[CONTEXT_VARIABLES_KEY] = previousValue[CONTEXT_VARIABLES_KEY];
    }
    return storage.run(runTree, callback);
  };
}

const installed = new WeakSet<object>();

/**
 * Puts the carrier's runWithConfig on a copy's provider (by default our @langchain/core's) when its own
 * is the one it replaces. Says whether it has it now.
 */
export function installRunConfigCarrier(
  singleton: object = AsyncLocalStorageProviderSingleton,
  copy: LangChainCopy = { CallbackManager, RunTree: RunTree as unknown as LangChainCopy['RunTree'] },
): boolean {
  const provider = Object.getPrototypeOf(singleton) as Provider;
  if (installed.has(provider)) return true;
  if (sourceHash(provider.runWithConfig as never) !== REPLACED_RUN_WITH_CONFIG_SHA256) return false;
  provider.runWithConfig = runWithConfigOn(copy) as Provider['runWithConfig'];
  installed.add(provider);
  return true;
}

/**
 * installRunConfigCarrier for the copies of @langchain/core the graph modules at `files` run on: ours,
 * or a project's own. A copy that cannot be found or has another runWithConfig keeps its own.
 */
export async function installRunConfigCarrierForGraphs(files: string[]): Promise<void> {
  installRunConfigCarrier();
  for (const packageDir of theirLangChainCores(files)) {
    const theirs = await Promise.all([
      importPackageExport<{ AsyncLocalStorageProviderSingleton: object }>(packageDir, './singletons'),
      importPackageExport<{ CallbackManager: LangChainCopy['CallbackManager'] }>(packageDir, './callbacks/manager'),
      importPackageExport<{ RunTree: LangChainCopy['RunTree'] }>(dependencyOf(packageDir, 'langsmith'), './run_trees'),
    ]).catch(() => undefined);
    if (theirs) installRunConfigCarrier(theirs[0].AsyncLocalStorageProviderSingleton, { CallbackManager: theirs[1].CallbackManager, RunTree: theirs[2].RunTree });
  }
}
