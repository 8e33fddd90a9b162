// The runWithConfig the runtime installs (run-config-carrier.ts) gives a graph's code what
// @langchain/core's own gives it: the run's config, a RunTree as the current run tree (its children its
// own), traceable functions that work, and context variables that reach nested runnables.
import { getContextVariable, setContextVariable } from '@langchain/core/context';
import { RunnableLambda } from '@langchain/core/runnables';
import { AsyncLocalStorageProviderSingleton } from '@langchain/core/singletons';
import { Annotation, END, getConfig, MemorySaver, START, StateGraph } from '@langchain/langgraph';
import { isRunTree, RunTree } from 'langsmith/run_trees';
import { getCurrentRunTree, traceable } from 'langsmith/traceable';
import { describe, expect, it } from 'vitest';
import { sourceHash } from '../../../src/agent-server/runtime/langchain-copies.js';
import { installRunConfigCarrier, installRunConfigCarrierForGraphs, REPLACED_RUN_WITH_CONFIG_SHA256 } from '../../../src/agent-server/runtime/run-config-carrier.js';
import { withProjectLangChainCore } from '../../support/langchain-copy.js';

// Taken before the replacement is installed.
const provider = Object.getPrototypeOf(AsyncLocalStorageProviderSingleton) as { runWithConfig: (...args: never[]) => unknown };
const libraryRunWithConfig = provider.runWithConfig;

const State = Annotation.Root({ seen: Annotation<Record<string, unknown>[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
const carriers: RunTree[] = [];

/** What a node's code finds in its context. */
async function look(node: string) {
  const tree = getCurrentRunTree();
  carriers.push(tree);
  const child = tree.createChild({ name: `${node}-child` });
  setContextVariable('marker', `set in ${node}`);
  return {
    node,
    threadId: getConfig()?.configurable?.thread_id,
    isRunTree: isRunTree(tree),
    name: tree.name,
    tracingEnabled: tree.tracingEnabled,
    childOfTree: child.parent_run === tree && tree.child_runs.includes(child),
    children: tree.child_runs.length,
    traced: await traceable(async (x: number) => x * 2, { name: 'double' })(21),
    nested: await RunnableLambda.from(async () => ({ marker: getContextVariable('marker'), threadId: getConfig()?.configurable?.thread_id })).invoke({}),
  };
}

const graph = new StateGraph(State)
  .addNode('a', async () => ({ seen: [await look('a')] }))
  .addNode('b', async () => ({ seen: [await look('b')] }))
  .addEdge(START, 'a')
  .addEdge('a', 'b')
  .addEdge('b', END)
  .compile({ checkpointer: new MemorySaver() });

const run = async (threadId: string) => (await graph.invoke({ seen: [] }, { configurable: { thread_id: threadId } })).seen;

describe('the run-config carrier', () => {
  it('replaces the runWithConfig of the @langchain/core installed (a new version fails here until it is checked)', () => {
    expect(sourceHash(libraryRunWithConfig as never)).toBe(REPLACED_RUN_WITH_CONFIG_SHA256);
  });

  it("gives a graph's nodes the same context as @langchain/core's own, and builds no RunTree per call", async () => {
    const before = await run('thread-before');
    expect(installRunConfigCarrier()).toBe(true);
    expect(provider.runWithConfig).not.toBe(libraryRunWithConfig);
    carriers.length = 0;
    const after = await run('thread-after');
    const forThread = (seen: Record<string, unknown>[], threadId: string) =>
      seen.map((entry) => ({ ...entry, threadId: entry.threadId === threadId, nested: { ...(entry.nested as object), threadId: (entry.nested as { threadId: string }).threadId === threadId } }));
    expect(forThread(after, 'thread-after')).toEqual(forThread(before, 'thread-before'));
    expect(after).toEqual([
      expect.objectContaining({ node: 'a', threadId: 'thread-after', isRunTree: true, name: '<runnable_lambda>', tracingEnabled: false, childOfTree: true, children: 1, traced: 42, nested: { marker: 'set in a', threadId: 'thread-after' } }),
      expect.objectContaining({ node: 'b', threadId: 'thread-after', nested: { marker: 'set in b', threadId: 'thread-after' } }),
    ]);
    // One RunTree, built once, behind every carrier: children stay with their own carrier.
    const [first, second] = carriers;
    expect(first).not.toBe(second);
    expect(Object.getPrototypeOf(first)).toBe(Object.getPrototypeOf(second));
    expect(Object.getPrototypeOf(first)).toBeInstanceOf(RunTree);
    expect((Object.getPrototypeOf(first) as RunTree).child_runs).toEqual([]);
  });

  it('is installed on the copy of @langchain/core a project’s graphs run on', async () => {
    await withProjectLangChainCore(async ({ graphFile, importCore }) => {
      type Singleton = { runWithConfig(config: unknown, callback: () => unknown): unknown; getRunnableConfig(): unknown };
      const theirs = (await importCore<{ AsyncLocalStorageProviderSingleton: Singleton }>('dist/singletons/index.js')).AsyncLocalStorageProviderSingleton;
      expect(theirs).not.toBe(AsyncLocalStorageProviderSingleton);
      const theirLibraryRunWithConfig = Object.getPrototypeOf(theirs).runWithConfig;
      await installRunConfigCarrierForGraphs([graphFile]);
      expect(Object.getPrototypeOf(theirs).runWithConfig).not.toBe(theirLibraryRunWithConfig);
      const config = { configurable: { thread_id: 'theirs' } };
      const [seen, tree] = theirs.runWithConfig(config, () => [theirs.getRunnableConfig(), getCurrentRunTree()]) as [unknown, RunTree];
      expect(seen).toBe(config);
      expect(isRunTree(tree)).toBe(true);
      expect(Object.hasOwn(tree, 'child_runs')).toBe(true);
    });
  });
});
