// An in-process tracing client for the agent-server runtime: LangChain's tracer sends runs here and
// they go through the same ingest path as the langsmith SDK's HTTP posts, without a network hop or an
// API key.
//
// Wiring (runtime, per agent run):
//   const traces = createTracingClient(deps, { workspaceId, apiKeyId, userId }, { projectName: deployment.name });
//   const tracer = new LangChainTracer({ client: traces, projectName: deployment.name });
//   await graph.invoke(input, { callbacks: [tracer], runId });   // or stream(...)
//   await traces.awaitPendingTraceBatches();                     // before reporting the run done
//
// The root run then has the agent run's id (pass `runId`), and nodes, LLM calls and tools are its
// children in the deployment's project (created on first use, see ensureProject).
import type { LangSmithTracingClientInterface } from 'langsmith';
import type { Deps } from '../context.js';
import { type Ingester, ingestRunBatch, type RunBatch, type RunCreate, type RunUpdate } from './ingest.service.js';
import { foldPatches, type TraceBatcher } from './trace-batcher.js';

export type TracingClient = LangSmithTracingClientInterface & {
  /** Sends everything buffered and waits until its destination took it (the batcher: queued; else stored). */
  awaitPendingTraceBatches(): Promise<void>;
};

type Options = {
  /** Every run goes to this project (the deployment's), whatever the tracer names. */
  projectName?: string;
  /** Send when this many operations are buffered (default 100, the SDK's batch size). */
  maxBatch?: number;
  /** …or this long after the first buffered one (default 100 ms). */
  flushDelayMs?: number;
  /**
   * Where batches go: the runtime's batcher, which stores them later, off the run's path. Without
   * one, each batch is stored before awaitPendingTraceBatches resolves.
   */
  batcher?: TraceBatcher;
};

/**
 * A LangSmithTracingClientInterface (createRun/updateRun) that buffers run operations and hands them
 * in arrival order to the batcher (or stores them with ingestRunBatch). Tracing never fails the traced
 * code: ingest errors are logged.
 */
export function createTracingClient(deps: Deps, who: Ingester, options: Options = {}): TracingClient {
  const maxBatch = options.maxBatch ?? 100;
  const flushDelayMs = options.flushDelayMs ?? 100;
  let posts: RunCreate[] = [];
  let patches: RunUpdate[] = [];
  let timer: NodeJS.Timeout | undefined;
  // One batch at a time, in order, so a run's patch is never stored before its post's batch.
  let chain: Promise<void> = Promise.resolve();

  const send = async (batch: RunBatch) => {
    if (options.batcher) return options.batcher.add(who, batch);
    const result = await ingestRunBatch(deps, who, batch);
    if (result.duplicates.length) deps.logger.warn({ duplicates: result.duplicates }, 'traced runs were already stored');
  };

  const clean = (run: Record<string, unknown>): Record<string, unknown> => {
    // Fields of the SDK's in-memory run objects that are not run data.
    const { child_runs: _children, attachments: _attachments, address: _address, ...rest } = run;
    if (options.projectName) {
      delete rest.session_id;
      rest.session_name = options.projectName;
    }
    return rest;
  };

  function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    if (!posts.length && !patches.length) return chain;
    const batch = foldPatches(posts, patches);
    posts = [];
    patches = [];
    chain = chain.then(async () => {
      try {
        await send(batch);
      } catch (error) {
        deps.logger.error({ err: error }, 'could not store traced runs');
      }
    });
    return chain;
  }

  function schedule() {
    if (posts.length + patches.length >= maxBatch) void flush();
    else timer ??= setTimeout(() => void flush(), flushDelayMs);
  }

  return {
    async createRun(run) {
      posts.push(clean({ ...(run as unknown as Record<string, unknown>) }));
      schedule();
    },
    async updateRun(runId, run) {
      patches.push(clean({ ...(run as unknown as Record<string, unknown>), id: runId }));
      schedule();
    },
    awaitPendingTraceBatches: () => flush(),
  };
}
