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
import type pg from 'pg';
import { Coalescer } from '../../database/coalescer.js';
import type { Deps } from '../context.js';
import { type IngestResult, type Ingester, ingestRunBatch, type RunBatch, type RunCreate, type RunUpdate } from './ingest.service.js';

export type TracingClient = LangSmithTracingClientInterface & {
  /** Sends everything buffered and waits until it is stored. */
  awaitPendingTraceBatches(): Promise<void>;
};

type Options = {
  /** Every run goes to this project (the deployment's), whatever the tracer names. */
  projectName?: string;
  /** Send when this many operations are buffered (default 100, the SDK's batch size). */
  maxBatch?: number;
  /** …or this long after the first buffered one (default 100 ms). */
  flushDelayMs?: number;
};

type TraceWrite = { who: Ingester; batch: RunBatch };

// The batches of all tracing clients of a process (one per agent run) go through one coalescer per
// pool: under load, the traces of many runs are stored by one ingest call instead of one each.
const traceWriters = new WeakMap<pg.Pool, Coalescer<TraceWrite, IngestResult>>();

function traceWrites(deps: Pick<Deps, 'db' | 'config'>): Coalescer<TraceWrite, IngestResult> {
  let writer = traceWriters.get(deps.db.pool);
  if (!writer) {
    writer = new Coalescer<TraceWrite, IngestResult>(async (writes) => {
      // Writes of the same ingester are merged; each gets the merged call's result, with only its
      // own runs among the duplicates.
      const groups = new Map<string, TraceWrite[]>();
      for (const write of writes) {
        const key = JSON.stringify([write.who.workspaceId, write.who.apiKeyId ?? null, write.who.userId ?? null]);
        groups.set(key, [...(groups.get(key) ?? []), write]);
      }
      const results = new Map<TraceWrite, IngestResult>();
      for (const group of groups.values()) {
        const merged: RunBatch = { post: group.flatMap((write) => write.batch.post ?? []), patch: group.flatMap((write) => write.batch.patch ?? []) };
        const result = await ingestRunBatch(deps, group[0]!.who, merged);
        for (const write of group) {
          const own = new Set((write.batch.post ?? []).map((post) => String(post.id)));
          results.set(write, { ...result, duplicates: result.duplicates.filter((id) => own.has(id)) });
        }
      }
      return writes.map((write) => results.get(write)!);
    });
    traceWriters.set(deps.db.pool, writer);
  }
  return writer;
}

/**
 * A LangSmithTracingClientInterface (createRun/updateRun) that buffers run operations and stores them
 * with ingestRunBatch in arrival order. Tracing never fails the traced code: ingest errors are logged.
 */
export function createTracingClient(deps: Deps, who: Ingester, options: Options = {}): TracingClient {
  const maxBatch = options.maxBatch ?? 100;
  const flushDelayMs = options.flushDelayMs ?? 100;
  let posts: RunCreate[] = [];
  let patches: RunUpdate[] = [];
  let timer: NodeJS.Timeout | undefined;
  // One batch at a time, in order, so a run's patch is never stored before its post's batch.
  let chain: Promise<void> = Promise.resolve();

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
    const batch = { post: posts, patch: patches };
    posts = [];
    patches = [];
    // A patch of a run posted in the same batch is folded into the post: one row write instead of two.
    const byId = new Map(batch.post.map((post) => [post.id, post]));
    const standalone = batch.patch.filter((patch) => {
      const post = byId.get(patch.id);
      if (!post) return true;
      Object.assign(post, Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)));
      return false;
    });
    chain = chain.then(async () => {
      try {
        const result = await traceWrites(deps).add({ who, batch: { post: batch.post, patch: standalone } });
        if (result.duplicates.length) deps.logger.warn({ duplicates: result.duplicates }, 'traced runs were already stored');
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
