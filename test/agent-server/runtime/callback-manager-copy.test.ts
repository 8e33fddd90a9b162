// The linear CallbackManager.copy() the agent-run tracer installs builds what @langchain/core's own
// copy() builds: the same handlers, tags and metadata, the same ones inheritable, in the same order,
// for managers made the ways LangChain and LangGraph make them (configure, getChild, additions).
import { dirname, join } from 'node:path';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { CallbackManager } from '@langchain/core/callbacks/manager';
import { ConsoleCallbackHandler } from '@langchain/core/tracers/console';
import { describe, expect, it } from 'vitest';
import { installLinearCallbackManagerCopy, installLinearCallbackManagerCopyForGraphs, REPLACED_COPY_SOURCE_SHA256 } from '../../../src/agent-server/runtime/callback-manager-copy.js';
import { sourceHash } from '../../../src/agent-server/runtime/langchain-copies.js';
import { withProjectLangChainCore } from '../../support/langchain-copy.js';

// Taken before the replacement is installed (by the first test, or by an import of the tracer).
const libraryCopy = CallbackManager.prototype.copy;

class NamedHandler extends BaseCallbackHandler {
  constructor(readonly name: string) {
    super();
  }
}

/** What copy() decides, with handlers as themselves (identity matters: a copy shares its handlers). */
const shape = (manager: CallbackManager) => ({
  parentRunId: manager.getParentRunId(),
  handlers: manager.handlers,
  inheritableHandlers: manager.inheritableHandlers,
  tags: manager.tags,
  inheritableTags: manager.inheritableTags,
  metadata: Object.entries(manager.metadata),
  metadataSymbols: Object.getOwnPropertySymbols(manager.metadata),
  inheritableMetadata: Object.entries(manager.inheritableMetadata),
});

async function managers(): Promise<{ label: string; manager: CallbackManager; additional?: BaseCallbackHandler[]; inherit?: boolean }[]> {
  const tracer = new NamedHandler('agent_run_trace_collector');
  const local = new NamedHandler('local');
  const configured = CallbackManager.configure([tracer], [local], ['graph:step:1', 'inherited'], ['local-tag'], { ls_integration: 'langgraph', langgraph_step: 1 }, { only_here: true })!;
  // What a runnable's steps get: the child of its run's manager.
  const run = await configured.handleChainStart({ lc: 1, type: 'not_implemented', id: ['test', 'Sequence'] }, { input: 1 });
  const child = run.getChild('seq:step:1');
  const runManager = new CallbackManager('parent-run');
  runManager.setHandlers([tracer]);
  runManager.addTags(['a', 'b', 'a', 'c'], true);
  runManager.addTags(['b', 'local'], false);
  runManager.addMetadata({ thread_id: 't', run_id: 'r', 2: 'two', 1: 'one', __proto__: null, nested: { deep: true } });
  runManager.addMetadata({ only_here: 1, thread_id: 'local wins here' }, false);
  (runManager.metadata as Record<symbol, unknown>)[Symbol('hidden')] = 'not copied';
  const withProtoKey = new CallbackManager();
  withProtoKey.addMetadata(JSON.parse('{"__proto__": {"polluted": true}, "after": 1}'));
  const duplicates = new CallbackManager('dup');
  duplicates.tags = ['x', 'y', 'x'];
  duplicates.inheritableTags = ['x', 'z'];
  duplicates.handlers = [tracer, local, tracer];
  duplicates.inheritableHandlers = [tracer, new NamedHandler('not listed in handlers')];
  duplicates.metadata = { a: 1, b: 2 };
  duplicates.inheritableMetadata = { b: 'other value', c: 3 };
  return [
    { label: 'empty', manager: new CallbackManager() },
    { label: 'configured', manager: configured },
    { label: 'a run’s child', manager: child },
    { label: 'tags repeated, some local, metadata local and numeric keys, a symbol key', manager: runManager },
    { label: 'a metadata key named __proto__', manager: withProtoKey },
    { label: 'lists out of step with each other', manager: duplicates },
    { label: 'handlers added', manager: runManager, additional: [local, new ConsoleCallbackHandler()], inherit: false },
    { label: 'a second console handler', manager: (() => {
      const withConsole = new CallbackManager();
      withConsole.addHandler(new ConsoleCallbackHandler());
      return withConsole;
    })(), additional: [new ConsoleCallbackHandler(), local] },
  ];
}

describe('linear CallbackManager.copy()', () => {
  it('replaces @langchain/core’s copy() only when it is the one it was written from', () => {
    const hash = sourceHash(libraryCopy as never);
    // Fails after an upgrade of @langchain/core that changed copy(): compare the new copy() with
    // callback-manager-copy.ts, then update its hash.
    expect(hash).toBe(REPLACED_COPY_SOURCE_SHA256);
    expect(installLinearCallbackManagerCopy()).toBe(true);
    expect(CallbackManager.prototype.copy).not.toBe(libraryCopy);
    expect(installLinearCallbackManagerCopy()).toBe(true); // once

    class OtherManager extends CallbackManager {}
    Object.defineProperty(OtherManager.prototype, 'copy', { value: function copy() { return new OtherManager(); }, writable: true });
    expect(installLinearCallbackManagerCopy(OtherManager as never)).toBe(false);
  });

  it('builds the manager @langchain/core’s copy() builds', async () => {
    installLinearCallbackManagerCopy();
    for (const { label, manager, additional, inherit } of await managers()) {
      const expected = libraryCopy.call(manager, additional, inherit);
      const copied = manager.copy(additional, inherit);
      expect(copied, label).toBeInstanceOf(CallbackManager);
      expect(shape(copied), label).toEqual(shape(expected));
      // Each handler the same object as the original's, each list and object a new one.
      copied.handlers.forEach((handler, index) => expect(handler, label).toBe(expected.handlers[index]));
      expect(copied.metadata, label).not.toBe(manager.metadata);
      expect(copied.tags, label).not.toBe(manager.tags);
      expect(Object.getPrototypeOf(copied.metadata), label).toBe(Object.prototype);
    }
  });

  it('is installed on the copy of @langchain/core a project’s graphs run on', async () => {
    await withProjectLangChainCore(async ({ graphFile, importCore }) => {
      const theirs = await importCore<{ CallbackManager: typeof CallbackManager }>('dist/callbacks/manager.js');
      expect(theirs.CallbackManager).not.toBe(CallbackManager);
      const theirLibraryCopy = theirs.CallbackManager.prototype.copy;

      await installLinearCallbackManagerCopyForGraphs([graphFile, join(dirname(graphFile), 'no-langgraph-here', 'graph.mjs')]);
      expect(theirs.CallbackManager.prototype.copy).not.toBe(theirLibraryCopy);
      const manager = new theirs.CallbackManager('parent');
      manager.addHandler(new NamedHandler('tracer'));
      manager.addTags(['graph:step:1']);
      manager.addMetadata({ thread_id: 't', langgraph_step: 1 });
      const copied = manager.copy();
      expect(copied).toBeInstanceOf(theirs.CallbackManager);
      expect(shape(copied)).toEqual(shape(theirLibraryCopy.call(manager)));
    });
  });
});
