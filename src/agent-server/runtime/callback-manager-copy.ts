// LangChain's CallbackManager.copy() in linear time. With any callback handler in a run's config (the
// run tracer's, a stream mode's), LangGraph and LangChain copy the run's callback manager several times
// per node (each RunnableCallable's runWithConfig, ensureLangGraphConfig, mergeCallbacks), and
// @langchain/core's copy() re-adds the metadata one key at a time, spreading both metadata objects
// and listing the inheritable keys again for each key: quadratic in the run's metadata keys (LangGraph's
// langgraph_* keys, the runtime's run_id, thread_id, … : about fifteen). That copying was the largest
// part of what tracing costs a run on the runtime's thread (bench:tracing, a CPU profile of `built`).
//
// A project with its own node_modules runs its graphs on its own copy of @langchain/core: that copy's
// CallbackManager gets the replacement too (installLinearCallbackManagerCopyForGraphs).
//
// The replacement builds the same manager (same handlers, tags, metadata, and which of them are
// inheritable, in the same order) in one pass. It is installed only over the copy() whose source it
// was written from (@langchain/core 1.4.0's, by a hash of its text): another version keeps its own,
// and the test of this module fails until this one is checked against it.
import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { CallbackManager } from '@langchain/core/callbacks/manager';
import { importPackageExport, sourceHash, theirLangChainCores } from './langchain-copies.js';

/** SHA-256 of @langchain/core 1.4.0's CallbackManager.prototype.copy source, whitespace runs as one space. */
export const REPLACED_COPY_SOURCE_SHA256 = 'e9ed1109ffccff9f6518c563f4a62ad28ac03c61c9f3cab517a4c80b6a452d59';

type Manager = CallbackManager & { _parentRunId?: string };
type ManagerClass = { prototype: { copy: (...args: never[]) => unknown } } & (new (parentRunId?: string, options?: Record<string, unknown>) => Manager);

/** A data property of `target`, also for a key named `__proto__` (which assignment would not create). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown) {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** `metadata`'s own enumerable string-keyed properties (a spread also takes symbol keys; copy() drops them). */
function stringKeyed(metadata: Record<string, unknown>): Record<string, unknown> {
  const copied = { ...metadata };
  for (const symbol of Object.getOwnPropertySymbols(copied)) delete (copied as Record<symbol, unknown>)[symbol];
  return copied;
}

function linearCopy(Manager: ManagerClass) {
  return function copy(this: Manager, additionalHandlers: BaseCallbackHandler[] = [], inherit = true): Manager {
    const inheritableHandlerSet = new Set(this.inheritableHandlers);
    const handlers = [...this.handlers];
    const inheritableHandlers = handlers.filter((handler) => inheritableHandlerSet.has(handler));
    // A tag listed twice is kept once, where it was last (addTags removes it before adding it again).
    const tags = new Set(this.tags).size === this.tags.length ? [...this.tags] : this.tags.filter((tag, index) => this.tags.lastIndexOf(tag) === index);
    const inheritableTagSet = new Set(this.inheritableTags);
    const inheritableTags = tags.filter((tag) => inheritableTagSet.has(tag));
    // Every metadata key, valued from `metadata`, and inheritable when `inheritableMetadata` has it too.
    const metadata = stringKeyed(this.metadata);
    const keys = Object.keys(metadata);
    const inheritableKeys = new Set(Object.keys(this.inheritableMetadata));
    let inheritableMetadata: Record<string, unknown>;
    if (keys.every((key) => inheritableKeys.has(key))) inheritableMetadata = { ...metadata };
    else {
      inheritableMetadata = {};
      for (const key of keys) if (inheritableKeys.has(key)) setOwn(inheritableMetadata, key, metadata[key]);
    }
    const manager = new Manager(this._parentRunId, { handlers, inheritableHandlers, tags, inheritableTags, metadata, inheritableMetadata });
    for (const handler of additionalHandlers) {
      // As copy(): a second console handler is not added.
      if (handler.name === 'console_callback_handler' && manager.handlers.some((existing) => existing.name === 'console_callback_handler')) continue;
      manager.addHandler(handler, inherit);
    }
    return manager;
  };
}

const installed = new WeakSet<object>();

/**
 * Puts the linear copy() on `Manager` (by default our @langchain/core's CallbackManager) when its
 * copy() is the one it replaces. Says whether `Manager` has it now.
 */
export function installLinearCallbackManagerCopy(Manager: ManagerClass = CallbackManager as unknown as ManagerClass): boolean {
  if (installed.has(Manager)) return true;
  if (sourceHash(Manager.prototype.copy) !== REPLACED_COPY_SOURCE_SHA256) return false;
  Manager.prototype.copy = linearCopy(Manager) as never;
  installed.add(Manager);
  return true;
}

/**
 * installLinearCallbackManagerCopy for the copies of @langchain/core the graph modules at `files` run
 * on: ours, or a project's own. A copy that cannot be found or has another copy() keeps its own.
 */
export async function installLinearCallbackManagerCopyForGraphs(files: string[]): Promise<void> {
  installLinearCallbackManagerCopy();
  for (const packageDir of theirLangChainCores(files)) {
    const theirs = await importPackageExport<{ CallbackManager: ManagerClass }>(packageDir, './callbacks/manager').catch(() => undefined);
    if (theirs) installLinearCallbackManagerCopy(theirs.CallbackManager);
  }
}
