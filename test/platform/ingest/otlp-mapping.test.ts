// The OTLP span → run mapping's fast paths keep what they replaced: run ids are the uuid v5 they were
// (a retried export names the runs already stored), JSON text in prompts and completions is stored as
// that text only where that cannot differ from serialising its value, the string depth check agrees
// with the byte one, and protobuf strings are still refused when they are not UTF-8.
import { v5 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { assertJsonDepth, assertJsonTextDepth } from '../../../src/limits/json.js';
import { encodeExportRequest, parseOtlpBody } from '../../../src/platform/ingest/otlp-wire.js';
import { RawJson } from '../../../src/platform/ingest/derive.js';
import { normalizeRunCreate } from '../../../src/platform/ingest/ingest.schemas.js';
import type { OtlpSpan } from '../../../src/platform/ingest/ingest-types.js';
import { otlpSpansToRuns, spanRunId } from '../../../src/platform/ingest/otlp-ingest.service.js';

// The namespace run ids have been made in since OTLP ingestion began.
const NAMESPACE = '6f0c3f55-3b1c-4d43-9a3c-0a7c5e0f2a61';

const hex = (length: number, seed: number) => Array.from({ length }, (_, i) => ((i * 7 + seed) % 16).toString(16)).join('');

function span(attributes: Record<string, unknown>, overrides: Partial<OtlpSpan> = {}): OtlpSpan {
  return {
    traceId: hex(32, 1),
    spanId: hex(16, 2),
    parentSpanId: '',
    name: 'span',
    kind: 1,
    startTimeUnixNano: 1_768_471_200_123_456_789n,
    endTimeUnixNano: 1_768_471_201_000_000_000n,
    attributes,
    events: [],
    links: [],
    status: { code: 0, message: '' },
    ...overrides,
  };
}

const runOf = (attributes: Record<string, unknown>, overrides: Partial<OtlpSpan> = {}) =>
  otlpSpansToRuns({ resourceSpans: [{ resource: {}, scopeSpans: [{ scope: null, spans: [span(attributes, overrides)] }] }] }, { project: 'p', jsonMaxDepth: 16 }).posts[0]!;

describe('OTLP mapping', () => {
  it('names a span the run id the uuid package gave it, its parent likewise', () => {
    for (let seed = 0; seed < 50; seed++) {
      const traceId = hex(32, seed);
      const spanId = hex(16, seed + 3);
      expect(spanRunId(traceId, spanId)).toBe(v5(`${traceId}:${spanId}`, NAMESPACE));
    }
    const run = runOf({}, { parentSpanId: hex(16, 9) });
    expect(run.id).toBe(v5(`${hex(32, 1)}:${hex(16, 2)}`, NAMESPACE));
    expect(run.parent_run_id).toBe(v5(`${hex(32, 1)}:${hex(16, 9)}`, NAMESPACE));
    expect(run.start_time).toBe('2026-01-15T10:00:00.123456Z');
  });

  it('stores an object sent as JSON text as that text, and anything else as before', () => {
    const prompt = ' {"messages": [{"role": "user", "content": "why [not] {this}?"}], "n": 12345678901234567890}';
    const run = runOf({ 'gen_ai.prompt': prompt, 'gen_ai.completion': '{"text": "bad \\u0000 byte"}', 'input.value': 'ignored: gen_ai.prompt won' });
    expect(run.inputs).toBeInstanceOf(RawJson);
    expect((run.inputs as RawJson).value).toEqual(JSON.parse(prompt));
    const normalized = normalizeRunCreate(run, ['post', 0]);
    // The text as sent (a number past 2^53 stays exact; serialising the parsed value rounded it).
    expect(normalized.inputs).toBe(prompt);
    // Escapes: serialised from the value, so NUL is cleaned as for every other value.
    expect(normalized.outputs).toBe('{"text":"bad  byte"}');
    // The consumed attribute left the metadata, as before.
    expect(JSON.parse(normalized.extra as string).metadata).toEqual({});

    // Not an object, not JSON, or too deep: wrapped as before.
    expect(runOf({ 'gen_ai.prompt': '[1, 2]' }).inputs).toEqual({ messages: [1, 2] });
    expect(runOf({ 'gen_ai.prompt': '{not json' }).inputs).toEqual({ input: '{not json' });
    const deep = `${'{"a":'.repeat(20)}1${'}'.repeat(20)}`;
    expect(runOf({ 'gen_ai.prompt': deep }).inputs).toEqual({ input: deep });
  });

  it('checks JSON text depth as the byte check does', () => {
    const texts = ['{"a": [1, {"b": "]]]]"}]}', '[[[["\\"[[[["]]]]', `${'['.repeat(17)}${']'.repeat(17)}`, '"unterminated [[[[[[[[[[[[[[[[[[', '{"k": "\\\\"}'];
    for (const text of texts) {
      const byBytes = (() => {
        try {
          assertJsonDepth(Buffer.from(text), 4);
          return 'ok';
        } catch (error) {
          return (error as Error).message;
        }
      })();
      const byText = (() => {
        try {
          assertJsonTextDepth(text, 4);
          return 'ok';
        } catch (error) {
          return (error as Error).message;
        }
      })();
      expect({ text, result: byText }).toEqual({ text, result: byBytes });
    }
  });

  it('reads protobuf strings short and long, multi-byte too, and refuses bytes that are not UTF-8', () => {
    const long = `${'é'.repeat(40)} 🙂 ${'x'.repeat(100)}`;
    const request = (name: string, value: string) => ({
      resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: Buffer.from(hex(32, 1), 'hex'), spanId: Buffer.from(hex(16, 2), 'hex'), name, startTimeUnixNano: '1', attributes: [{ key: 'k', value: { stringValue: value } }] }] }] }],
    });
    const decoded = parseOtlpBody(encodeExportRequest(request('ünïcode 🙂', long)), 'protobuf', 16).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect([decoded.name, decoded.attributes.k]).toEqual(['ünïcode 🙂', long]);
    for (const [name, value] of [['QQ', 'fine'], ['fine', `QQ${'x'.repeat(100)}`]] as const) {
      const body = encodeExportRequest(request(name, value));
      const at = body.indexOf('QQ');
      body[at] = 0xff;
      body[at + 1] = 0xfe;
      expect(() => parseOtlpBody(body, 'protobuf', 16)).toThrow('not a valid OTLP ExportTraceServiceRequest (protobuf): The encoded data was not valid for encoding utf-8');
    }
  });
});
