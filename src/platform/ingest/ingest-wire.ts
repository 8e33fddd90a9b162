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

export type MultipartPart = { name: string; contentType: string; headers: Record<string, string>; data: Buffer };

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

/** Splits a multipart/form-data body into its parts (binary-safe). Throws VALIDATION_FAILED when malformed. */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const malformed = (msg: string) => invalid(['body'], `malformed multipart body: ${msg}`, 'multipart');
  const delimiter = Buffer.from(`--${boundary}`);
  const closing = Buffer.from(`\r\n--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw malformed('boundary not found');
  // The hot path of ingestion (an SDK batch is ~500 parts): header lines are scanned by hand rather than
  // split and matched with regular expressions, and a part's declared length is checked with one compare.
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // "--": the close delimiter
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++; // transport padding
    if (body[pos] !== 0x0d || body[pos + 1] !== 0x0a) throw malformed('expected CRLF after a boundary');
    pos += 2;
    const headerEnd = body.indexOf(HEADER_END, pos);
    if (headerEnd < 0) throw malformed('unterminated part headers');
    const headers: Record<string, string> = {};
    const block = body.toString('utf8', pos, headerEnd);
    for (let start = 0; start < block.length; ) {
      let end = block.indexOf('\r\n', start);
      if (end < 0) end = block.length;
      const colon = block.indexOf(':', start);
      if (colon > start && colon < end) headers[block.slice(start, colon).trim().toLowerCase()] = block.slice(colon + 1, end).trim();
      start = end + 2;
    }
    const disposition = headers['content-disposition'] ?? '';
    const nameMatch = NAME_PARAM.exec(disposition);
    const name = nameMatch ? (nameMatch[1] !== undefined ? (nameMatch[1].includes('\\') ? nameMatch[1].replace(/\\(.)/g, '$1') : nameMatch[1]) : nameMatch[2]!) : undefined;
    if (!isFormData(disposition) || name === undefined) throw malformed('a part has no form-data name');
    const contentType = headers['content-type'] ?? 'text/plain';
    const dataStart = headerEnd + 4;
    let dataEnd = -1;
    const declared = declaredLength(headers, contentType);
    if (declared !== undefined) {
      const end = dataStart + declared;
      // Trust the declared length only when the boundary is exactly there; otherwise scan.
      if (end + closing.length <= body.length && body.compare(closing, 0, closing.length, end, end + closing.length) === 0) dataEnd = end;
    }
    if (dataEnd < 0) dataEnd = body.indexOf(closing, dataStart);
    if (dataEnd < 0) throw malformed(`part ${name} is not terminated by the boundary`);
    parts.push({ name, contentType, headers, data: body.subarray(dataStart, dataEnd) });
    pos = dataEnd + CRLF.length;
  }
  return parts;
}

/** `form-data` as the disposition type (case-insensitive, followed by a non-word character or the end). */
function isFormData(disposition: string): boolean {
  if (disposition.length < 9 || disposition.slice(0, 9).toLowerCase() !== 'form-data') return false;
  if (disposition.length === 9) return true;
  const next = disposition.charCodeAt(9);
  // \b after "form-data": the next character is not [A-Za-z0-9_].
  return !((next >= 48 && next <= 57) || (next >= 65 && next <= 90) || (next >= 97 && next <= 122) || next === 95);
}

function declaredLength(headers: Record<string, string>, contentType: string): number | undefined {
  let text = headers['content-length'];
  if (text === undefined) {
    // `; length=N` in the content type (what the langsmith SDK sends).
    const at = contentType.toLowerCase().indexOf('length');
    if (at < 0) return undefined;
    text = /;\s*length\s*=\s*(\d+)/i.exec(contentType)?.[1];
  }
  if (text === undefined) return undefined;
  text = text.trim();
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

/**
 * Turns multipart parts into a RunBatch: `post.<id>` / `patch.<id>` hold the run, `post.<id>.<field>`
 * (inputs, outputs, events, extra, error, serialized) its large fields, `attachment.<id>.<name>` files.
 * `feedback.<id>` parts hold feedback on runs (the SDK batches createFeedback with runs), stored after them.
 */
export function multipartToBatch(parts: MultipartPart[], maxDepth = DEFAULT_JSON_MAX_DEPTH): RunBatch {
  const runs = { post: new Map<string, Record<string, unknown>>(), patch: new Map<string, Record<string, unknown>>() };
  const fields: { method: 'post' | 'patch'; id: string; field: string; value: unknown; part: string }[] = [];
  const attachments: RunAttachment[] = [];
  const feedback: Record<string, unknown>[] = [];
  for (const part of parts) {
    const [kind, rawId, ...rest] = part.name.split('.');
    if (kind === 'feedback') {
      if (!isUuid(rawId) || rest.length) throw invalid(partLoc(part), 'expected feedback.<feedback id>');
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
      if (!isUuid(rawId) || !rest.length) throw invalid(partLoc(part), 'expected attachment.<run id>.<name>');
      attachments.push({ runId: rawId, name: rest.join('.'), contentType: part.contentType.split(';')[0]!.trim(), data: Buffer.from(part.data) });
      continue;
    }
    if ((kind !== 'post' && kind !== 'patch') || !isUuid(rawId) || rest.length > 1) {
      throw invalid(partLoc(part), 'unknown part: expected post.<id>, patch.<id>, post.<id>.<field>, patch.<id>.<field> or attachment.<id>.<name>');
    }
    const id = rawId.toLowerCase();
    assertJsonDepth(part.data, maxDepth, partLoc(part));
    let value: unknown;
    if (rest.length === 1 && LAZY_FIELDS.has(rest[0]!)) {
      // Stored as sent; parsed later only if a derived field needs it.
      value = RawJson.ofBytes(part.data);
    } else {
      try {
        value = JSON.parse(part.data.toString('utf8'));
      } catch {
        throw invalid(partLoc(part), 'is not valid JSON', 'json_invalid');
      }
    }
    if (rest.length === 0) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(partLoc(part), 'expected a JSON object', 'dict_type');
      if (runs[kind].has(id)) throw invalid(partLoc(part), 'appears twice in this request');
      // The object is this part's own (just parsed): setting id in place saves a copy of every run.
      (value as Record<string, unknown>).id = id;
      runs[kind].set(id, value as Record<string, unknown>);
    } else {
      if (!RUN_FIELDS.has(rest[0]!)) throw invalid(partLoc(part), `unknown run field ${rest[0]}: expected one of ${[...RUN_FIELDS].join(', ')}`);
      fields.push({ method: kind, id, field: rest[0]!, value, part: part.name });
    }
  }
  for (const { method, id, field, value, part } of fields) {
    const run = runs[method].get(id);
    if (!run) throw invalid(['body', part], `has no ${method}.${id} part`);
    run[field] = value;
  }
  return { post: [...runs.post.values()], patch: [...runs.patch.values()], attachments, ...(feedback.length ? { feedback } : {}) };
}
