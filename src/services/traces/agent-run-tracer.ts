// Agent runs traced: every agent-server run becomes a trace (graph root, nodes, LLM calls, tools) in
// its deployment's tracing project, stored through the same ingest path as the langsmith SDK's posts,
// by the runtime's trace batcher, after the run is reported done.
import { awaitAllCallbacks } from '@langchain/core/callbacks/promises';
import { LangChainTracer } from '@langchain/core/tracers/tracer_langchain';
import type { RunTracer } from '../../runtime/executor.js';
import type { Deps } from '../context.js';
import type { Ingester } from './ingest.service.js';
import type { TraceBatcher } from './trace-batcher.js';
import { createTracingClient } from './tracing-client.js';

/**
 * A RunTracer for the runtime: each run gets a LangChain tracer whose runs go to `projectName` in the
 * ingester's workspace. At its end the run waits only until its trace is queued in `batcher` (room
 * permitting), not stored: a client reading the trace right after `runs.wait` may have to wait for it
 * (the batcher's flush interval), as with LangSmith.
 */
export function createAgentRunTracer(deps: Deps, who: Ingester, projectName: string, batcher: TraceBatcher): RunTracer {
  return () => {
    const client = createTracingClient(deps, who, { projectName, batcher });
    const tracer = new LangChainTracer({ client, projectName });
    return {
      callbacks: [tracer],
      onEnd: async () => {
        // LangChain may still be delivering the last callbacks (the root run's end) in the background.
        await awaitAllCallbacks();
        await client.awaitPendingTraceBatches();
      },
    };
  };
}
