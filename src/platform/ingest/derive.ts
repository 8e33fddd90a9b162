// Fields the trace store derives from what a client sends: dotted order and hierarchy, status, token
// counts and cost, first-token time, thread id. Pure functions, shared by every ingest path.
import { isUtf8 } from 'node:buffer';
import { AppError } from '../../errors.js';

// One dotted-order segment: a UTC timestamp with microseconds, then the run id (`T` and `Z` in either
// case): /^(\d{8}T\d{6}\d{1,6})Z([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i, read
// by hand (every run of every batch has one; a regular expression's match per segment was its garbage).
const UUID_LENGTH = 36;

const isDigit = (code: number) => code >= 48 && code <= 57;
const isHex = (code: number) => isDigit(code) || (code >= 97 && code <= 102) || (code >= 65 && code <= 70);

/** Whether text[start, end) is one dotted-order segment. */
function isSegment(text: string, start: number, end: number): boolean {
  const idAt = end - UUID_LENGTH;
  // 8 + T + 6 + 1..6 digits + Z before the id.
  const stamp = idAt - 1 - start;
  if (stamp < 16 || stamp > 21) return false;
  for (let i = start; i < idAt - 1; i++) if (i !== start + 8 && !isDigit(text.charCodeAt(i))) return false;
  if ((text.charCodeAt(start + 8) | 0x20) !== 0x74 || (text.charCodeAt(idAt - 1) | 0x20) !== 0x7a) return false; // t, z
  for (let i = 0; i < UUID_LENGTH; i++) {
    const code = text.charCodeAt(idAt + i);
    if (i === 8 || i === 13 || i === 18 || i === 23 ? code !== 0x2d : !isHex(code)) return false;
  }
  return true;
}

/** The run ids of a dotted order, root first; undefined when it is malformed. */
export function dottedOrderIds(dottedOrder: string): string[] | undefined {
  const ids: string[] = [];
  for (let start = 0; ; ) {
    let end = dottedOrder.indexOf('.', start);
    if (end < 0) end = dottedOrder.length;
    if (!isSegment(dottedOrder, start, end)) return undefined;
    ids.push(dottedOrder.slice(end - UUID_LENGTH, end).toLowerCase());
    if (end === dottedOrder.length) return ids;
    start = end + 1;
  }
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

// The years PostgreSQL's timestamptz and Date agree on: 0001-01-01 up to 10000-01-01 (exclusive), in epoch ms.
const FIRST_MS = -62_135_596_800_000;
const END_MS = 253_402_300_800_000;
const DATE_PREFIX = /^\d{4}-\d\d-\d\d/;

/** Whether an ISO text names its zone after the date: a Z anywhere past it, or a ±hh[:]mm offset at its end (/[zZ]|[+-]\d\d:?\d\d$/ on all but the first 10 characters). */
function hasZone(text: string): boolean {
  for (let i = 10; i < text.length; i++) if ((text.charCodeAt(i) | 0x20) === 0x7a) return true;
  const n = text.length;
  if (!isDigit(text.charCodeAt(n - 1)) || !isDigit(text.charCodeAt(n - 2))) return false;
  // ±hhmm, or ±hh:mm
  const colon = text.charCodeAt(n - 3) === 0x3a ? 1 : 0;
  const sign = n - 5 - colon;
  return sign >= 10 && isDigit(text.charCodeAt(n - 3 - colon)) && isDigit(text.charCodeAt(n - 4 - colon)) && (text.charCodeAt(sign) === 0x2b || text.charCodeAt(sign) === 0x2d);
}

/**
 * Normalises a client timestamp (ISO string, with or without offset, or epoch milliseconds) to an ISO
 * string PostgreSQL reads as UTC, keeping microseconds. Throws VALIDATION_FAILED with `loc` (and
 * `field` after it, when given).
 */
export function normalizeTimestamp(value: unknown, loc: (string | number)[], field?: string): string {
  if (typeof value === 'number' && Number.isFinite(value)) {
    // Date keeps whole milliseconds (toward zero): the year is that of the truncated value.
    const millis = Math.trunc(value);
    if (millis >= FIRST_MS && millis < END_MS) return new Date(value).toISOString();
  } else if (typeof value === 'string' && value.length <= 64) {
    // Python clients send naive UTC ("2024-05-01T10:00:00.123456"): read it as UTC, not server time.
    const text = hasZone(value) ? value : `${value}Z`;
    const millis = Date.parse(text);
    if (DATE_PREFIX.test(value) && millis >= FIRST_MS && millis < END_MS) return text;
  }
  throw invalid(field === undefined ? loc : [...loc, field], 'expected an ISO 8601 timestamp or epoch milliseconds', 'datetime_parsing');
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

/**
 * The value of a field that may be raw JSON; `hint`, when given, must occur in its bytes for it to be
 * parsed at all. Invalid JSON is VALIDATION_FAILED at `loc` (and `field` after it, when given).
 */
export function jsonValue(value: unknown, loc: (string | number)[], field?: string, hint?: string): unknown {
  if (!(value instanceof RawJson)) return value;
  if (hint !== undefined && !value.includes(hint)) return undefined;
  try {
    return value.value;
  } catch {
    throw invalid(field === undefined ? loc : [...loc, field], 'is not valid JSON', 'json_invalid');
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
