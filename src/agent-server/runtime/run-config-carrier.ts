// LangChain's runWithConfig without a new RunTree per call. Every runnable LangGraph calls (each node,
// each channel write, each branch) goes through @langchain/core's AsyncLocalStorageProvider
// .runWithConfig, which, with no LangSmith tracer in the config, builds `new RunTree({ name:
// "<runnable_lambda>", tracingEnabled: false })` only to carry the config in the async context: about
// 17 µs each (thirty properties defined one by one, a uuid7 from the crypto RNG, LangSmith's
// environment read again), some twenty times per two-node run, ~400 µs of a run's runtime thread in a
// CPU profile, and never sent anywhere.
//
// The replacement does what runWithConfig does, except that it carries the config on an object whose
// prototype is one such RunTree, built once: what reads the context finds a RunTree there as before
// (langsmith's getCurrentRunTree(), a traceable's parent, createChild), with its own config and its own
// list of children; what it does not have is an id of its own, which a tracing-off carrier's id never
// was used for. It is installed only over the runWithConfig whose source it was written from
// (@langchain/core 1.4.0's, by a hash of its text): another version keeps its own, and the test of this
// module fails until this one is checked against it. Graphs on a project's own copy of @langchain/core
// keep that copy's.
import { createHash } from 'node:crypto';
import { CallbackManager } from '@langchain/core/callbacks/manager';
import { AsyncLocalStorageProviderSingleton } from '@langchain/core/singletons';
import { RunTree } from 'langsmith';

/** SHA-256 of @langchain/core 1.4.0's AsyncLocalStorageProvider.prototype.runWithConfig source, whitespace runs as one space. */
export const REPLACED_RUN_WITH_CONFIG_SHA256 = '36a0aeba3e33e55e7ac09968417bcc251ff69f6099edf2029390c5e0cc69643f';

// Both keys are registered symbols: every copy of @langchain/core uses the same ones.
const CHILD_CONFIG_KEY = Symbol.for('lc:child_config');
const CONTEXT_VARIABLES_KEY = Symbol.for('lc:context_variables');

type Store = Record<PropertyKey, unknown> & { extra?: Record<PropertyKey, unknown> };
type Provider = {
  getInstance(): { getStore(): Store | undefined; run<T>(store: unknown, callback: () => T): T };
  runWithConfig(config: unknown, callback: () => unknown, avoidCreatingRootRunTree?: boolean): unknown;
};
type Tracer = { name?: string; getRunTreeWithTracingConfig(runId: string): Store | undefined };

export const runWithConfigSourceHash = (fn: (...args: never[]) => unknown) => createHash('sha256').update(fn.toString().replace(/\s+/g, ' ')).digest('hex');

let template: RunTree | undefined;

/** A RunTree for the context, as `new RunTree({ name: "<runnable_lambda>", tracingEnabled: false })` but for its id. */
function carrier(): Store {
  template ??= new RunTree({ name: '<runnable_lambda>', tracingEnabled: false });
  // Its own children (createChild adds them to its list) and extra (runWithConfig puts the config there).
  return Object.create(template, { child_runs: { value: [], writable: true, enumerable: true, configurable: true } }) as Store;
}

function runWithConfig(this: Provider, config: { callbacks?: unknown; tags?: string[]; metadata?: Record<string, unknown> } | undefined, callback: () => unknown, avoidCreatingRootRunTree?: boolean) {
  const callbackManager = CallbackManager._configureSync(config?.callbacks as never, undefined, config?.tags, undefined, config?.metadata);
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
}

let installed = false;

/** Puts the carrier's runWithConfig on our @langchain/core's provider when its own is the one it replaces. Says whether it has it now. */
export function installRunConfigCarrier(): boolean {
  if (installed) return true;
  const provider = Object.getPrototypeOf(AsyncLocalStorageProviderSingleton) as Provider;
  if (runWithConfigSourceHash(provider.runWithConfig as never) !== REPLACED_RUN_WITH_CONFIG_SHA256) return false;
  provider.runWithConfig = runWithConfig as Provider['runWithConfig'];
  installed = true;
  return true;
}
