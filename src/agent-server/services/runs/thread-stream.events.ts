// The thread streaming protocol's events, framed from a run's stored events (the same rows the run's
// SSE stream reads). A run started through the protocol stores LangGraph's protocol events
// (`<method>|<namespace…>`, agent-server/runtime/stream-modes.ts); a run started through the runs API stores its
// stream modes, of which values, updates, custom and tasks frame the same way. The root lifecycle
// (running, then completed, failed or interrupted) is the server's: it follows the run's row.
import type { RunEvent } from './run-stream.js';

type Json = Record<string, unknown>;

export type ProtocolEvent = {
  type: 'event';
  event_id: string;
  seq: number;
  method: string;
  params: { namespace: string[]; timestamp: number; node?: string; data: unknown };
};

/** The channels a subscription may name, besides `custom:<name>`. */
const CHANNELS = ['values', 'updates', 'messages', 'tools', 'lifecycle', 'input', 'checkpoints', 'tasks', 'custom'] as const;

export const isChannel = (value: string): boolean => (CHANNELS as readonly string[]).includes(value) || /^custom:.+/.test(value);

/** What a subscription (or an SSE event stream) receives. */
export type EventFilter = { channels: ReadonlySet<string>; namespaces?: string[][]; depth?: number };

/** The channel an event travels on (`custom:<name>` for a named custom event). */
function channelOf(event: ProtocolEvent): string | undefined {
  switch (event.method) {
    case 'input.requested':
    case 'input.answered':
      return 'input';
    case 'custom': {
      const name = (event.params.data as { name?: unknown } | null)?.name;
      return typeof name === 'string' ? `custom:${name}` : 'custom';
    }
    default:
      return (CHANNELS as readonly string[]).includes(event.method) ? event.method : undefined;
  }
}

/**
 * Whether `namespace` starts with `prefix`. A prefix segment without `:` also matches a segment with a
 * dynamic suffix (`agent` matches `agent:<task id>`), as the SDK matches on its side.
 */
function startsWith(namespace: string[], prefix: string[]): boolean {
  if (prefix.length > namespace.length) return false;
  return prefix.every((segment, i) => {
    const candidate = namespace[i]!;
    if (candidate === segment) return true;
    if (segment.includes(':')) return false;
    const colon = candidate.indexOf(':');
    return colon !== -1 && candidate.slice(0, colon) === segment;
  });
}

export function matchesFilter(filter: EventFilter, event: ProtocolEvent): boolean {
  const channel = channelOf(event);
  if (!channel) return false;
  if (!filter.channels.has(channel) && !(channel.startsWith('custom:') && filter.channels.has('custom'))) return false;
  if (!filter.namespaces?.length) return true;
  const { namespace } = event.params;
  return filter.namespaces.some((prefix) => startsWith(namespace, prefix) && (filter.depth === undefined || namespace.length - prefix.length <= filter.depth));
}

const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

const MESSAGE_TYPES = new Set(['human', 'ai', 'system', 'tool', 'function', 'remove']);
const messageType = (type: unknown) => (type === 'assistant' ? 'ai' : type === 'user' ? 'human' : type);
const isMessage = (value: unknown): value is Json => isRecord(value) && MESSAGE_TYPES.has(messageType(value.type) as string);
const BLOCK_TYPES = new Set([
  'text', 'reasoning', 'tool_call', 'tool_call_chunk', 'invalid_tool_call', 'server_tool_call', 'server_tool_call_chunk', 'server_tool_call_result',
  'image', 'audio', 'video', 'file', 'non_standard',
]);

/** A content block as the protocol names it: standard blocks kept (media in snake_case), others wrapped. */
function contentBlock(block: unknown): unknown {
  if (typeof block === 'string') return { type: 'text', text: block };
  if (!isRecord(block) || typeof block.type !== 'string') return undefined;
  if (BLOCK_TYPES.has(block.type)) {
    if (['image', 'audio', 'video', 'file'].includes(block.type) && typeof block.mimeType === 'string') {
      const { mimeType, ...rest } = block;
      return typeof rest.mime_type === 'string' ? rest : { ...rest, mime_type: mimeType };
    }
    return block;
  }
  if (block.type === 'image_url') {
    const image = block.image_url;
    const url = typeof image === 'string' ? image : isRecord(image) && typeof image.url === 'string' ? image.url : undefined;
    return url === undefined ? undefined : { type: 'image', url };
  }
  if (block.type === 'input_audio' && isRecord(block.input_audio)) {
    const { data, mimeType } = block.input_audio;
    return { type: 'audio', ...(typeof data === 'string' ? { data } : {}), ...(typeof mimeType === 'string' ? { mimeType } : {}) };
  }
  return { type: 'non_standard', value: { ...block } };
}

function toolCalls(calls: unknown[]): { valid: Json[]; invalid: Json[] } {
  const valid: Json[] = [];
  const invalid: Json[] = [];
  for (const call of calls) {
    if (!isRecord(call)) continue;
    const fn = isRecord(call.function) ? call.function : undefined;
    const id = typeof call.id === 'string' ? { id: call.id } : {};
    const name = typeof call.name === 'string' ? call.name : typeof fn?.name === 'string' ? fn.name : undefined;
    let args: unknown = 'args' in call ? call.args : fn?.arguments;
    let parsed = true;
    if (typeof args === 'string') {
      try {
        args = args ? JSON.parse(args) : {};
      } catch {
        parsed = false;
      }
    } else if (args == null) {
      args = {};
    }
    if (name === undefined) invalid.push({ ...id, ...(typeof args === 'string' ? { args } : {}), error: 'Incomplete tool call.', type: 'invalid_tool_call' });
    else if (!parsed) invalid.push({ ...id, name, args, error: 'Malformed args.', type: 'invalid_tool_call' });
    else valid.push({ ...id, name, args, type: 'tool_call' });
  }
  return { valid, invalid };
}

/** A message in state as the protocol shows it: its type, content blocks, ids and tool calls, no provider internals. */
function protocolMessage(value: Json): Json {
  const type = messageType(value.type) as string;
  const content = value.content ?? '';
  let blocks: unknown = content;
  if (Array.isArray(content)) {
    const normalized = content.map(contentBlock).filter((block) => block !== undefined);
    blocks = normalized.length ? normalized : content;
  }
  const message: Json = { type, content: blocks };
  if (typeof value.id === 'string') message.id = value.id;
  if (typeof value.name === 'string') message.name = value.name;
  if (isRecord(value.response_metadata) && Object.keys(value.response_metadata).length) message.response_metadata = value.response_metadata;
  if ((type === 'ai' || type === 'human') && typeof value.example === 'boolean') message.example = value.example;
  if (type === 'tool') {
    if (typeof value.tool_call_id === 'string') message.tool_call_id = value.tool_call_id;
    if (value.status === 'success' || value.status === 'error') message.status = value.status;
    if ('artifact' in value) message.artifact = value.artifact;
  }
  if (type === 'ai') {
    const kwargs = isRecord(value.additional_kwargs) ? value.additional_kwargs : {};
    const raw = Array.isArray(value.tool_calls) && value.tool_calls.length ? value.tool_calls : Array.isArray(kwargs.tool_calls) ? kwargs.tool_calls : [];
    const { valid, invalid } = toolCalls(raw);
    const declaredInvalid = Array.isArray(value.invalid_tool_calls) && value.invalid_tool_calls.length
      ? value.invalid_tool_calls.filter(isRecord).map((call) => ({
          ...(typeof call.id === 'string' ? { id: call.id } : {}),
          ...(typeof call.name === 'string' ? { name: call.name } : {}),
          ...(typeof call.args === 'string' ? { args: call.args } : {}),
          error: typeof call.error === 'string' ? call.error : 'Malformed args.',
          type: 'invalid_tool_call',
        }))
      : invalid;
    if (valid.length) message.tool_calls = valid;
    if (declaredInvalid.length) message.invalid_tool_calls = declaredInvalid;
  }
  return message;
}

/** State values (or an update) as the protocol shows them: messages normalised, interrupts left out. */
function protocolState(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (isMessage(item) ? protocolMessage(item) : protocolState(item)));
  if (!isRecord(value)) return value;
  const state: Json = {};
  for (const [key, entry] of Object.entries(value)) {
    if (key === '__interrupt__') continue;
    state[key] = key === 'messages' && Array.isArray(entry) ? entry.map((item) => (isMessage(item) ? protocolMessage(item) : item)) : protocolState(entry);
  }
  return state;
}

/** Interrupts (`[{id, value}]`, or state holding `__interrupt__`) as input requests. */
function inputRequests(value: unknown): { interrupt_id: string; payload: unknown }[] {
  const list = Array.isArray(value) ? value : isRecord(value) && Array.isArray(value.__interrupt__) ? value.__interrupt__ : [];
  return list.filter((entry): entry is Json => isRecord(entry) && typeof entry.id === 'string').map((entry) => ({ interrupt_id: entry.id as string, payload: entry.value }));
}

/** Root lifecycle status of a run's stored status. */
const lifecycleStatus = (status: string) => (status === 'success' ? 'completed' : status === 'error' || status === 'timeout' ? 'failed' : status === 'interrupted' ? 'interrupted' : 'running');

/** How many positions of a thread's stream each run has: a run's events are numbered from its position times this. */
export const RUN_SPAN = 1_000_000_000;

/**
 * Frames one run's stored events as protocol events, numbered from `position * RUN_SPAN`. Event ids
 * are the run's id and the event's number in the run, so they never change, whatever else happens
 * on the thread.
 */
export class RunEventFramer {
  private local = 0;
  private readonly interrupts = new Set<string>();
  private ended = false;
  /** Namespaces seen, with their last lifecycle status and graph name (for agent.getTree). */
  readonly namespaces = new Map<string, { namespace: string[]; status: string; graphName: string }>();

  constructor(
    private readonly run: { id: string; position: number; protocol: boolean },
    readonly graphName: string,
  ) {}

  private event(method: string, namespace: string[], data: unknown, node?: string): ProtocolEvent {
    this.local += 1;
    return {
      type: 'event',
      event_id: `${this.run.id}.${this.local}`,
      seq: this.run.position * RUN_SPAN + this.local,
      method,
      params: { namespace, timestamp: Date.now(), ...(node !== undefined ? { node } : {}), data },
    };
  }

  private track(namespace: string[], status: string, graphName?: string) {
    for (let length = 1; length <= namespace.length; length++) {
      const partial = namespace.slice(0, length);
      const key = partial.join('\0');
      const known = this.namespaces.get(key);
      const last = partial[partial.length - 1]!;
      if (length === namespace.length) this.namespaces.set(key, { namespace: partial, status, graphName: graphName ?? known?.graphName ?? last.split(':')[0]! });
      else if (!known) this.namespaces.set(key, { namespace: partial, status: 'started', graphName: last.split(':')[0]! });
    }
  }

  private *requests(namespace: string[], value: unknown): Generator<ProtocolEvent> {
    for (const request of inputRequests(value)) {
      if (this.interrupts.has(request.interrupt_id)) continue;
      this.interrupts.add(request.interrupt_id);
      yield this.event('input.requested', namespace, request);
    }
  }

  /** The protocol events of one stored event. */
  *frame(stored: RunEvent): Generator<ProtocolEvent> {
    if (stored.event === 'metadata') {
      yield this.event('lifecycle', [], { event: 'running', graph_name: this.graphName });
      return;
    }
    const data = JSON.parse(stored.data) as unknown;
    if (stored.event === 'error') {
      this.ended = true;
      const message = isRecord(data) && typeof data.message === 'string' ? data.message : JSON.stringify(data);
      yield this.event('lifecycle', [], { event: 'failed', graph_name: this.graphName, error: message });
      return;
    }
    const [method, ...namespace] = stored.event.split('|') as [string, ...string[]];
    if (method === 'lifecycle') {
      // The root's lifecycle is the server's (it follows the run's row); subgraphs' come from LangGraph.
      if (!namespace.length || !isRecord(data)) return;
      this.track(namespace, String(data.event), typeof data.graph_name === 'string' ? data.graph_name : undefined);
      yield this.event('lifecycle', namespace, data);
      return;
    }
    if (namespace.length) this.track(namespace, this.namespaces.get(namespace.join('\0'))?.status ?? 'started');
    switch (method) {
      case 'values': {
        yield* this.requests(namespace, data);
        const state = protocolState(data);
        if (!isRecord(state) || Object.keys(state).length) yield this.event('values', namespace, state);
        return;
      }
      case 'updates': {
        // A protocol run stores {node, values}; a runs-API run stores {<node>: values}.
        let node: string | undefined;
        let values: unknown = data;
        if (this.run.protocol && isRecord(data) && 'values' in data) {
          node = typeof data.node === 'string' ? data.node : undefined;
          values = data.values;
        } else if (isRecord(data) && Object.keys(data).length === 1) {
          [node, values] = Object.entries(data)[0]!;
        }
        if (node === '__interrupt__') {
          yield* this.requests(namespace, values);
          return;
        }
        yield this.event('updates', namespace, protocolState(isRecord(values) ? values : { value: values }), node);
        return;
      }
      case 'custom':
        yield this.event('custom', namespace, this.run.protocol && isRecord(data) && 'payload' in data ? data : { payload: data });
        return;
      case 'tasks':
        yield this.event('tasks', namespace, data);
        return;
      case 'messages':
      case 'tools':
      case 'checkpoints':
        // Only a protocol run stores these in the protocol's shape.
        if (this.run.protocol) yield this.event(method, namespace, data);
        return;
      default:
        if (this.run.protocol && method.startsWith('custom:') && method.length > 'custom:'.length) {
          yield this.event('custom', namespace, { name: method.slice('custom:'.length), payload: data });
        }
    }
  }

  /** The run's last event once it has ended with `status` (none after a failure already framed). */
  *end(status: string): Generator<ProtocolEvent> {
    if (this.ended) return;
    this.ended = true;
    let event = lifecycleStatus(status);
    if (event === 'running') return;
    if (event === 'completed' && this.interrupts.size) event = 'interrupted';
    yield this.event('lifecycle', [], { event, graph_name: this.graphName });
  }
}
