// Translates a LangGraph run into the agent server's stream events: one event per chunk, named after
// its stream mode (`mode|ns1|ns2` for subgraphs when stream_subgraphs is set). `messages-tuple` is
// LangGraph's own `messages` mode; the older `messages` mode (partial/complete message events) and
// `events` need LangChain's event stream, so only runs asking for them pay for it.
import type { RunnableConfig } from '@langchain/core/runnables';
import { isBaseMessage } from '@langchain/core/messages';
import type { StreamMode } from '../services/runs/runs.schemas.js';
import type { RunnableGraph } from './graph-registry.js';

/** A checkpoint's address, as the agent server's API names it. */
import type { Checkpoint } from '../services/served-deployment/runtime-protocol.js';

export type { Checkpoint };

export type { StreamMode };

export type StreamedEvent = { event: string; data: unknown };

type Json = Record<string, unknown>;

/** The checkpoint a LangGraph config names, as the API presents it (null when it names no thread). */
export const checkpointOf = (config: unknown): Checkpoint | null => {
  const configurable = (config as RunnableConfig | undefined)?.configurable;
  if (!configurable?.thread_id) return null;
  return {
    thread_id: configurable.thread_id,
    checkpoint_ns: configurable.checkpoint_ns ?? '',
    checkpoint_id: configurable.checkpoint_id ?? null,
    checkpoint_map: configurable.checkpoint_map ?? null,
  };
};

const withoutInternals = (config: unknown) => {
  const value = config as RunnableConfig | undefined;
  if (!value?.configurable) return value;
  const { callbacks: _callbacks, ...rest } = value;
  return { ...rest, configurable: Object.fromEntries(Object.entries(value.configurable).filter(([key]) => !key.startsWith('__'))) };
};

/** Checkpoint payloads carry configs; the API shows checkpoint references (as the official server does). */
function presentCheckpointPayload(payload: Json): Json {
  const { parentConfig, config, ...rest } = payload;
  return {
    ...rest,
    config: withoutInternals(config),
    parent_config: withoutInternals(parentConfig),
    checkpoint: checkpointOf(config),
    parent_checkpoint: checkpointOf(parentConfig),
  };
}

function presentChunk(mode: string, chunk: unknown): unknown {
  if (mode === 'checkpoints') return presentCheckpointPayload(chunk as Json);
  if (mode === 'debug') {
    const debug = chunk as { type?: string; payload?: Json };
    if (debug.type === 'checkpoint' && debug.payload) return { ...debug, payload: presentCheckpointPayload(debug.payload) };
  }
  return chunk;
}

export type GraphRunOptions = {
  runId: string;
  modes: StreamMode[];
  subgraphs: boolean;
  config: RunnableConfig & Json;
  signal: AbortSignal;
  /** Receives the root graph's latest `values` (what runs/wait answers), whatever modes were asked for. */
  onValues: (values: unknown) => void;
  /**
   * Stream the run as the thread streaming protocol's events (LangGraph's `streamEvents` v3: lifecycle,
   * content-block messages, tools, extensions' `custom:<name>` channels…) instead of the stream modes.
   */
  protocol?: boolean;
};

/**
 * A run started through the thread streaming protocol: LangGraph's own protocol event stream, each
 * event stored as `<method>|<namespace…>` with its `params.data` (and `node`, where it names one), so
 * the thread stream (services/runs/thread-stream.ts) frames them from the run's stored events.
 */
async function* streamProtocolRun(graph: RunnableGraph, input: unknown, options: GraphRunOptions): AsyncGenerator<StreamedEvent> {
  const run = await graph.streamEvents(input, { ...options.config, runId: options.runId, signal: options.signal, version: 'v3' } as never);
  for await (const event of run as AsyncIterable<{ method: string; params: { namespace: string[]; node?: string; data: unknown } }>) {
    const { namespace, data } = event.params;
    if (event.method === 'values' && namespace.length === 0) options.onValues(data);
    const name = namespace.length ? `${event.method}|${namespace.join('|')}` : event.method;
    yield { event: name, data: event.method === 'tasks' ? presentTask(data) : data };
  }
}

/** A task event's config becomes the checkpoint it names, as the API presents checkpoints. */
function presentTask(task: unknown): unknown {
  const value = task as { state?: unknown } | null;
  const checkpoint = checkpointOf(value?.state);
  if (!value || !checkpoint) return task;
  const { state: _state, ...rest } = value;
  return { ...rest, checkpoint };
}

/** Streams one run of `graph` as agent-server events (metadata excluded: the caller sends it first). */
export async function* streamGraphRun(graph: RunnableGraph, input: unknown, options: GraphRunOptions): AsyncGenerator<StreamedEvent> {
  if (options.protocol) {
    yield* streamProtocolRun(graph, input, options);
    return;
  }
  const modes = new Set(options.modes);
  const libModes = new Set<string>([...modes].filter((mode) => mode !== 'events' && mode !== 'messages-tuple' && mode !== 'messages'));
  libModes.add('values');
  if (modes.has('messages-tuple')) libModes.add('messages');
  // LangGraph.js before 0.2.19 (no `lg_is_pregel` marker) yields bare chunks, not [mode, chunk], for a
  // one-mode list: asked for a second mode, it tags every chunk (what is not asked is not sent on).
  if (libModes.size === 1 && (graph as { lg_is_pregel?: unknown }).lg_is_pregel !== true) libModes.add('updates');
  const runOptions = {
    ...options.config,
    // The graph's root run takes the agent run's id: its trace is then addressable by the run id.
    runId: options.runId,
    streamMode: [...libModes],
    subgraphs: options.subgraphs,
    signal: options.signal,
  };
  const name = (mode: string, ns: string[]) => (options.subgraphs && ns.length ? `${mode}|${ns.join('|')}` : mode);

  const translate = function* (ns: string[], mode: string, chunk: unknown): Generator<StreamedEvent> {
    if (mode === 'values' && ns.length === 0) options.onValues(chunk);
    if (mode === 'messages') {
      if (modes.has('messages-tuple')) yield { event: name('messages', ns), data: chunk };
      return;
    }
    if (modes.has(mode as StreamMode)) yield { event: name(mode, ns), data: presentChunk(mode, chunk) };
  };
  const split = (chunk: unknown): [string[], string, unknown] => {
    const parts = chunk as unknown[];
    return options.subgraphs ? (parts as [string[], string, unknown]) : [[], parts[0] as string, parts[1]];
  };

  if (!modes.has('events') && !modes.has('messages')) {
    const stream = await graph.stream(input, runOptions as never);
    for await (const chunk of stream) yield* translate(...split(chunk));
    return;
  }

  // LangChain's event stream: graph chunks arrive as on_chain_stream events of the root run.
  const partial = new Map<string, { concat(other: unknown): unknown }>();
  const completed = new Set<string>();
  const events = graph.streamEvents(input, { ...runOptions, version: 'v2' } as never) as unknown;
  for await (const event of events as AsyncIterable<{ event: string; run_id: string; tags?: string[]; data: { chunk?: unknown }; metadata?: Json }>) {
    if (event.tags?.includes('langsmith:hidden')) continue;
    const isRootChunk = event.event === 'on_chain_stream' && event.run_id === options.runId;
    if (isRootChunk) {
      const [ns, mode, chunk] = split(event.data.chunk);
      yield* translate(ns, mode, chunk);
      if (modes.has('messages') && mode === 'values' && ns.length === 0) {
        const list = (chunk as { messages?: unknown } | null)?.messages;
        const fresh = (Array.isArray(list) ? list : list ? [list] : []).filter((message: { id?: string }) => {
          if (!message?.id || completed.has(message.id)) return false;
          completed.add(message.id);
          return true;
        });
        if (fresh.length) yield { event: 'messages/complete', data: fresh };
      }
    } else if (modes.has('events')) {
      yield { event: 'events', data: event };
    }
    if (modes.has('messages') && event.event === 'on_chat_model_stream' && !event.tags?.includes('nostream')) {
      const message = event.data.chunk as { id?: string } & { concat(other: unknown): unknown };
      if (!message?.id || !isBaseMessage(message)) continue;
      const known = partial.get(message.id);
      if (!known) {
        partial.set(message.id, message);
        yield { event: 'messages/metadata', data: { [message.id]: { metadata: event.metadata } } };
      } else {
        partial.set(message.id, known.concat(message) as never);
      }
      yield { event: 'messages/partial', data: [partial.get(message.id)] };
    }
  }
}
