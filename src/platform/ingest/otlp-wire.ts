// The OTLP/HTTP wire for traces: ExportTraceServiceRequest bodies in protobuf (`application/x-protobuf`)
// or OTLP's JSON mapping (`application/json`), decoded into the plain shapes the traces service maps to
// runs (platform/ingest/otlp-ingest.service.ts), and the answers OTLP clients read: an
// ExportTraceServiceResponse, or a google.rpc.Status for errors, in the request's own encoding.
//
// Protobuf is decoded by protobufjs from the OTLP definitions below: the messages of
// opentelemetry-proto's collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
// common/v1/common.proto and resource/v1/resource.proto that a trace export uses, with their field
// numbers (no OpenTelemetry package on npm ships the .proto files or a request decoder any more).
// Unknown fields (newer protocol versions) are skipped by the decoder.
import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs';
import { AppError } from '../../errors.js';
import type { OtlpAttributes, OtlpSpan, OtlpTraces } from './ingest-types.js';
import { assertJsonDepth } from '../../limits/json.js';

const OTLP_TRACE_PROTO = `
syntax = "proto3";
package opentelemetry.proto;

message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }

message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ExportTraceServiceResponse { ExportTracePartialSuccess partial_success = 1; }
message ExportTracePartialSuccess { int64 rejected_spans = 1; string error_message = 2; }

message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  fixed32 flags = 16;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  uint32 dropped_attributes_count = 10;
  repeated Event events = 11;
  uint32 dropped_events_count = 12;
  repeated Link links = 13;
  uint32 dropped_links_count = 14;
  Status status = 15;
  message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
  message Link { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; repeated KeyValue attributes = 4; uint32 dropped_attributes_count = 5; fixed32 flags = 6; }
}
message Status { string message = 2; int32 code = 3; }

// google.rpc.Status: OTLP/HTTP's error body.
message RpcStatus { int32 code = 1; string message = 2; }
`;

const root = protobuf.parse(OTLP_TRACE_PROTO).root;

/**
 * proto3 strings are checked to be UTF-8 as they are read. protobufjs checks in JavaScript (short
 * strings) or with a fatal TextDecoder (64 bytes and more): over a span's attribute keys and values
 * that was about a third of decoding. Here node:buffer's native isUtf8 checks and the Buffer slices,
 * with the same error for invalid bytes (a 400 naming it).
 */
class OtlpReader extends protobuf.BufferReader {
  override stringVerify(): string {
    const length = this.size();
    const start = this.pos;
    const end = start + length;
    if (end > this.len) throw new RangeError(`index out of range: ${start} + ${length} > ${this.len}`);
    this.pos = end;
    const bytes = (this.buf as Buffer).subarray(start, end);
    if (!isUtf8(bytes)) throw new TypeError('The encoded data was not valid for encoding utf-8');
    return bytes.toString('utf8');
  }
}
const ExportTraceServiceRequest = root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');
const ExportTraceServiceResponse = root.lookupType('opentelemetry.proto.ExportTraceServiceResponse');
const RpcStatus = root.lookupType('opentelemetry.proto.RpcStatus');

export type OtlpEncoding = 'protobuf' | 'json';

/** The encoding a Content-Type names (parameters ignored), or undefined for anything OTLP/HTTP does not define. */
export function otlpEncoding(contentType: string | undefined): OtlpEncoding | undefined {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-protobuf' || type === 'application/protobuf') return 'protobuf';
  if (type === 'application/json') return 'json';
  return undefined;
}

const malformed = (encoding: OtlpEncoding, reason: string) =>
  new AppError('BAD_REQUEST', `Request body is not a valid OTLP ExportTraceServiceRequest (${encoding}): ${reason}`);

/**
 * Reads a decoded (Content-Encoding undone) OTLP trace export body. BAD_REQUEST when it is not one;
 * VALIDATION_FAILED when JSON nests deeper than the limit, as for every ingest body. Spans whose
 * attributes nest deeper than the limit come back marked invalid (the service rejects them alone).
 */
export function parseOtlpBody(body: Buffer, encoding: OtlpEncoding, maxDepth: number): OtlpTraces {
  if (encoding === 'protobuf') {
    let message: protobuf.Message;
    try {
      message = ExportTraceServiceRequest.decode(new OtlpReader(body));
    } catch (error) {
      // protobufjs: "index out of range", "invalid wire type", "max depth exceeded" (nesting over 100).
      throw malformed('protobuf', (error as Error).message);
    }
    return fromProtobuf(message as unknown as PbRequest, maxDepth);
  }
  if (body.length === 0) throw malformed('json', 'the body is empty');
  assertJsonDepth(body, maxDepth);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw malformed('json', 'the body is not JSON');
  }
  return fromJson(parsed, maxDepth);
}

/** The answer to an export: empty when everything was accepted, else partial_success naming what was rejected. */
export function encodeExportResponse(encoding: OtlpEncoding, rejected: { count: number; message: string } | undefined): Buffer | Record<string, unknown> {
  const response = rejected ? { partialSuccess: { rejectedSpans: rejected.count, errorMessage: rejected.message } } : {};
  if (encoding === 'json') return response;
  return Buffer.from(ExportTraceServiceResponse.encode(ExportTraceServiceResponse.fromObject(response)).finish());
}

/**
 * An ExportTraceServiceRequest in protobuf from its protobufjs object form (camelCase fields, ids as
 * bytes, times as decimal strings): what an exporter sends, for the benchmark's load.
 */
export function encodeExportRequest(request: Record<string, unknown>): Buffer {
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(request)).finish());
}

// google.rpc.Code values by HTTP status, for the Status body of an error.
const RPC_CODES: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 409: 6, 413: 8, 415: 3, 422: 3, 429: 8, 503: 14 };

/** An error as OTLP/HTTP answers it: a google.rpc.Status in the request's encoding. */
export function encodeStatus(encoding: OtlpEncoding, httpStatus: number, message: string): Buffer | Record<string, unknown> {
  const status = { code: RPC_CODES[httpStatus] ?? (httpStatus >= 500 ? 13 : 2), message };
  if (encoding === 'json') return status;
  return Buffer.from(RpcStatus.encode(RpcStatus.fromObject(status)).finish());
}

// ───────────────────────────── protobuf ─────────────────────────────

type Long = { low: number; high: number; unsigned: boolean; toString(): string };
type PbAnyValue = Partial<{
  stringValue: string;
  boolValue: boolean;
  intValue: Long | number;
  doubleValue: number;
  arrayValue: { values?: PbAnyValue[] };
  kvlistValue: { values?: PbKeyValue[] };
  bytesValue: Uint8Array;
}>;
type PbKeyValue = { key: string; value?: PbAnyValue | null };
type PbSpan = {
  traceId: Uint8Array;
  spanId: Uint8Array;
  parentSpanId: Uint8Array;
  name: string;
  kind: number;
  startTimeUnixNano: Long | number;
  endTimeUnixNano: Long | number;
  attributes: PbKeyValue[];
  events: { timeUnixNano: Long | number; name: string; attributes: PbKeyValue[] }[];
  links: { traceId: Uint8Array; spanId: Uint8Array; attributes: PbKeyValue[] }[];
  status?: { code: number; message: string } | null;
};
type PbRequest = {
  resourceSpans: { resource?: { attributes: PbKeyValue[] } | null; scopeSpans: { scope?: { name: string; version: string } | null; spans: PbSpan[] }[] }[];
};

class TooDeep extends Error {}

const hex = (bytes: Uint8Array | undefined) => (bytes && bytes.length ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') : '');

/** fixed64 (unsigned) as protobufjs gives it: a Long when `long` is installed, else a number. */
function unsignedNanos(value: Long | number | undefined): bigint {
  if (value === undefined || value === null) return 0n;
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? BigInt(Math.trunc(value)) : 0n;
  return (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
}

function int64(value: Long | number): number | string {
  if (typeof value === 'number') return value;
  const big = BigInt(value.toString());
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString();
}

// Per value and per span below: plain functions and loops, no closures made per item (tsx, which runs
// the platform, names every closure it creates, a measurable share of decoding).

const own = (value: object, key: string) => Object.hasOwn(value, key);

function pbValue(value: PbAnyValue | null | undefined, depth: number, maxDepth: number): unknown {
  if (!value) return null;
  if (depth > maxDepth) throw new TooDeep();
  if (own(value, 'stringValue')) return value.stringValue;
  if (own(value, 'boolValue')) return value.boolValue;
  if (own(value, 'intValue')) return int64(value.intValue!);
  if (own(value, 'doubleValue')) return finite(value.doubleValue!);
  if (own(value, 'arrayValue')) {
    const items = value.arrayValue!.values ?? [];
    const out: unknown[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) out[i] = pbValue(items[i], depth + 1, maxDepth);
    return out;
  }
  if (own(value, 'kvlistValue')) return pbAttributes(value.kvlistValue!.values ?? [], depth + 1, maxDepth);
  if (own(value, 'bytesValue')) return Buffer.from(value.bytesValue!).toString('base64');
  return null;
}

function pbAttributes(list: PbKeyValue[], depth: number, maxDepth: number): OtlpAttributes {
  const out: OtlpAttributes = {};
  for (const { key, value } of list) out[key] = pbValue(value, depth, maxDepth);
  return out;
}

/** Attributes of a span's part; a nesting deeper than the limit marks the span invalid instead of failing the request. */
function pbSpanAttributes(list: PbKeyValue[] | undefined, maxDepth: number, span: { invalid?: string }): OtlpAttributes {
  try {
    return pbAttributes(list ?? [], 1, maxDepth);
  } catch (error) {
    if (!(error instanceof TooDeep)) throw error;
    span.invalid = 'an attribute value is nested too deep';
    return {};
  }
}

/** Attributes read by `read`, as pbSpanAttributes (the JSON mapping's). */
function readAttributes(read: () => OtlpAttributes, span: { invalid?: string }): OtlpAttributes {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof TooDeep)) throw error;
    span.invalid = 'an attribute value is nested too deep';
    return {};
  }
}

function fromProtobuf(message: PbRequest, maxDepth: number): OtlpTraces {
  const resourceSpans: OtlpTraces['resourceSpans'] = [];
  for (const pbResourceSpans of message.resourceSpans ?? []) {
    const holder: { invalid?: string } = {};
    const resource = pbSpanAttributes(pbResourceSpans.resource?.attributes, maxDepth, holder);
    const scopeSpans: OtlpTraces['resourceSpans'][number]['scopeSpans'] = [];
    for (const pbScopeSpans of pbResourceSpans.scopeSpans ?? []) {
      const pbSpans = pbScopeSpans.spans ?? [];
      const spans: OtlpSpan[] = new Array(pbSpans.length);
      for (let i = 0; i < pbSpans.length; i++) spans[i] = fromPbSpan(pbSpans[i]!, holder.invalid, maxDepth);
      scopeSpans.push({ scope: pbScopeSpans.scope ? { name: pbScopeSpans.scope.name ?? '', version: pbScopeSpans.scope.version ?? '' } : null, spans });
    }
    resourceSpans.push({ resource, scopeSpans });
  }
  return { resourceSpans };
}

function fromPbSpan(span: PbSpan, resourceInvalid: string | undefined, maxDepth: number): OtlpSpan {
  const out: OtlpSpan = {
    traceId: hex(span.traceId),
    spanId: hex(span.spanId),
    parentSpanId: hex(span.parentSpanId),
    name: span.name ?? '',
    kind: span.kind ?? 0,
    startTimeUnixNano: unsignedNanos(span.startTimeUnixNano),
    endTimeUnixNano: unsignedNanos(span.endTimeUnixNano),
    attributes: {},
    events: [],
    links: [],
    status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
    ...(resourceInvalid ? { invalid: resourceInvalid } : {}),
  };
  out.attributes = pbSpanAttributes(span.attributes, maxDepth, out);
  for (const event of span.events ?? []) {
    out.events.push({ name: event.name ?? '', timeUnixNano: unsignedNanos(event.timeUnixNano), attributes: pbSpanAttributes(event.attributes, maxDepth, out) });
  }
  for (const link of span.links ?? []) {
    out.links.push({ traceId: hex(link.traceId), spanId: hex(link.spanId), attributes: pbSpanAttributes(link.attributes, maxDepth, out) });
  }
  return out;
}

// ───────────────────────────── JSON ─────────────────────────────
// OTLP's JSON mapping: lowerCamelCase keys, trace and span ids as hex strings (not base64), 64-bit
// integers as decimal strings or numbers, enums as integers.

type Json = Record<string, unknown>;
const object = (value: unknown): Json | undefined => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined);
const list = (value: unknown, where: string): unknown[] => {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw malformed('json', `${where} must be a list`);
  return value;
};

const finite = (value: number): number | string => (Number.isFinite(value) ? value : String(value));

function jsonNanos(value: unknown, where: string): bigint {
  if (value === undefined || value === null || value === '') return 0n;
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return BigInt(Math.trunc(value));
  if (typeof value === 'string' && /^\d{1,20}$/.test(value)) return BigInt(value);
  throw malformed('json', `${where} must be unsigned nanoseconds since the epoch`);
}

function jsonId(value: unknown, where: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw malformed('json', `${where} must be a hex string`);
  return value.toLowerCase();
}

function jsonValue(value: unknown, depth: number, maxDepth: number): unknown {
  const any = object(value);
  if (!any) return null;
  if (depth > maxDepth) throw new TooDeep();
  if ('stringValue' in any) return typeof any.stringValue === 'string' ? any.stringValue : String(any.stringValue);
  if ('boolValue' in any) return Boolean(any.boolValue);
  if ('intValue' in any) {
    const int = any.intValue;
    if (typeof int === 'number') return int;
    const number = Number(int);
    return Number.isSafeInteger(number) ? number : String(int);
  }
  if ('doubleValue' in any) return typeof any.doubleValue === 'number' ? finite(any.doubleValue) : Number(any.doubleValue);
  if ('arrayValue' in any) return list(object(any.arrayValue)?.values, 'arrayValue.values').map((item) => jsonValue(item, depth + 1, maxDepth));
  if ('kvlistValue' in any) return jsonAttributes(object(any.kvlistValue)?.values, depth + 1, maxDepth);
  if ('bytesValue' in any) return typeof any.bytesValue === 'string' ? any.bytesValue : null;
  return null;
}

function jsonAttributes(value: unknown, depth: number, maxDepth: number): OtlpAttributes {
  const out: OtlpAttributes = {};
  for (const entry of list(value, 'attributes')) {
    const keyValue = object(entry);
    if (!keyValue || typeof keyValue.key !== 'string') throw malformed('json', 'an attribute must be {"key": string, "value": AnyValue}');
    out[keyValue.key] = jsonValue(keyValue.value, depth, maxDepth);
  }
  return out;
}

function fromJson(body: unknown, maxDepth: number): OtlpTraces {
  const request = object(body);
  if (!request) throw malformed('json', 'expected an object');
  return {
    resourceSpans: list(request.resourceSpans, 'resourceSpans').map((item) => {
      const resourceSpans = object(item) ?? {};
      const holder: { invalid?: string } = {};
      const resource = readAttributes(() => jsonAttributes(object(resourceSpans.resource)?.attributes, 1, maxDepth), holder);
      return {
        resource,
        scopeSpans: list(resourceSpans.scopeSpans, 'scopeSpans').map((entry) => {
          const scopeSpans = object(entry) ?? {};
          const scope = object(scopeSpans.scope);
          return {
            scope: scope ? { name: String(scope.name ?? ''), version: String(scope.version ?? '') } : null,
            spans: list(scopeSpans.spans, 'spans').map((value) => {
              const span = object(value);
              if (!span) throw malformed('json', 'a span must be an object');
              const status = object(span.status);
              const out: OtlpSpan = {
                traceId: jsonId(span.traceId, 'traceId'),
                spanId: jsonId(span.spanId, 'spanId'),
                parentSpanId: jsonId(span.parentSpanId, 'parentSpanId'),
                name: typeof span.name === 'string' ? span.name : '',
                kind: typeof span.kind === 'number' ? span.kind : 0,
                startTimeUnixNano: jsonNanos(span.startTimeUnixNano, 'startTimeUnixNano'),
                endTimeUnixNano: jsonNanos(span.endTimeUnixNano, 'endTimeUnixNano'),
                attributes: {},
                events: [],
                links: [],
                status: { code: typeof status?.code === 'number' ? status.code : 0, message: typeof status?.message === 'string' ? status.message : '' },
                ...(holder.invalid ? { invalid: holder.invalid } : {}),
              };
              out.attributes = readAttributes(() => jsonAttributes(span.attributes, 1, maxDepth), out);
              out.events = list(span.events, 'events').map((item) => {
                const event = object(item) ?? {};
                return {
                  name: typeof event.name === 'string' ? event.name : '',
                  timeUnixNano: jsonNanos(event.timeUnixNano, 'events.timeUnixNano'),
                  attributes: readAttributes(() => jsonAttributes(event.attributes, 1, maxDepth), out),
                };
              });
              out.links = list(span.links, 'links').map((item) => {
                const link = object(item) ?? {};
                return {
                  traceId: jsonId(link.traceId, 'links.traceId'),
                  spanId: jsonId(link.spanId, 'links.spanId'),
                  attributes: readAttributes(() => jsonAttributes(link.attributes, 1, maxDepth), out),
                };
              });
              return out;
            }),
          };
        }),
      };
    }),
  };
}
