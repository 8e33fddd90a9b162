// OpenTelemetry spans as trace runs. The transport (otlp-wire.ts) decodes an OTLP export request,
// protobuf or JSON, into plain shapes (OtlpTraces, ingest-types.ts); this module maps each span to a
// run create as the langsmith SDK would have sent it and stores them through ingestRunBatch, the one
// write path.
//
// The mapping, following LangSmith's own OTLP ingestion:
// - ids: a run's id is a uuid v5 of its trace and span ids, so a retried export (the exporters retry
//   on any 5xx or timeout) names the same runs and stores nothing twice; the parent span gives the
//   parent run the same way. Exporters send spans as they end, so children usually come before their
//   parents, often in an earlier request: ingestRunBatch keeps such runs under their parent's id and
//   adopts them into the trace when it arrives (RunBatch.parentsMayFollow).
// - `langsmith.*` attributes (what the langsmith SDK's OTel mode writes) win over the GenAI semantic
//   conventions (`gen_ai.*`), which win over OpenInference (`openinference.span.kind`, `input.value`,
//   `llm.token_count.*`). Whatever no rule consumed is kept in extra.metadata under its own key.
import { hash } from 'node:crypto';
import { assertJsonTextDepth } from '../../limits/json.js';
import { RawJson } from './derive.js';
import type { Deps } from '../../context.js';
import { ingestRunBatch, type RunCreate } from './ingest.service.js';
import type { Ingester, IngestResult, OtlpAttributes, OtlpSpan, OtlpTraces } from './ingest-types.js';
import { RUN_TYPES } from '../services/traces/traces.schemas.js';

export type OtlpIngestOptions = {
  /** The project named by the request (`Langsmith-Project`), ahead of the spans' own. */
  project?: string | null;
  /** Limit on the nesting of JSON held in string attributes (prompts, completions). */
  jsonMaxDepth: number;
};

// Fixed: changing it would give every span a new run id, and retried exports would duplicate runs.
const SPAN_RUN_NAMESPACE = Buffer.from('6f0c3f553b1c4d439a3c0a7c5e0f2a61', 'hex');

/**
 * The run id of a span, stable across retries of the same export: the uuid v5 (RFC 9562: SHA-1 of the
 * namespace and the name) of `<trace id>:<span id>`. Hashed here in one call rather than with the uuid
 * package, which re-parses the namespace and re-encodes the name on every call (about 5× the cost).
 */
export function spanRunId(traceId: string, spanId: string): string {
  // The name is hex and a colon: one byte per character.
  const name = `${traceId}:${spanId}`;
  if (name.length > NAME.length - SPAN_RUN_NAMESPACE.length) throw new RangeError(`not a trace and span id: ${name}`);
  const length = NAME.write(name, SPAN_RUN_NAMESPACE.length, 'latin1');
  const digest = hash('sha1', NAME.subarray(0, SPAN_RUN_NAMESPACE.length + length), 'buffer');
  digest[6] = (digest[6]! & 0x0f) | 0x50;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  const hex = digest.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// The namespace, then room for the name (validated ids: 32 + 1 + 16 characters).
const NAME = Buffer.alloc(SPAN_RUN_NAMESPACE.length + 49);
SPAN_RUN_NAMESPACE.copy(NAME);

/** spanRunId through the batch's cache. */
function cachedRunId(runIds: Map<string, string>, traceId: string, spanId: string): string {
  const key = `${traceId}:${spanId}`;
  let id = runIds.get(key);
  if (id === undefined) {
    id = spanRunId(traceId, spanId);
    runIds.set(key, id);
  }
  return id;
}

const RUN_TYPE_SET = new Set<string>(RUN_TYPES);

// OpenInference span kinds as LangSmith run types (AGENT and the rest are chains of calls).
const OPENINFERENCE_RUN_TYPES: Record<string, string> = {
  LLM: 'llm',
  CHAIN: 'chain',
  TOOL: 'tool',
  RETRIEVER: 'retriever',
  RERANKER: 'retriever',
  EMBEDDING: 'embedding',
  AGENT: 'chain',
  GUARDRAIL: 'chain',
  EVALUATOR: 'chain',
};

// gen_ai.operation.name values of the GenAI semantic conventions.
const GENAI_RUN_TYPES: Record<string, string> = {
  chat: 'llm',
  text_completion: 'llm',
  completion: 'llm',
  generate_content: 'llm',
  embeddings: 'embedding',
  execute_tool: 'tool',
  invoke_agent: 'chain',
  create_agent: 'chain',
};

const MAX_REJECTIONS_NAMED = 20;

/**
 * Stores the spans of an OTLP export as runs of the ingester's workspace (the caller has checked
 * workspaces:write). Spans that cannot be runs (malformed ids, no start time, unreadable attributes)
 * are rejected one by one and counted in `rejected`, the rest stored; spans already stored are
 * `duplicates`, which an exporter's retry is, not an error. Throws as ingestRunBatch does.
 */
export async function ingestOtlpSpans(deps: Pick<Deps, 'db' | 'config'>, who: Ingester, traces: OtlpTraces, options: OtlpIngestOptions): Promise<IngestResult> {
  const { posts, rejected } = otlpSpansToRuns(traces, options);
  const result = posts.length ? await ingestRunBatch(deps, who, { post: posts, parentsMayFollow: true }) : { accepted: 0, duplicates: [], patched: 0, deferredPatches: 0 };
  return rejected ? { ...result, rejected } : result;
}

/** The spans of an OTLP export as run creates, and the spans rejected (with why, the first few named). */
export function otlpSpansToRuns(traces: OtlpTraces, options: OtlpIngestOptions): { posts: RunCreate[]; rejected?: { count: number; message: string } } {
  const posts: RunCreate[] = [];
  const rejections: string[] = [];
  let rejected = 0;
  // A parent's run id is usually its own span's, computed when that span is mapped: hashed once per batch.
  const runIds = new Map<string, string>();
  for (const resourceSpans of traces.resourceSpans) {
    const serviceName = typeof resourceSpans.resource['service.name'] === 'string' ? (resourceSpans.resource['service.name'] as string) : null;
    for (const scopeSpans of resourceSpans.scopeSpans) {
      for (const span of scopeSpans.spans) {
        const problem = span.invalid ?? spanProblem(span);
        if (problem) {
          rejected++;
          if (rejections.length < MAX_REJECTIONS_NAMED) rejections.push(`span ${span.spanId || '(no id)'} of trace ${span.traceId || '(no id)'}: ${problem}`);
          continue;
        }
        posts.push(spanToRun(span, resourceSpans.resource, scopeSpans.scope, { project: options.project || null, serviceName, jsonMaxDepth: options.jsonMaxDepth, runIds }));
      }
    }
  }
  if (!rejected) return { posts };
  const more = rejected > rejections.length ? `; and ${rejected - rejections.length} more` : '';
  return { posts, rejected: { count: rejected, message: `${rejected} span${rejected > 1 ? 's' : ''} rejected: ${rejections.join('; ')}${more}` } };
}

const HEX_TRACE_ID = /^[0-9a-f]{32}$/;
const HEX_SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO = /^0+$/;

/** Why a span cannot be stored as a run, or undefined. */
function spanProblem(span: OtlpSpan): string | undefined {
  if (!HEX_TRACE_ID.test(span.traceId) || ZERO.test(span.traceId)) return 'trace_id must be 16 bytes, not all zero';
  if (!HEX_SPAN_ID.test(span.spanId) || ZERO.test(span.spanId)) return 'span_id must be 8 bytes, not all zero';
  if (span.parentSpanId && !HEX_SPAN_ID.test(span.parentSpanId)) return 'parent_span_id must be empty or 8 bytes';
  if (span.startTimeUnixNano <= 0n) return 'start_time_unix_nano is required';
  // PostgreSQL's timestamptz ends in 294276; years past 9999 are not ISO 8601 either.
  if (span.startTimeUnixNano >= MAX_NANOS || span.endTimeUnixNano >= MAX_NANOS) return 'a time is beyond the year 9999';
  return undefined;
}

const MAX_NANOS = BigInt(Date.UTC(10000, 0, 1)) * 1_000_000n;

/** An ISO 8601 timestamp with microseconds (what dotted orders and the store keep). */
function nanosToIso(nanos: bigint): string {
  // One BigInt operation: microseconds since 1970 are exact as a Number for another 280,000 years.
  const micros = Number(nanos / 1000n);
  const millis = Math.floor(micros / 1000);
  const iso = new Date(millis).toISOString();
  return `${iso.slice(0, -1)}${String(micros - millis * 1000).padStart(3, '0')}Z`;
}

type MapContext = { project: string | null; serviceName: string | null; jsonMaxDepth: number; runIds: Map<string, string> };

// The mapping runs once per span: module-level helpers rather than closures made per span (tsx, which
// runs the platform, names every closure it creates, and they were a tenth of the mapping's time).

/** An attribute a rule consumes: taken out of the span's remaining attributes (the rest become metadata). */
function take(rest: OtlpAttributes, key: string): unknown {
  const value = rest[key];
  delete rest[key];
  return value;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);

function count(value: unknown): number | undefined {
  const parsed = typeof value === 'string' ? Number(value) : value;
  return typeof parsed === 'number' && Number.isFinite(parsed) && parsed >= 0 ? parsed : undefined;
}

const METADATA_PREFIX = 'langsmith.metadata.';

/** One span as a run create (snake_case, as the langsmith SDK posts it). */
function spanToRun(span: OtlpSpan, resource: OtlpAttributes, scope: { name: string; version: string } | null, context: MapContext): RunCreate {
  // Attributes a rule consumes are taken out; the rest become metadata.
  const rest: OtlpAttributes = { ...span.attributes };

  const metadata: Record<string, unknown> = {};
  for (const key of Object.keys(rest)) {
    if (key.startsWith(METADATA_PREFIX)) metadata[key.slice(METADATA_PREFIX.length)] = take(rest, key);
  }

  const name = text(take(rest, 'langsmith.trace.name')) ?? (span.name || 'span');
  const sessionName = text(take(rest, 'langsmith.trace.session_name'));

  // Model and provider, under the metadata keys LangSmith reads them from.
  const model = text(take(rest, 'gen_ai.request.model')) ?? text(take(rest, 'gen_ai.response.model')) ?? text(take(rest, 'llm.model_name'));
  if (model) metadata.ls_model_name = model;
  const provider = text(take(rest, 'gen_ai.system')) ?? text(take(rest, 'gen_ai.provider.name')) ?? text(take(rest, 'llm.provider')) ?? text(take(rest, 'llm.system'));
  if (provider) metadata.ls_provider = provider;
  // The conversation a span belongs to (GenAI, OpenInference): what LangSmith groups threads by.
  const conversation = text(take(rest, 'gen_ai.conversation.id')) ?? text(take(rest, 'session.id'));
  if (conversation && metadata.thread_id === undefined) metadata.thread_id = conversation;

  // Token counts, into usage_metadata (where usage is derived from for LLM runs).
  const inputTokens = count(take(rest, 'gen_ai.usage.input_tokens')) ?? count(take(rest, 'gen_ai.usage.prompt_tokens')) ?? count(take(rest, 'llm.token_count.prompt'));
  const outputTokens = count(take(rest, 'gen_ai.usage.output_tokens')) ?? count(take(rest, 'gen_ai.usage.completion_tokens')) ?? count(take(rest, 'llm.token_count.completion'));
  const totalTokens = count(take(rest, 'gen_ai.usage.total_tokens')) ?? count(take(rest, 'llm.token_count.total'));
  const hasTokens = inputTokens !== undefined || outputTokens !== undefined || totalTokens !== undefined;
  if (hasTokens) {
    metadata.usage_metadata = {
      input_tokens: inputTokens ?? 0,
      output_tokens: outputTokens ?? 0,
      total_tokens: totalTokens ?? (inputTokens ?? 0) + (outputTokens ?? 0),
    };
  }

  const runType = resolveRunType(take(rest, 'langsmith.span.kind'), take(rest, 'gen_ai.operation.name'), take(rest, 'openinference.span.kind'), Boolean(model) || hasTokens);

  // Every candidate is taken (in this order), so each consumed attribute leaves the metadata even when an earlier one won.
  const inputs = ioSide(context, rest, 'input', 'prompt');
  const outputs = ioSide(context, rest, 'output', 'completion');

  const tags = tagList(take(rest, 'langsmith.span.tags'));

  // What is left is the span's own description.
  for (const [key, value] of Object.entries(rest)) if (metadata[key] === undefined) metadata[key] = value;

  const events = span.events.map(eventOf);
  const runId = cachedRunId(context.runIds, span.traceId, span.spanId);
  const ended = span.endTimeUnixNano > 0n;
  return {
    id: runId,
    name,
    run_type: runType,
    start_time: nanosToIso(span.startTimeUnixNano),
    end_time: ended ? nanosToIso(span.endTimeUnixNano < span.startTimeUnixNano ? span.startTimeUnixNano : span.endTimeUnixNano) : null,
    parent_run_id: span.parentSpanId ? cachedRunId(context.runIds, span.traceId, span.parentSpanId) : null,
    session_name: context.project ?? sessionName ?? context.serviceName ?? null,
    inputs: inputs ?? null,
    outputs: outputs ?? null,
    error: span.status.code === 2 ? errorMessage(span) : null,
    events: events.length ? events : null,
    tags,
    extra: {
      metadata,
      otel: {
        trace_id: span.traceId,
        span_id: span.spanId,
        parent_span_id: span.parentSpanId || null,
        kind: SPAN_KINDS[span.kind] ?? 'unspecified',
        scope: scope && scope.name ? scope : null,
        resource,
        ...(span.links.length ? { links: span.links.map((link) => ({ trace_id: link.traceId, span_id: link.spanId, attributes: link.attributes })) } : {}),
      },
    },
  };
}

function eventOf(event: OtlpSpan['events'][number]) {
  return { name: event.name, time: nanosToIso(event.timeUnixNano), kwargs: event.attributes };
}

const SPAN_KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];

function resolveRunType(langsmithKind: unknown, genAiOperation: unknown, openInferenceKind: unknown, looksLikeLlm: boolean): string {
  if (typeof langsmithKind === 'string' && RUN_TYPE_SET.has(langsmithKind.toLowerCase())) return langsmithKind.toLowerCase();
  if (typeof genAiOperation === 'string' && GENAI_RUN_TYPES[genAiOperation]) return GENAI_RUN_TYPES[genAiOperation]!;
  if (typeof openInferenceKind === 'string' && OPENINFERENCE_RUN_TYPES[openInferenceKind.toUpperCase()]) return OPENINFERENCE_RUN_TYPES[openInferenceKind.toUpperCase()]!;
  return looksLikeLlm ? 'llm' : 'chain';
}

/**
 * The first candidate that gives a value, as a run's inputs or outputs (an object; other values are
 * wrapped). An object sent as JSON text is stored as that text (RawJson): parsed here only to check
 * it, not serialised again. Text with \u escapes goes the long way, serialised from its value, so
 * escaped NUL and lone surrogates are cleaned exactly as for any other value (toJsonb).
 */
/** A span's inputs or outputs from each convention's attributes (GenAI names the two sides prompt and completion). */
function ioSide(context: MapContext, rest: OtlpAttributes, kind: 'input' | 'output', genAi: 'prompt' | 'completion') {
  return ioValue(
    context,
    kind,
    take(rest, `gen_ai.${genAi}`),
    take(rest, `langsmith.${kind}s`),
    messagesValue(take(rest, `gen_ai.${kind}.messages`)),
    openInferenceValue(take(rest, `${kind}.value`), take(rest, `${kind}.mime_type`)),
    indexedMessages(rest, `gen_ai.${genAi}.`),
  );
}

function ioValue(context: MapContext, key: 'input' | 'output', ...candidates: unknown[]): Record<string, unknown> | RawJson | undefined {
  let found: unknown;
  for (const value of candidates) {
    if (value !== undefined && value !== null && value !== '') {
      found = value;
      break;
    }
  }
  if (found === undefined) return undefined;
  const value = typeof found === 'string' ? parseJsonText(found, context.jsonMaxDepth) : found;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return value !== found && !(found as string).includes('\\u') ? RawJson.ofParsedText(found as string, value) : (value as Record<string, unknown>);
  }
  return Array.isArray(value) ? { messages: value } : { [key]: value };
}

/** JSON held in a string attribute, parsed when it is JSON within the depth limit; else the string. */
function parseJsonText(text: string, maxDepth: number): unknown {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return text;
  try {
    assertJsonTextDepth(text, maxDepth);
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** GenAI's `gen_ai.input.messages` / `gen_ai.output.messages`: a list of messages, often as JSON text. */
function messagesValue(value: unknown): unknown {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : { messages: value };
}

/** OpenInference's `input.value` / `output.value`, JSON when its mime type says so. */
function openInferenceValue(value: unknown, mimeType: unknown): unknown {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && mimeType !== 'application/json') return value.trimStart().startsWith('{') ? value : { value };
  return value;
}

/** Older GenAI conventions spread messages over `gen_ai.prompt.0.role`, `gen_ai.prompt.0.content`, …. */
function indexedMessages(rest: OtlpAttributes, prefix: string): unknown {
  const messages: Record<string, unknown>[] = [];
  for (const key of Object.keys(rest)) {
    if (!key.startsWith(prefix)) continue;
    const [index, ...field] = key.slice(prefix.length).split('.');
    const at = Number(index);
    if (!Number.isInteger(at) || at < 0 || at > 10_000 || !field.length) continue;
    (messages[at] ??= {})[field.join('.')] = rest[key];
    delete rest[key];
  }
  const list = messages.filter(Boolean);
  return list.length ? { messages: list } : undefined;
}

function tagList(value: unknown): string[] | null {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value === 'string' && value) return value.split(',').map((tag) => tag.trim()).filter(Boolean);
  return null;
}

/** A failed span's error: its status message, else the exception it recorded. */
function errorMessage(span: OtlpSpan): string {
  const exception = span.events.find((event) => event.name === 'exception');
  const type = exception?.attributes['exception.type'];
  const message = exception?.attributes['exception.message'];
  const stack = exception?.attributes['exception.stacktrace'];
  const recorded = [type, message].filter((part) => typeof part === 'string' && part).join(': ');
  const head = span.status.message || recorded || 'Error';
  return typeof stack === 'string' && stack ? `${head}\n\n${stack}` : head;
}
