// The ingestion wire: request bodies (gzip, deflate, brotli or zstd; chunked or not), the langsmith
// SDK's multipart format and its JSON bodies, turned into a RunBatch, and OTLP bodies into the spans
// of an export (otlp-wire.ts). It decodes and answers what it decoded; ingest-threads.ts decides where
// a request is decoded (an ingest thread, or the request's own) and hands the result to the services.
//
// Multipart is parsed here rather than with busboy: busboy decodes every part without a filename as
// text (the SDK's attachments are binary parts without a filename) and hides part headers, and the
// wire gives each part's length (`Content-Length` part header or `length=N` content-type parameter),
// which lets us jump over a part instead of scanning it for the boundary.
import type { Readable } from 'node:stream';
import { AppError } from '../../errors.js';
import { isUuid } from '../../ids.js';
import { DEFAULT_ZSTD_WINDOW_BYTES, decompress } from '../../limits/decompress.js';
import { assertJsonDepth, DEFAULT_JSON_MAX_DEPTH } from '../../limits/json.js';
import { invalid, RawJson } from './derive.js';
import { parseOtlpBody } from './otlp-wire.js';
import type { IngestRequest, OtlpTraces, RunAttachment, RunBatch } from './ingest-types.js';

export type { IngestRequest } from './ingest-types.js';

/** Limits on what a body may decode to (config.ts: AGENT_PLATFORM_ZSTD_WINDOW_LIMIT, AGENT_PLATFORM_JSON_MAX_DEPTH). */
type WireGuards = { zstdWindowBytes: number; jsonMaxDepth: number };
const DEFAULT_GUARDS: WireGuards = { zstdWindowBytes: DEFAULT_ZSTD_WINDOW_BYTES, jsonMaxDepth: DEFAULT_JSON_MAX_DEPTH };

const tooLarge = (limit: number) => new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds ${limit} bytes.`);

/** Reads a request body as sent (still encoded), up to `limit` bytes; PAYLOAD_TOO_LARGE beyond. */
export async function readRawBody(stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Leaving the loop must not destroy the request: the 413 is answered once the client has sent the
  // rest (afterRefusedBody in middleware/errors.ts), not by a reset mid-upload.
  for await (const chunk of stream.iterator({ destroyOnReturn: false })) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      stream.resume(); // drain, so the connection can answer
      throw tooLarge(limit);
    }
    chunks.push(chunk as Buffer);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

/**
 * Undoes a body's Content-Encoding. `limit` bounds the decompressed size (a small gzip body can
 * expand enormously). Throws PAYLOAD_TOO_LARGE or BAD_REQUEST (unknown encoding, corrupt data).
 */
export async function decodeBody(raw: Buffer, contentEncoding: string | undefined, limit: number, guards = DEFAULT_GUARDS): Promise<Buffer> {
  const encodings = (contentEncoding ?? '')
    .split(',')
    .map((value) => value.trim().toLowerCase())
    .filter((value) => value && value !== 'identity');
  let body = raw;
  // Encodings are listed in the order they were applied.
  for (const encoding of encodings.reverse()) body = await decompress(body, encoding, { outputBytes: limit, zstdWindowBytes: guards.zstdWindowBytes });
  return body;
}

/** Reads a request body and undoes its Content-Encoding (see readRawBody and decodeBody). */
export async function readBody(stream: Readable, contentEncoding: string | undefined, limit: number, guards = DEFAULT_GUARDS): Promise<Buffer> {
  return decodeBody(await readRawBody(stream, limit), contentEncoding, limit, guards);
}

/** Parses a JSON body; VALIDATION_FAILED when it is not JSON or nests deeper than the limit. An empty body is `{}`. */
export function parseJsonBody(body: Buffer, maxDepth = DEFAULT_JSON_MAX_DEPTH): unknown {
  if (body.length === 0) return {};
  assertJsonDepth(body, maxDepth);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new AppError('VALIDATION_FAILED', 'Request body is not valid JSON.', [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }]);
  }
}

/** A JSON body that must be an object. */
export function asObject(value: unknown, loc = 'body'): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new AppError('VALIDATION_FAILED', `${loc}: expected a JSON object`, [{ loc: [loc], msg: 'expected a JSON object', type: 'dict_type' }]);
  }
  return value as Record<string, unknown>;
}

/**
 * Decodes and parses an ingestion request: the runs of `POST /runs/multipart`, `/runs/batch`,
 * `POST /runs` or `PATCH /runs/{id}` as a RunBatch, or the spans of an OTLP export. `limit` bounds
 * the decoded body.
 */
export async function decodeIngestRequest(request: IngestRequest, limit: number, guards: WireGuards): Promise<{ batch: RunBatch } | { traces: OtlpTraces }> {
  const raw = Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength);
  if (request.format === 'otlp-protobuf' || request.format === 'otlp-json') {
    const body = await decodeBody(raw, request.contentEncoding, limit, guards);
    return { traces: parseOtlpBody(body, request.format === 'otlp-protobuf' ? 'protobuf' : 'json', guards.jsonMaxDepth) };
  }
  if (request.format === 'multipart') {
    const boundary = multipartBoundary(request.contentType);
    return { batch: multipartToBatch(parseMultipart(await decodeBody(raw, request.contentEncoding, limit, guards), boundary), guards.jsonMaxDepth) };
  }
  const body = asObject(parseJsonBody(await decodeBody(raw, request.contentEncoding, limit, guards), guards.jsonMaxDepth));
  if (request.format === 'run') return { batch: { post: [body], patch: [] } };
  if (request.format === 'patch') return { batch: { post: [], patch: [{ ...body, id: request.runId }] } };
  for (const key of ['post', 'patch'] as const) {
    if (body[key] !== undefined && body[key] !== null && !Array.isArray(body[key])) {
      throw new AppError('VALIDATION_FAILED', `body.${key}: expected a list`, [{ loc: ['body', key], msg: 'expected a list', type: 'list_type' }]);
    }
  }
  return { batch: { post: (body.post as RunBatch['post']) ?? [], patch: (body.patch as RunBatch['patch']) ?? [] } };
}

/** A part of a multipart/form-data body; `filename` is the Content-Disposition's filename parameter, when it has one. */
export type MultipartPart = { name: string; contentType: string; filename?: string; data: Buffer };

const CRLF = Buffer.from('\r\n');

/** The boundary parameter of a multipart/form-data content type; BAD_REQUEST when absent. */
export function multipartBoundary(contentType: string | undefined): string {
  const match = /^multipart\/form-data\s*;(?:.*;)?\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType ?? '');
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary || boundary.length > 200) throw new AppError('BAD_REQUEST', 'Expected Content-Type multipart/form-data with a boundary.');
  return boundary;
}

const HEADER_END = Buffer.from('\r\n\r\n');
const NAME_PARAM = /;\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))/i;
const FILENAME_PARAM = /;\s*filename\s*=\s*"([^"]*)"/i;
// The part headers ingestion reads, lowercase (header names are matched case-insensitively).
const CONTENT_DISPOSITION = 'content-disposition';
const CONTENT_TYPE = 'content-type';
const CONTENT_LENGTH = 'content-length';
// How the SDKs write a part's disposition: `form-data; name="<name>"`, nothing after it.
const SIMPLE_DISPOSITION = 'form-data; name="';

/**
 * Splits a multipart/form-data body into its parts (binary-safe). Throws VALIDATION_FAILED when malformed.
 *
 * The hot path of ingestion (an SDK batch is ~500 parts): no object of headers, no string per header
 * name, and a disposition in the SDKs' own form gives its name without a regular expression (other
 * forms go through NAME_PARAM). A part's declared length is checked with one compare.
 */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const malformed = (msg: string) => invalid(['body'], `malformed multipart body: ${msg}`, 'multipart');
  const delimiter = Buffer.from(`--${boundary}`);
  const closing = Buffer.from(`\r\n--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw malformed('boundary not found');
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // "--": the close delimiter
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++; // transport padding
    if (body[pos] !== 0x0d || body[pos + 1] !== 0x0a) throw malformed('expected CRLF after a boundary');
    pos += 2;
    const headerEnd = body.indexOf(HEADER_END, pos);
    if (headerEnd < 0) throw malformed('unterminated part headers');
    // The block is decoded once and read with string scans; only the values of the three headers read
    // are taken out of it (a repeated header: the last one wins).
    const block = body.toString('utf8', pos, headerEnd);
    let disposition: string | undefined;
    let contentType = 'text/plain';
    let length: string | undefined;
    for (let start = 0; start < block.length; ) {
      let end = block.indexOf('\r\n', start);
      if (end < 0) end = block.length;
      const colon = block.indexOf(':', start);
      if (colon > start && colon < end) {
        const header = headerOf(block, start, colon);
        if (header === CONTENT_DISPOSITION) disposition = block.slice(colon + 1, end).trim();
        else if (header === CONTENT_TYPE) contentType = block.slice(colon + 1, end).trim();
        else if (header === CONTENT_LENGTH) length = block.slice(colon + 1, end).trim();
      }
      start = end + 2;
    }
    const named = disposition === undefined ? undefined : partName(disposition);
    if (!named) throw malformed('a part has no form-data name');
    const name = named.name;
    const dataStart = headerEnd + 4;
    let dataEnd = -1;
    const declared = length !== undefined ? digits(length) : lengthParameter(contentType);
    if (declared !== undefined) {
      const end = dataStart + declared;
      // Trust the declared length only when the boundary is exactly there; otherwise scan.
      if (end + closing.length <= body.length && body.compare(closing, 0, closing.length, end, end + closing.length) === 0) dataEnd = end;
    }
    if (dataEnd < 0) dataEnd = body.indexOf(closing, dataStart);
    if (dataEnd < 0) throw malformed(`part ${name} is not terminated by the boundary`);
    const part: MultipartPart = { name, contentType, data: body.subarray(dataStart, dataEnd) };
    if (named.filename !== undefined) part.filename = named.filename;
    parts.push(part);
    pos = dataEnd + CRLF.length;
  }
  return parts;
}

/** Which of the headers read the name in block[start, end) is (surrounding whitespace aside, ASCII case ignored), if any. */
function headerOf(block: string, start: number, end: number): string | undefined {
  while (start < end && isSpace(block.charCodeAt(start))) start++;
  while (end > start && isSpace(block.charCodeAt(end - 1))) end--;
  const header = end - start === CONTENT_DISPOSITION.length ? CONTENT_DISPOSITION : end - start === CONTENT_TYPE.length ? CONTENT_TYPE : end - start === CONTENT_LENGTH.length ? CONTENT_LENGTH : undefined;
  if (header === undefined) return undefined;
  for (let i = 0; i < header.length; i++) {
    const code = block.charCodeAt(start + i);
    if ((code >= 65 && code <= 90 ? code + 32 : code) !== header.charCodeAt(i)) return undefined;
  }
  return header;
}

/** The form-data name (and filename) of a Content-Disposition value; undefined when it has none. */
function partName(disposition: string): { name: string; filename?: string } | undefined {
  // The SDKs' form: `form-data; name="…"` with no quote or backslash inside, which NAME_PARAM reads as
  // the text between the quotes, and which has no filename.
  if (
    disposition.startsWith(SIMPLE_DISPOSITION) &&
    disposition.indexOf('"', SIMPLE_DISPOSITION.length) === disposition.length - 1 &&
    !disposition.includes('\\', SIMPLE_DISPOSITION.length)
  ) {
    return { name: disposition.slice(SIMPLE_DISPOSITION.length, -1) };
  }
  const match = NAME_PARAM.exec(disposition);
  if (!match || !isFormData(disposition)) return undefined;
  const name = match[1] !== undefined ? (match[1].includes('\\') ? match[1].replace(/\\(.)/g, '$1') : match[1]) : match[2]!;
  const filename = FILENAME_PARAM.exec(disposition)?.[1];
  return filename === undefined ? { name } : { name, filename };
}

/** `form-data` as the disposition type (case-insensitive, followed by a non-word character or the end). */
function isFormData(disposition: string): boolean {
  if (disposition.length < 9 || disposition.slice(0, 9).toLowerCase() !== 'form-data') return false;
  if (disposition.length === 9) return true;
  const next = disposition.charCodeAt(9);
  // \b after "form-data": the next character is not [A-Za-z0-9_].
  return !((next >= 48 && next <= 57) || (next >= 65 && next <= 90) || (next >= 97 && next <= 122) || next === 95);
}

// JavaScript's \s, for reading a parameter as a regular expression would.
const isSpace = (code: number) =>
  (code >= 0x09 && code <= 0x0d) || code === 0x20 || code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) ||
  code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;

/** The `; length=N` parameter of a content type (what the langsmith SDK sends), as /;\s*length\s*=\s*(\d+)/i reads it. */
function lengthParameter(contentType: string): number | undefined {
  for (let semicolon = contentType.indexOf(';'); semicolon >= 0; semicolon = contentType.indexOf(';', semicolon + 1)) {
    let i = semicolon + 1;
    while (i < contentType.length && isSpace(contentType.charCodeAt(i))) i++;
    if (contentType.length - i < 6) return undefined;
    let word = true;
    for (let k = 0; k < 6 && word; k++) word = (contentType.charCodeAt(i + k) | 0x20) === 'length'.charCodeAt(k);
    if (!word) continue;
    i += 6;
    while (i < contentType.length && isSpace(contentType.charCodeAt(i))) i++;
    if (contentType.charCodeAt(i) !== 0x3d) continue;
    i++;
    while (i < contentType.length && isSpace(contentType.charCodeAt(i))) i++;
    let end = i;
    while (end < contentType.length && contentType.charCodeAt(end) >= 48 && contentType.charCodeAt(end) <= 57) end++;
    if (end > i) return digits(contentType.slice(i, end));
  }
  return undefined;
}

/** A declared length: up to 12 decimal digits, nothing else. */
function digits(text: string): number | undefined {
  if (text.length === 0 || text.length > 12) return undefined;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return value;
}

const RUN_FIELDS = new Set(['inputs', 'outputs', 'events', 'extra', 'error', 'serialized']);
// Fields kept as text: stored as sent, parsed only when a derived field needs them (error is tiny).
const LAZY_FIELDS = new Set(['inputs', 'outputs', 'events', 'serialized', 'extra']);

const partLoc = (part: MultipartPart) => ['body', part.name];

const unknownPart = (part: MultipartPart) =>
  invalid(partLoc(part), 'unknown part: expected post.<id>, patch.<id>, post.<id>.<field>, patch.<id>.<field> or attachment.<id>.<name>');

type EarlyField = { method: 'post' | 'patch'; id: string; field: string; value: unknown; part: string };

/**
 * Turns multipart parts into a RunBatch: `post.<id>` / `patch.<id>` hold the run, `post.<id>.<field>`
 * (inputs, outputs, events, extra, error, serialized) its large fields, `attachment.<id>.<name>` files.
 * `feedback.<id>` parts hold feedback on runs (the SDK batches createFeedback with runs), stored after them.
 */
export function multipartToBatch(parts: MultipartPart[], maxDepth = DEFAULT_JSON_MAX_DEPTH): RunBatch {
  const runs = { post: new Map<string, Record<string, unknown>>(), patch: new Map<string, Record<string, unknown>>() };
  // Field parts that came before their run's part (the SDKs send the run first): set when it comes.
  let early: Map<string, EarlyField[]> | undefined;
  const attachments: RunAttachment[] = [];
  const feedback: Record<string, unknown>[] = [];
  for (const part of parts) {
    // <kind>.<id>[.<rest>], read without splitting (rest may hold dots: an attachment's name).
    const name = part.name;
    const dot = name.indexOf('.');
    const second = dot < 0 ? -1 : name.indexOf('.', dot + 1);
    const kind = dot === 4 && name.startsWith('post') ? 'post' : dot === 5 && name.startsWith('patch') ? 'patch' : dot < 0 ? name : name.slice(0, dot);
    const rawId = dot < 0 ? undefined : name.slice(dot + 1, second < 0 ? name.length : second);
    const rest = second < 0 ? undefined : name.slice(second + 1);
    if (kind === 'feedback') {
      if (!isUuid(rawId) || rest !== undefined) throw invalid(partLoc(part), 'expected feedback.<feedback id>');
      assertJsonDepth(part.data, maxDepth, partLoc(part));
      let value: unknown;
      try {
        value = JSON.parse(part.data.toString('utf8'));
      } catch {
        throw invalid(partLoc(part), 'is not valid JSON', 'json_invalid');
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(partLoc(part), 'expected a JSON object', 'dict_type');
      feedback.push({ ...(value as Record<string, unknown>), id: rawId.toLowerCase() });
      continue;
    }
    if (kind === 'attachment') {
      if (!isUuid(rawId) || rest === undefined) throw invalid(partLoc(part), 'expected attachment.<run id>.<name>');
      attachments.push({ runId: rawId, name: rest, contentType: part.contentType.split(';')[0]!.trim(), data: Buffer.from(part.data) });
      continue;
    }
    if ((kind !== 'post' && kind !== 'patch') || rawId === undefined || rest?.includes('.')) throw unknownPart(part);
    const id = rawId.toLowerCase();
    // The id of a field part whose run came before it was checked with that run's part.
    if (!(rest !== undefined && runs[kind].has(id)) && !isUuid(rawId)) throw unknownPart(part);
    assertJsonDepth(part.data, maxDepth, partLoc(part));
    let value: unknown;
    if (rest !== undefined && LAZY_FIELDS.has(rest)) {
      // Stored as sent; parsed later only if a derived field needs it.
      value = RawJson.ofBytes(part.data);
    } else {
      try {
        value = JSON.parse(part.data.toString('utf8'));
      } catch {
        throw invalid(partLoc(part), 'is not valid JSON', 'json_invalid');
      }
    }
    if (rest === undefined) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(partLoc(part), 'expected a JSON object', 'dict_type');
      if (runs[kind].has(id)) throw invalid(partLoc(part), 'appears twice in this request');
      // The object is this part's own (just parsed): setting id in place saves a copy of every run.
      const run = value as Record<string, unknown>;
      run.id = id;
      runs[kind].set(id, run);
      // A field part wins over the run's own field, whichever came first.
      const waiting = early?.get(`${kind}.${id}`);
      if (waiting) {
        for (const field of waiting) run[field.field] = field.value;
        early!.delete(`${kind}.${id}`);
      }
    } else {
      if (!RUN_FIELDS.has(rest)) throw invalid(partLoc(part), `unknown run field ${rest}: expected one of ${[...RUN_FIELDS].join(', ')}`);
      const run = runs[kind].get(id);
      if (run) {
        run[rest] = value;
      } else {
        early ??= new Map();
        const key = `${kind}.${id}`;
        const waiting = early.get(key);
        const field: EarlyField = { method: kind, id, field: rest, value, part: name };
        if (waiting) waiting.push(field);
        else early.set(key, [field]);
      }
    }
  }
  // The first field part (in the body's order) whose run never came.
  if (early?.size) {
    const { method, id, part } = early.values().next().value![0]!;
    throw invalid(['body', part], `has no ${method}.${id} part`);
  }
  return { post: [...runs.post.values()], patch: [...runs.patch.values()], attachments, ...(feedback.length ? { feedback } : {}) };
}
