// Fields the trace store derives from what a client sends: dotted order and hierarchy, status, token
// counts and cost, first-token time, thread id. Pure functions, shared by every ingest path.
import { isUtf8 } from 'node:buffer';
import { AppError } from '../../errors.js';

// One dotted-order segment: a UTC timestamp with microseconds, then the run id.
const SEGMENT = /^(\d{8}T\d{6}\d{1,6})Z([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

/** The run ids of a dotted order, root first; undefined when it is malformed. */
export function dottedOrderIds(dottedOrder: string): string[] | undefined {
  const ids: string[] = [];
  for (const segment of dottedOrder.split('.')) {
    const match = SEGMENT.exec(segment);
    if (!match) return undefined;
    ids.push(match[2]!.toLowerCase());
  }
  return ids;
}

/** The dotted-order segment of a run: `YYYYMMDDTHHMMSSffffffZ<id>`. */
export function dottedOrderSegment(startTime: string, id: string): string {
  const micros = isoMicros(startTime);
  const date = new Date(startTime);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return (
    `${date.getUTCFullYear()}${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}T` +
    `${pad(date.getUTCHours())}${pad(date.getUTCMinutes())}${pad(date.getUTCSeconds())}${pad(micros, 6)}Z${id}`
  );
}

/** Microseconds within the second of an ISO timestamp (Date keeps only milliseconds). */
function isoMicros(iso: string): number {
  const fraction = /\.(\d+)/.exec(iso)?.[1] ?? '';
  return Number(fraction.slice(0, 6).padEnd(6, '0'));
}

/**
 * Normalises a client timestamp (ISO string, with or without offset, or epoch milliseconds) to an ISO
 * string PostgreSQL reads as UTC, keeping microseconds. Throws VALIDATION_FAILED with `loc`.
 */
export function normalizeTimestamp(value: unknown, loc: (string | number)[]): string {
  if (typeof value === 'number' && Number.isFinite(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime()) && date.getUTCFullYear() > 0 && date.getUTCFullYear() < 10000) return date.toISOString();
  } else if (typeof value === 'string' && value.length <= 64) {
    // Python clients send naive UTC ("2024-05-01T10:00:00.123456"): read it as UTC, not server time.
    const text = /[zZ]|[+-]\d\d:?\d\d$/.test(value.slice(10)) ? value : `${value}Z`;
    const millis = Date.parse(text);
    if (/^\d{4}-\d\d-\d\d/.test(value) && !Number.isNaN(millis)) {
      const year = new Date(millis).getUTCFullYear();
      if (year > 0 && year < 10000) return text;
    }
  }
  throw invalid(loc, 'expected an ISO 8601 timestamp or epoch milliseconds', 'datetime_parsing');
}

export function invalid(loc: (string | number)[], msg: string, type = 'value_error'): AppError {
  return new AppError('VALIDATION_FAILED', `${loc.join('.')}: ${msg}`, [{ loc, msg, type }]);
}

export type RunStatus = 'success' | 'error' | 'pending';

export function deriveStatus(error: string | null | undefined, endTime: string | null | undefined): RunStatus {
  if (error != null) return 'error';
  return endTime != null ? 'success' : 'pending';
}

export type Usage = {
  promptTokens: number | null;
  completionTokens: number | null;
  totalTokens: number | null;
  promptCost: number | null;
  completionCost: number | null;
  totalCost: number | null;
};

const NO_USAGE: Usage = { promptTokens: null, completionTokens: null, totalTokens: null, promptCost: null, completionCost: null, totalCost: null };

const record = (value: unknown): Record<string, any> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, any>) : undefined;
const count = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.min(Math.round(value), 2_147_483_647) : null;
const money = (value: unknown): number | null => {
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) && number >= 0 ? number : null;
};

/**
 * Token counts and cost of an LLM run, from the places SDKs and LangChain put them, first match wins:
 * `outputs.usage_metadata` (langsmith `traceable`, LangChain messages), `extra.metadata.usage_metadata`,
 * the message of the first generation (LangChain chat models, serialised or not), and
 * `outputs.llm_output.token_usage` / `.usage` (OpenAI-style). Costs come from `*_cost` fields of the
 * usage metadata when the client computed them. Other run types carry no usage of their own.
 */
export function deriveUsage(runType: string | undefined, outputs: unknown, extra: unknown): Usage {
  if (runType !== undefined && runType !== 'llm') return NO_USAGE;
  const out = record(outputs);
  const generation = record(out?.generations?.[0]?.[0] ?? out?.generations?.[0]);
  const message = record(generation?.message);
  const candidates = [
    out?.usage_metadata,
    record(record(extra)?.metadata)?.usage_metadata,
    message?.usage_metadata,
    record(message?.kwargs)?.usage_metadata,
    record(out?.llm_output)?.token_usage,
    record(out?.llm_output)?.usage,
  ];
  for (const candidate of candidates) {
    const usage = record(candidate);
    if (!usage) continue;
    const prompt = count(usage.input_tokens ?? usage.prompt_tokens);
    const completion = count(usage.output_tokens ?? usage.completion_tokens);
    let total = count(usage.total_tokens);
    if (prompt === null && completion === null && total === null) continue;
    total ??= (prompt ?? 0) + (completion ?? 0);
    const promptCost = money(usage.input_cost ?? usage.prompt_cost);
    const completionCost = money(usage.output_cost ?? usage.completion_cost);
    let totalCost = money(usage.total_cost);
    if (totalCost === null && (promptCost !== null || completionCost !== null)) totalCost = (promptCost ?? 0) + (completionCost ?? 0);
    return { promptTokens: prompt, completionTokens: completion, totalTokens: total, promptCost, completionCost, totalCost };
  }
  return NO_USAGE;
}

/** Time of the first streamed token (`new_token` event), if the run streamed. */
export function deriveFirstTokenTime(events: unknown): string | null {
  if (!Array.isArray(events)) return null;
  for (const event of events) {
    const e = record(event);
    if (e?.name === 'new_token' && e.time !== undefined) {
      try {
        return normalizeTimestamp(e.time, ['events']);
      } catch {
        return null;
      }
    }
  }
  return null;
}

/** The conversation a run belongs to, as LangSmith reads it from metadata. */
export function deriveThreadId(extra: unknown): string | null {
  const metadata = record(record(extra)?.metadata);
  const value = metadata?.thread_id ?? metadata?.session_id ?? metadata?.conversation_id;
  return typeof value === 'string' || typeof value === 'number' ? String(value).slice(0, 256) : null;
}

// PostgreSQL rejects NUL in text and jsonb and lone surrogates in jsonb; clients send both.
const JSON_NUL = /(?<!\\)((?:\\\\)*)\\u0000/g;
// A surrogate escape without its other half: a high one not followed by a low one, or a low one not
// preceded by a high one. JSON.stringify escapes only those, but other writers (Python's json.dumps
// with ensure_ascii, say) escape every character past ASCII, pairs included, and a pair is kept.
const JSON_LONE_SURROGATE = /(?<!\\)((?:\\\\)*)(?:\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f][0-9a-f]{2})|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2})/gi;

/**
 * JSON from the wire (a multipart part), as its bytes, parsed only when something needs its value:
 * most runs' inputs and outputs are stored exactly as sent (see toJsonbValue), and PostgreSQL
 * validates them as it stores them. Also JSON text that arrived inside another format (an OTLP
 * string attribute) and was parsed there to be checked: it is stored as that text rather than
 * serialised again from its value.
 */
export class RawJson {
  private parsed: { value: unknown } | undefined;
  private decoded: string | undefined;
  private constructor(private readonly wire: Buffer | undefined) {}
  /** The bytes of a multipart part. */
  static ofBytes(bytes: Buffer): RawJson {
    return new RawJson(bytes);
  }
  /** JSON text already parsed by the caller (to `value`). */
  static ofParsedText(text: string, value: unknown): RawJson {
    const json = new RawJson(undefined);
    json.decoded = text;
    json.parsed = { value };
    return json;
  }
  /** The bytes as they came, when they came as bytes. */
  get bytes(): Buffer | undefined {
    return this.wire;
  }
  /** The JSON text (decoded once, on first use). */
  get text(): string {
    this.decoded ??= this.wire!.toString('utf8');
    return this.decoded;
  }
  /** The parsed value; throws SyntaxError for invalid JSON. */
  get value(): unknown {
    this.parsed ??= { value: JSON.parse(this.text) };
    return this.parsed.value;
  }
  /** Whether the text contains `hint` (without decoding bytes). */
  includes(hint: string): boolean {
    return this.wire ? this.wire.includes(hint) : this.text.includes(hint);
  }
  toJSON(): unknown {
    try {
      return this.value;
    } catch {
      throw invalid(['body'], 'a run field is not valid JSON', 'json_invalid');
    }
  }
}

/** The value of a field that may be raw JSON; `hint`, when given, must occur in its bytes for it to be parsed at all. */
export function jsonValue(value: unknown, loc: (string | number)[], hint?: string): unknown {
  if (!(value instanceof RawJson)) return value;
  if (hint !== undefined && !value.includes(hint)) return undefined;
  try {
    return value.value;
  } catch {
    throw invalid(loc, 'is not valid JSON', 'json_invalid');
  }
}

/** A JSON value as the ingest INSERT sends it: the wire's own bytes when they can go as they are, else text (toJsonb). */
export type JsonbValue = string | Buffer;

const ESCAPE = Buffer.from('\\u');

/**
 * JSON PostgreSQL's jsonb accepts, or null for undefined/null. Raw JSON goes as the bytes it came in
 * (no decoding to a string and encoding back) when nothing needs cleaning: valid UTF-8 without any
 * \u escape (the only way NUL or a lone surrogate reaches JSON text) and not `null`.
 */
export function toJsonbValue(value: unknown): JsonbValue | null {
  const bytes = value instanceof RawJson ? value.bytes : undefined;
  if (bytes && bytes.length > 8 && !bytes.includes(ESCAPE) && isUtf8(bytes)) return bytes;
  return toJsonb(value);
}

/** JSON text PostgreSQL's jsonb accepts, or null for undefined/null. */
export function toJsonb(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  let text = value instanceof RawJson ? value.text : JSON.stringify(value);
  if (value instanceof RawJson && /^\s*null\s*$/.test(text)) return null;
  if (text === undefined) return null;
  if (text.includes('\\u')) text = text.replace(JSON_NUL, '$1').replace(JSON_LONE_SURROGATE, '$1\\ufffd');
  return text;
}

/** Text PostgreSQL accepts (no NUL), or null. */
export function toText(value: unknown, max = 1_000_000): string | null {
  if (value === undefined || value === null) return null;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return (text.includes('\u0000') ? text.replaceAll('\u0000', '') : text).slice(0, max);
}
