// The runtime's answers to the reads and writes that need a deployment's graphs (state with
// subgraphs, history, `as_node` updates, drawings and schemas), asked by API processes over the
// request/reply channel (agent-server/services/served-deployment/runtime-protocol.ts). Each read is one function here,
// and answerGraphRequest dispatches to them. Results are plain JSON.
import type { StateSnapshot } from '@langchain/langgraph';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Graph as DrawableGraph } from '@langchain/core/runnables/graph';
import { AppError } from '../../errors.js';
import type { GraphRequest, ThreadState } from '../services/served-deployment/runtime-protocol.js';
import { selectThreadGraph, writeThreadCache } from '../services/threads/threads.store.js';
import { openJson, sealJson } from '../services/encryption/at-rest.js';
import type { RuntimeContext } from './runtime-context.js';
import { asGraphRequest } from './graph-errors.js';
import { extractGraphSchemas, type GraphSchemas, hasRuntimeTypes, withRuntimeDefaults } from './graph-schemas.js';
import { serializeError, toPlainJson } from '../../serialize.js';
import { type Checkpoint, checkpointOf } from './stream-modes.js';
import { readAccess } from './graph-registry.js';

const THREAD_VALUES = { model: 'thread', field: 'values' } as const;

type Json = Record<string, unknown>;


const isSnapshot = (value: unknown): value is StateSnapshot =>
  typeof value === 'object' && value !== null && 'values' in value && 'next' in value;

/** A task's subgraph checkpoint as the reference sends it: no `checkpoint_map`, `checkpoint_id` only when known. */
function taskCheckpointOf(config: RunnableConfig): Partial<Checkpoint> | null {
  const checkpoint = checkpointOf(config);
  if (!checkpoint) return null;
  return {
    checkpoint_ns: checkpoint.checkpoint_ns,
    thread_id: checkpoint.thread_id,
    ...(checkpoint.checkpoint_id ? { checkpoint_id: checkpoint.checkpoint_id } : {}),
  };
}

/** The config a thread's graph is built with (a factory graph's shape may depend on it): its runs' config. */
const threadGraphConfig = (config: Json | undefined): RunnableConfig => ({
  ...(config as RunnableConfig),
  configurable: { ...(((config ?? {}).configurable as Json | undefined) ?? {}) },
});

/**
 * A LangGraph state snapshot as the API presents it (plain JSON, messages flattened). A subgraph's
 * state inside a task (`subgraphs=true`) has no `interrupts` key, as the reference sends it: its
 * interrupts are its tasks'.
 */
function presentSnapshot(state: StateSnapshot, nested = false): ThreadState {
  const tasks = state.tasks.map((task) => ({
    id: task.id,
    name: task.name,
    error: task.error != null ? serializeError(task.error).message : null,
    interrupts: task.interrupts ?? [],
    path: task.path,
    checkpoint: task.state && !isSnapshot(task.state) ? taskCheckpointOf(task.state as RunnableConfig) : null,
    state: task.state && isSnapshot(task.state) ? presentSnapshot(task.state, true) : null,
    result: task.result ?? null,
  }));
  return toPlainJson({
    values: state.values,
    next: state.next,
    tasks,
    metadata: state.metadata ?? null,
    created_at: state.createdAt ?? null,
    checkpoint: checkpointOf(state.config),
    parent_checkpoint: checkpointOf(state.parentConfig),
    ...(nested ? {} : { interrupts: tasks.flatMap((task) => task.interrupts) }),
  });
}

/** The `configurable` naming a thread and, optionally, one of its checkpoints. */
function threadConfigurable(threadId: string, checkpoint: Record<string, unknown> | null | undefined): Json {
  const configurable: Json = { thread_id: threadId };
  for (const [key, value] of Object.entries(checkpoint ?? {})) if (value != null && key !== 'thread_id') configurable[key] = value;
  return configurable;
}

type Request<K extends GraphRequest['kind']> = Extract<GraphRequest, { kind: K }>;

/** The thread's state (at a checkpoint when named); `subgraphs` includes subgraph states in tasks. */
async function readThreadState(ctx: RuntimeContext, request: Request<'thread-state'>): Promise<ThreadState> {
  const graph = await ctx.deployment.graphs.resolve(request.graphId, threadGraphConfig(request.config), readAccess('threads.read'));
  const configurable = threadConfigurable(request.threadId, request.checkpoint);
  const state = await asGraphRequest(() => graph.getState({ configurable }, { subgraphs: request.subgraphs }));
  // LangGraph answers an empty snapshot (no creation time) for a checkpoint it does not have.
  if (configurable.checkpoint_id && !state.createdAt) throw AppError.notFound('Checkpoint not found');
  return presentSnapshot(state);
}

/** Past states, newest first (`before` a checkpoint, filtered by checkpoint metadata). */
async function readThreadHistory(ctx: RuntimeContext, request: Request<'thread-history'>): Promise<ThreadState[]> {
  const graph = await ctx.deployment.graphs.resolve(request.graphId, threadGraphConfig(request.config), readAccess('threads.read'));
  const { before: given } = request;
  const before =
    typeof given === 'string'
      ? { configurable: { checkpoint_id: given } }
      : given && typeof given === 'object' && 'configurable' in given
        ? (given as RunnableConfig)
        : given
          ? { configurable: given as Json }
          : undefined;
  const states: ThreadState[] = [];
  const history = graph.getStateHistory(
    { configurable: threadConfigurable(request.threadId, request.checkpoint) },
    { limit: request.limit, before, filter: request.metadata ?? undefined },
  );
  await asGraphRequest(async () => {
    for await (const state of history) states.push(presentSnapshot(state));
  });
  return states;
}

/** Writes values into the thread's state as if `asNode` had returned them; refreshes the thread's cache. */
async function updateThreadState(ctx: RuntimeContext, request: Request<'update-thread-state'>): Promise<{ checkpoint: Checkpoint | null; configurable: Json }> {
  const graph = await ctx.deployment.graphs.resolve(request.graphId, threadGraphConfig(request.config), readAccess('threads.update'));
  const next = await asGraphRequest(() => graph.updateState({ configurable: threadConfigurable(request.threadId, request.checkpoint) }, request.values ?? null, request.asNode));
  await refreshThreadCache(ctx, request.threadId);
  // The official servers answer {checkpoint}; the JS SDK's type reads {configurable}: both are given.
  const checkpoint = checkpointOf(next);
  return { checkpoint, configurable: { ...(checkpoint ?? {}) } };
}

/** Seeds a new thread's state from supersteps of updates (thread create); refreshes the thread's cache. */
async function seedThreadState(ctx: RuntimeContext, request: Request<'seed-thread-state'>): Promise<null> {
  const graph = await ctx.deployment.graphs.resolve(request.graphId, {}, readAccess('threads.update'));
  await asGraphRequest(() =>
    graph.bulkUpdateState(
      { configurable: { thread_id: request.threadId } },
      request.supersteps.map((step) => ({ updates: step.updates.map((update) => ({ values: update.values, asNode: update.as_node })) })),
    ),
  );
  await refreshThreadCache(ctx, request.threadId);
  return null;
}

/** The drawable graph (nodes and edges); `xray` includes subgraphs. */
async function drawGraph(ctx: RuntimeContext, request: Request<'graph-drawing'>): Promise<unknown> {
  const graph = await ctx.deployment.graphs.resolve(request.graphId, request.config, readAccess('assistants.read'));
  const drawable: DrawableGraph = await graph.getGraphAsync({ ...request.config, xray: request.xray } as Parameters<typeof graph.getGraphAsync>[0]);
  return drawable.toJSON();
}

/**
 * A graph's schemas as the reference gives them: from its runtime types when its state has them, else
 * from its TypeScript types (read when the graphs loaded), else what its channels say at runtime.
 */
async function schemasOf(ctx: RuntimeContext, graphId: string, namespace: string, graph: unknown): Promise<GraphSchemas> {
  const runtime = extractGraphSchemas(graph, await ctx.deployment.graphs.schemaHelpers(graphId));
  if (hasRuntimeTypes(graph)) return runtime;
  const fromTypes = await ctx.deployment.graphs.schemasFromTypes(graphId, namespace, ctx.logger);
  return fromTypes ? withRuntimeDefaults(fromTypes, runtime) : runtime;
}

/** The schemas of a graph. */
async function readGraphSchemas(ctx: RuntimeContext, request: Request<'graph-schemas'>): Promise<Json> {
  const graph = await ctx.deployment.graphs.resolve(request.graphId, request.config, readAccess('assistants.read'));
  const schemas = await schemasOf(ctx, request.graphId, '', graph);
  // As the reference: a JS graph's context schema is its config schema.
  return {
    graph_id: request.graphId,
    input_schema: schemas.input,
    output_schema: schemas.output,
    state_schema: schemas.state,
    config_schema: schemas.config,
    context_schema: schemas.config,
  };
}

/** The schemas of a graph's subgraphs by namespace (optionally below one namespace, recursively). */
async function readSubgraphSchemas(ctx: RuntimeContext, request: Request<'subgraph-schemas'>): Promise<Record<string, Json>> {
  const graph = await ctx.deployment.graphs.resolve(request.graphId, request.config, readAccess('assistants.read'));
  const result: Record<string, Json> = {};
  for await (const [namespace, subgraph] of graph.getSubgraphsAsync(request.namespace, request.recurse)) {
    result[namespace] = await schemasOf(ctx, request.graphId, namespace, subgraph);
  }
  return result;
}

/**
 * Re-reads the thread's latest checkpoint into the row's cache (values, interrupts) and its status
 * (see writeThreadCache); `error` marks the thread as failed. `notify` is sent by the same
 * statement. Whether the thread was there to update.
 */
export async function refreshThreadCache(
  ctx: RuntimeContext,
  threadId: string,
  options: { error?: unknown; notify?: [channel: string, payload: string][] } = {},
): Promise<boolean> {
  const stored = await selectThreadGraph(ctx.db, threadId);
  if (!stored) return false;
  const thread = { ...stored, values: await openJson(ctx.config, THREAD_VALUES, stored.values), config: await openJson(ctx.config, { model: 'thread', field: 'config' }, stored.config) };
  let values = thread.values;
  const interrupts: Json = {};
  let hasNext = false;
  if (thread.graphId) {
    const graph = await ctx.deployment.graphs.resolve(thread.graphId, threadGraphConfig(thread.config), readAccess('threads.read'));
    const state = presentSnapshot(await graph.getState({ configurable: { thread_id: threadId } }));
    values = state.values;
    hasNext = state.next.length > 0;
    for (const task of state.tasks as { id: string; interrupts: unknown[] }[]) if (task.interrupts.length) interrupts[task.id] = task.interrupts;
  }
  const cache = {
    values: await sealJson(ctx.config, THREAD_VALUES, values),
    interrupts: await sealJson(ctx.config, { model: 'thread', field: 'interrupts' }, interrupts),
    error: options.error ? serializeError(options.error) : undefined,
    hasNext,
  };
  return !!(await writeThreadCache(ctx.db, threadId, cache, options.notify));
}

/** Answers one request of the channel. */
/** Embeds texts with the deployment's store embedding function; VALIDATION_FAILED when it has none. */
async function embedForStore(ctx: RuntimeContext, request: Extract<GraphRequest, { kind: 'store-embed' }>): Promise<number[][]> {
  const { embedder } = ctx.deployment.persistence;
  if (!embedder) throw AppError.badRequest('The store of this deployment is not indexed (no store.index in its graph config).');
  try {
    return request.query ? await Promise.all(request.texts.map((text) => embedder.query(text))) : await embedder.documents(request.texts);
  } catch (error) {
    // Project code (often a model API): its failure is the caller's to see and retry, not a 500.
    throw new AppError('UNAVAILABLE', `The store's embedding function failed: ${(error as Error).message}`);
  }
}

export function answerGraphRequest(ctx: RuntimeContext, request: GraphRequest): Promise<unknown> {
  switch (request.kind) {
    case 'thread-state':
      return readThreadState(ctx, request);
    case 'thread-history':
      return readThreadHistory(ctx, request);
    case 'update-thread-state':
      return updateThreadState(ctx, request);
    case 'seed-thread-state':
      return seedThreadState(ctx, request);
    case 'graph-drawing':
      return drawGraph(ctx, request);
    case 'graph-schemas':
      return readGraphSchemas(ctx, request);
    case 'subgraph-schemas':
      return readSubgraphSchemas(ctx, request);
    case 'store-embed':
      return embedForStore(ctx, request);
    case 'runtime-metrics':
      return Promise.resolve({ traceBatcher: ctx.deployment.traces?.stats?.() ?? null });
  }
}
