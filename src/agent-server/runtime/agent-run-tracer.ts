// Agent runs traced: every agent-server run becomes a trace (graph root, nodes, LLM calls, tools) in
// its deployment's tracing project, stored through the same ingest path as the langsmith SDK's posts,
// by the runtime's trace batcher, after the run is reported done.
//
// Kept cheap on the run's path (bench:tracing measures it): LangChain's callbacks are collected as the
// plain run objects of BaseTracer (no langsmith RunTree per run, no client, no background callback
// queue to drain at the end), and the whole tree is handed to the batcher once, as finished ingest
// posts, when the root run ends: no patches, no JSON until the batcher writes it.
import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { BaseTracer, type Run } from '@langchain/core/tracers/base';
import { getRuntimeEnvironment } from '@langchain/core/utils/env';
import type { RunStatus } from '../services/runs/runs.schemas.js';
import type { Deps } from '../../context.js';
import type { Ingester, RunCreate, TraceSink } from '../../contracts/trace-wire.js';
import { installLinearCallbackManagerCopy } from './callback-manager-copy.js';

/**
 * The tracing seam: a runtime may be given a tracer per run (trace ingestion supplies one
 * that records the run in the deployment's tracing project). It gets LangChain callbacks for the run
 * and is told when the run ends.
 */
export type RunTracer = (run: { runId: string; threadId: string; assistantId: string; graphId: string; deploymentId: string }) =>
  | { callbacks: BaseCallbackHandler[]; onEnd?(outcome: { status: RunStatus; error?: unknown }): Promise<void> | void }
  | undefined;

/**
 * A RunTracer for the runtime: each run's trace goes to `projectName` in the ingester's workspace. A
 * run waits only until its trace is queued in `batcher` (room permitting), not stored: a client reading
 * the trace right after `runs.wait` may have to wait for it (the batcher's flush interval), as with
 * LangSmith.
 */
export function createAgentRunTracer(deps: Pick<Deps, 'logger'>, who: Ingester, projectName: string, batcher: Pick<TraceSink, 'add'>): RunTracer {
  // A traced run's callback manager is copied several times per node: in linear time from here on.
  installLinearCallbackManagerCopy();
  return () => {
    const collector = new TraceCollector((posts) => batcher.add(who, { post: posts }), projectName);
    return {
      callbacks: [collector],
      // The root ended (and its trace was queued) inside the graph's run; a run cut short before its
      // root ended is queued here as far as it got.
      onEnd: () => collector.finish().catch((error: unknown) => deps.logger.error({ err: error }, 'could not queue the run’s trace')),
    };
  };
}

/** BaseTracer's run tree of one agent run, handed on as ingest posts when its root ends. */
class TraceCollector extends BaseTracer {
  name = 'agent_run_trace_collector';
  private queued: Promise<void> | undefined;

  constructor(
    private readonly queue: (posts: RunCreate[]) => Promise<void>,
    private readonly projectName: string,
  ) {
    // Handlers run inline, not on LangChain's global background queue: the root's end is handled
    // before the graph's run returns, and nothing is left to await for this run.
    super({ _awaitHandler: true });
  }

  protected persistRun(root: Run): Promise<void> {
    // Once per trace: a root queued unfinished by finish() is not queued again if it ends later.
    this.queued ??= this.queue(toPosts(root, this.projectName));
    return this.queued;
  }

  async finish(): Promise<void> {
    const root = [...this.runMap.values()].find((run) => run.parent_run_id === undefined);
    if (root) await this.persistRun(root);
    await this.queued;
  }
}

/** The tree's runs as ingest posts (`RunCreate`, the langsmith SDK's wire fields), parents first. */
function toPosts(root: Run, projectName: string): RunCreate[] {
  const posts: RunCreate[] = [];
  const pending: Run[] = [root];
  for (let run = pending.pop(); run; run = pending.pop()) {
    posts.push({
      id: run.id,
      name: run.name,
      run_type: run.run_type,
      start_time: run.start_time,
      end_time: run.end_time,
      parent_run_id: run.parent_run_id,
      trace_id: run.trace_id,
      dotted_order: run.dotted_order,
      inputs: run.inputs,
      outputs: run.outputs,
      error: run.error,
      events: run.events,
      serialized: run.serialized,
      tags: run.tags,
      // The runtime environment (library versions, platform) once per trace, on its root.
      extra: run === root ? { ...run.extra, runtime: getRuntimeEnvironment() } : run.extra,
      session_name: projectName,
    });
    for (const child of run.child_runs) pending.push(child);
  }
  return posts;
}
