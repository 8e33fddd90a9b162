// OpenTelemetry ingestion through the official OpenTelemetry JS exporters (OTLP protobuf and JSON over
// HTTP) from a real NodeTracerProvider: spans become runs with the right tree, times, status, tokens
// and project; retries store nothing twice; another tenant's key writes only its own workspace; and
// malformed, mistyped, bombed and oversized bodies get OTLP-shaped 4xx while the server keeps serving.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { context, type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpHttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, NodeTracerProvider, type ReadableSpan, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;

const BODY_LIMIT = 2 * 1024 * 1024;

beforeAll(async () => {
  platform = await startTestPlatform({ config: { AGENT_PLATFORM_INGEST_BODY_LIMIT: String(BODY_LIMIT) } });
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
});
afterAll(() => platform?.stop());

type Run = Record<string, any>;

async function call(path: string, init: { key?: string; method?: string; body?: unknown } = {}) {
  const response = await fetch(`${platform.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'x-api-key': init.key ?? tenant.adminKey, 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** The project of that name in the key's workspace, or undefined. */
async function project(name: string, key = tenant.adminKey): Promise<{ id: string } | undefined> {
  return (await call(`/sessions?name=${encodeURIComponent(name)}`, { key })).body[0];
}

async function runsOf(projectName: string, key = tenant.adminKey, filter?: string): Promise<Run[]> {
  const found = await project(projectName, key);
  if (!found) return [];
  return (await call('/runs/query', { key, body: { session: [found.id], limit: 100, ...(filter ? { filter } : {}) } })).body.runs;
}

const millis = (iso: string) => Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);

/** An exporter that also keeps each export's outcome (the OpenTelemetry SDK only logs failures). */
function recording(exporter: SpanExporter) {
  const results: { code: number; error?: Error }[] = [];
  const wrapped: SpanExporter = {
    export: (spans, done) => exporter.export(spans, (result) => {
      results.push(result);
      done(result);
    }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
  return { exporter: wrapped, results };
}

function exportOnce(exporter: SpanExporter, spans: ReadableSpan[]): Promise<{ code: number; error?: Error }> {
  return new Promise((resolve) => exporter.export(spans, resolve));
}

const T0 = Date.UTC(2026, 0, 15, 10, 0, 0);

/**
 * An agent-shaped trace with explicit times: a root chain, an LLM call with GenAI attributes and a tool
 * call that fails. SimpleSpanProcessor exports each span as it ends (children first, in separate
 * requests), as a busy BatchSpanProcessor does across batches.
 */
function emitAgentTrace(provider: NodeTracerProvider, runName: string) {
  const tracer = provider.getTracer('agent-test', '1.0.0');
  const root = tracer.startSpan(runName, { startTime: T0, attributes: { 'langsmith.span.kind': 'chain', 'langsmith.metadata.customer': 'acme', 'langsmith.span.tags': 'otel,test', 'input.value': '{"question":"why?"}', 'input.mime_type': 'application/json' } });
  const inRoot = trace.setSpan(context.active(), root);
  const llm = tracer.startSpan('chat fake-model', {
    startTime: T0 + 100,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'fake-model-1',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.prompt': JSON.stringify({ messages: [{ role: 'user', content: 'why?' }] }),
      'gen_ai.completion': JSON.stringify({ messages: [{ role: 'assistant', content: 'because' }] }),
      'custom.flag': true,
    },
  }, inRoot);
  llm.addEvent('first-token', { index: 0 }, T0 + 150);
  llm.setStatus({ code: SpanStatusCode.OK });
  llm.end(T0 + 900);
  const tool: Span = tracer.startSpan('search', { startTime: T0 + 1000, attributes: { 'openinference.span.kind': 'TOOL', 'output.value': 'nothing found' } }, inRoot);
  tool.recordException(new TypeError('search backend down'), T0 + 1100);
  tool.setStatus({ code: SpanStatusCode.ERROR, message: 'search backend down' });
  tool.end(T0 + 1200);
  root.end(T0 + 2000);
}

describe('OpenTelemetry exporters', () => {
  it('stores a trace sent span by span with the protobuf exporter as one tree of runs in the service.name project', async () => {
    const service = `svc-${randomUUID().slice(0, 8)}`;
    const { exporter, results } = recording(new OtlpProtoExporter({ url: `${platform.url}/otel/v1/traces`, headers: { 'x-api-key': tenant.adminKey } }));
    const provider = new NodeTracerProvider({ resource: resourceFromAttributes({ 'service.name': service }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
    emitAgentTrace(provider, 'agent');
    await provider.forceFlush();
    await provider.shutdown();
    expect(results.map((result) => result.code)).toEqual([0, 0, 0]);

    const runs = await runsOf(service);
    expect(runs).toHaveLength(3);
    const byName = Object.fromEntries(runs.map((run) => [run.name, run]));
    const root = byName.agent!;
    const llm = byName['chat fake-model']!;
    const tool = byName.search!;
    // The tree: children (stored first) were adopted by their root when it arrived.
    expect(root.parent_run_id).toBeNull();
    expect(root.trace_id).toBe(root.id);
    for (const child of [llm, tool]) {
      expect(child.parent_run_id).toBe(root.id);
      expect(child.trace_id).toBe(root.id);
      expect(child.parent_run_ids).toEqual([root.id]);
      expect(child.dotted_order.startsWith(`${root.dotted_order}.`)).toBe(true);
    }
    expect((await call('/runs/query', { body: { trace: root.id, filter: 'eq(is_root, true)' } })).body.runs.map((run: Run) => run.id)).toEqual([root.id]);
    // Times, run types, status.
    expect([millis(root.start_time), millis(root.end_time)]).toEqual([T0, T0 + 2000]);
    expect([millis(llm.start_time), millis(llm.end_time)]).toEqual([T0 + 100, T0 + 900]);
    expect([root.run_type, llm.run_type, tool.run_type]).toEqual(['chain', 'llm', 'tool']);
    expect([root.status, llm.status, tool.status]).toEqual(['success', 'success', 'error']);
    expect(tool.error).toContain('search backend down');
    // Inputs, outputs, tokens, model, tags, metadata.
    expect(root.inputs).toEqual({ question: 'why?' });
    expect(root.tags).toEqual(['otel', 'test']);
    expect(root.extra.metadata.customer).toBe('acme');
    expect(llm.inputs).toEqual({ messages: [{ role: 'user', content: 'why?' }] });
    expect(llm.outputs).toEqual({ messages: [{ role: 'assistant', content: 'because' }] });
    expect([llm.prompt_tokens, llm.completion_tokens, llm.total_tokens]).toEqual([12, 30, 42]);
    expect(llm.extra.metadata).toMatchObject({ ls_model_name: 'fake-model-1', ls_provider: 'openai', 'custom.flag': true });
    expect(llm.events).toEqual([{ name: 'first-token', time: expect.any(String), kwargs: { index: 0 } }]);
    expect(tool.outputs).toEqual({ value: 'nothing found' });
    expect(tool.events[0].name).toBe('exception');
    // The filter language reads them like any run.
    const filtered = await runsOf(service, tenant.adminKey, 'and(eq(metadata_key, "ls_model_name"), eq(metadata_value, "fake-model-1"), gt(total_tokens, 40))');
    expect(filtered.map((run) => run.id)).toEqual([llm.id]);
  });

  it('takes the project from Langsmith-Project with the JSON exporter and gzip, under /api/v1 too', async () => {
    const name = `otel-json-${randomUUID().slice(0, 8)}`;
    const { exporter, results } = recording(
      new OtlpHttpJsonExporter({ url: `${platform.url}/api/v1/otel/v1/traces`, headers: { 'x-api-key': tenant.adminKey, 'Langsmith-Project': name }, compression: 'gzip' as never }),
    );
    const provider = new NodeTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'ignored-service' }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
    emitAgentTrace(provider, 'json-agent');
    await provider.shutdown();
    expect(results.map((result) => result.code)).toEqual([0, 0, 0]);
    const runs = await runsOf(name);
    expect(runs.map((run) => run.name).sort()).toEqual(['chat fake-model', 'json-agent', 'search']);
    expect(runs.find((run) => run.name === 'chat fake-model')!.total_tokens).toBe(42);
    expect(await project('ignored-service')).toBeUndefined();
  });

  it('stores a retried export once, and a batch whose children precede their parent as one tree', async () => {
    const name = `otel-retry-${randomUUID().slice(0, 8)}`;
    const memory = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
    emitAgentTrace(provider, 'retried');
    await provider.forceFlush();
    const spans = memory.getFinishedSpans();
    expect(spans.map((span) => span.name)).toEqual(['chat fake-model', 'search', 'retried']);
    const exporter = new OtlpProtoExporter({ url: `${platform.url}/otel/v1/traces`, headers: { 'x-api-key': tenant.adminKey, 'Langsmith-Project': name } });
    // One export with the children first, then the same export again (an exporter retrying after a timeout).
    expect((await exportOnce(exporter, spans)).code).toBe(0);
    expect((await exportOnce(exporter, spans)).code).toBe(0);
    // And the children alone once more, after their parent is stored.
    expect((await exportOnce(exporter, spans.slice(0, 2))).code).toBe(0);
    await exporter.shutdown();
    const runs = await runsOf(name);
    expect(runs).toHaveLength(3);
    const root = runs.find((run) => run.name === 'retried')!;
    expect(runs.filter((run) => run !== root).every((run) => run.parent_run_id === root.id && run.trace_id === root.id)).toBe(true);
  });

  it("writes with another tenant's key only into that tenant's own workspace", async () => {
    const name = `otel-owned-${randomUUID().slice(0, 8)}`;
    const send = async (key: string, runName: string) => {
      const { exporter, results } = recording(new OtlpProtoExporter({ url: `${platform.url}/otel/v1/traces`, headers: { 'x-api-key': key, 'Langsmith-Project': name } }));
      const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      provider.getTracer('t').startSpan(runName, { startTime: T0 }).end(T0 + 5);
      await provider.shutdown();
      return results.map((result) => result.code);
    };
    expect(await send(tenant.adminKey, 'mine')).toEqual([0]);
    expect(await send(other.adminKey, 'theirs')).toEqual([0]);
    expect((await runsOf(name)).map((run) => run.name)).toEqual(['mine']);
    expect((await runsOf(name, other.adminKey)).map((run) => run.name)).toEqual(['theirs']);
    // A viewer may not write; no key is 401. Both answer as OTLP does.
    expect(await send(tenant.viewerKey, 'viewer')).toEqual([1]);
    expect((await runsOf(name)).map((run) => run.name)).toEqual(['mine']);
    const anonymous = await otlpPost(jsonSpans([span({ name: 'anon' })]), { key: '' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json).toMatchObject({ code: 16, message: expect.any(String) });
  });
});

// ───────────────────────────── raw requests ─────────────────────────────

const StatusType = protobuf.parse('syntax = "proto3"; message Status { int32 code = 1; string message = 2; }').root.lookupType('Status');

async function otlpPost(body: Buffer | string, options: { key?: string; contentType?: string; encoding?: string; project?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json' };
  if (options.key !== '') headers['x-api-key'] = options.key ?? tenant.adminKey;
  if (options.encoding) headers['content-encoding'] = options.encoding;
  if (options.project) headers['langsmith-project'] = options.project;
  const response = await fetch(`${platform.url}/otel/v1/traces`, { method: 'POST', headers, body: typeof body === 'string' ? body : new Uint8Array(body) });
  const bytes = Buffer.from(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  return {
    status: response.status,
    type,
    json: type.includes('json') ? JSON.parse(bytes.toString('utf8')) : undefined,
    status_: type.includes('protobuf') ? (StatusType.toObject(StatusType.decode(bytes)) as { code?: number; message?: string }) : undefined,
  };
}

const hex = (bytes: number) => randomUUID().replaceAll('-', '').slice(0, bytes * 2).padEnd(bytes * 2, '1');

function span(overrides: Record<string, unknown> = {}) {
  return { traceId: hex(16), spanId: hex(8), name: 'raw', kind: 1, startTimeUnixNano: String(BigInt(T0) * 1_000_000n), endTimeUnixNano: String(BigInt(T0 + 10) * 1_000_000n), ...overrides };
}

const jsonSpans = (spans: unknown[]) => JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'raw' }, spans }] }] });

/** Rows of trace_run_awaited_parents of the tenant's workspace (parents provisional runs wait for). */
async function awaitedParents(): Promise<string[]> {
  const { rows } = await platform.deps.db.pool.query<{ parent_id: string }>('SELECT parent_id FROM trace_run_awaited_parents WHERE tenant_id = $1', [tenant.workspace.id]);
  return rows.map((row) => row.parent_id);
}

describe('spans before their parents', () => {
  it('stores a grandchild, then its parent, then the root, each in its own request, as one tree and forgets what it awaited', async () => {
    const name = `otel-chain-${randomUUID().slice(0, 8)}`;
    const traceId = hex(16);
    const nanos = (ms: number) => String(BigInt(T0 + ms) * 1_000_000n);
    const root = span({ traceId, name: 'root', startTimeUnixNano: nanos(0), endTimeUnixNano: nanos(100) });
    const child = span({ traceId, name: 'child', parentSpanId: root.spanId, startTimeUnixNano: nanos(10), endTimeUnixNano: nanos(90) });
    const grandchild = span({ traceId, name: 'grandchild', parentSpanId: child.spanId, startTimeUnixNano: nanos(20), endTimeUnixNano: nanos(80) });
    const before = await awaitedParents();
    for (const [sent, waiting] of [[grandchild, 1], [child, 1], [root, 0]] as const) {
      expect((await otlpPost(jsonSpans([sent]), { project: name })).status).toBe(200);
      // Each provisional layer waits for the next one up, until the root arrives.
      expect((await awaitedParents()).filter((id) => !before.includes(id))).toHaveLength(waiting);
    }
    const runs = Object.fromEntries((await runsOf(name)).map((run) => [run.name, run]));
    expect(Object.keys(runs).sort()).toEqual(['child', 'grandchild', 'root']);
    expect(runs.child!.parent_run_ids).toEqual([runs.root!.id]);
    expect(runs.grandchild!.parent_run_ids).toEqual([runs.root!.id, runs.child!.id]);
    for (const run of [runs.child!, runs.grandchild!]) expect(run.trace_id).toBe(runs.root!.id);
    expect(runs.child!.dotted_order.startsWith(`${runs.root!.dotted_order}.`)).toBe(true);
    expect(runs.grandchild!.dotted_order.startsWith(`${runs.child!.dotted_order}.`)).toBe(true);
  });

  it('adopts every child whatever the order in which concurrent requests with children and parents commit', async () => {
    const name = `otel-race-${randomUUID().slice(0, 8)}`;
    const before = await awaitedParents();
    const traces = Array.from({ length: 24 }, (_, i) => {
      const traceId = hex(16);
      const root = span({ traceId, name: `root-${i}` });
      return { root, children: [span({ traceId, name: `child-${i}-a`, parentSpanId: root.spanId }), span({ traceId, name: `child-${i}-b`, parentSpanId: root.spanId })] };
    });
    // Each trace's children and root in separate requests sent at once, so either may commit first.
    const requests = traces.flatMap(({ root, children }) => [jsonSpans(children), jsonSpans([root])]);
    const answers = await Promise.all(requests.map((body) => otlpPost(body, { project: name })));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const runs = await runsOf(name);
    expect(runs).toHaveLength(traces.length * 3);
    const roots = new Map(runs.filter((run) => run.name.startsWith('root-')).map((run) => [run.name.slice('root-'.length), run]));
    for (const run of runs.filter((run) => run.name.startsWith('child-'))) {
      const root = roots.get(run.name.split('-')[1]!)!;
      expect({ name: run.name, trace_id: run.trace_id, parent_run_ids: run.parent_run_ids, under_root: run.dotted_order.startsWith(`${root.dotted_order}.`) })
        .toEqual({ name: run.name, trace_id: root.id, parent_run_ids: [root.id], under_root: true });
    }
    // Nothing is left waiting for these roots (a late child may leave a row its own adoption made needless, never a run).
    const rootIds = new Set([...roots.values()].map((run) => run.id));
    expect((await awaitedParents()).filter((id) => !before.includes(id) && !rootIds.has(id))).toEqual([]);
  });
});

describe('OTLP requests', () => {
  it('rejects unreadable spans one by one with partial_success naming them', async () => {
    const name = `otel-partial-${randomUUID().slice(0, 8)}`;
    const good = span({ name: 'good' });
    const badId = span({ name: 'bad-id', spanId: 'abc' });
    const unstarted = span({ name: 'no-start', startTimeUnixNano: '0' });
    const response = await otlpPost(jsonSpans([good, badId, unstarted]), { project: name });
    expect(response.status).toBe(200);
    expect(response.json.partialSuccess.rejectedSpans).toBe(2);
    expect(response.json.partialSuccess.errorMessage).toContain('span abc');
    expect(response.json.partialSuccess.errorMessage).toContain(`span ${unstarted.spanId}`);
    expect((await runsOf(name)).map((run) => run.name)).toEqual(['good']);
  });

  it('answers malformed bodies, wrong content types, bombs and oversized batches with OTLP-shaped 4xx and keeps serving', async () => {
    const malformed = await otlpPost(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), { contentType: 'application/x-protobuf' });
    expect(malformed.status).toBe(400);
    expect(malformed.type).toContain('application/x-protobuf');
    expect(malformed.status_).toMatchObject({ code: 3, message: expect.stringContaining('protobuf') });

    const notJson = await otlpPost('{"resourceSpans": [', {});
    expect(notJson.status).toBe(400);
    expect(notJson.json).toMatchObject({ code: 3 });

    // JSON nested past the depth limit is refused whole, as on every ingest path.
    let nested: unknown = { stringValue: 'leaf' };
    for (let i = 0; i < 200; i++) nested = { kvlistValue: { values: [{ key: 'k', value: nested }] } };
    const tooDeep = await otlpPost(jsonSpans([span({ attributes: [{ key: 'deep', value: nested }] })]));
    expect(tooDeep.status).toBe(422);
    expect(tooDeep.json).toMatchObject({ code: 3, message: expect.stringContaining('nested') });

    const wrongType = await otlpPost('hello', { contentType: 'text/plain' });
    expect(wrongType.status).toBe(415);
    expect(wrongType.json).toMatchObject({ code: 3 });

    // A protobuf attribute nested past the decoder's limit (AnyValue in KeyValueList, over and over).
    let value = encodeMessage([[1, Buffer.from('x')]]); // AnyValue{string_value: "x"}
    for (let i = 0; i < 120; i++) value = encodeMessage([[6, encodeMessage([[1, encodeMessage([[1, Buffer.from('k')], [2, value]])]])]]);
    const deepSpan = encodeMessage([[1, Buffer.from(hex(16), 'hex')], [2, Buffer.from(hex(8), 'hex')], [9, encodeMessage([[1, Buffer.from('deep')], [2, value]])]]);
    const deep = await otlpPost(encodeMessage([[1, encodeMessage([[2, encodeMessage([[2, deepSpan]])]])]]), { contentType: 'application/x-protobuf' });
    expect(deep.status).toBe(400);
    expect(deep.status_?.message).toContain('max depth');

    // A gzip body that inflates past the ingest limit.
    const bomb = gzipSync(Buffer.alloc(BODY_LIMIT * 4, 0x20));
    expect(bomb.length).toBeLessThan(BODY_LIMIT);
    const bombed = await otlpPost(bomb, { encoding: 'gzip' });
    expect(bombed.status).toBe(413);
    expect(bombed.json).toMatchObject({ code: 8 });

    // A batch larger than the limit as sent.
    const big = jsonSpans(Array.from({ length: 4000 }, () => span({ name: 'x'.repeat(600) })));
    expect(big.length).toBeGreaterThan(BODY_LIMIT);
    const oversized = await otlpPost(big);
    expect(oversized.status).toBe(413);
    expect(oversized.json).toMatchObject({ code: 8 });

    // Still serving: a good export goes through.
    const name = `otel-after-${randomUUID().slice(0, 8)}`;
    const ok = await otlpPost(gzipSync(jsonSpans([span({ name: 'after' })])), { encoding: 'gzip', project: name });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({});
    expect((await runsOf(name)).map((run) => run.name)).toEqual(['after']);
  });
});

/** A protobuf message of length-delimited fields (enough to build nested bodies the decoder must refuse). */
function encodeMessage(fields: [number, Buffer][]): Buffer {
  const parts: Buffer[] = [];
  for (const [field, data] of fields) {
    parts.push(Buffer.from([(field << 3) | 2]), varint(data.length), data);
  }
  return Buffer.concat(parts);
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  bytes.push(value);
  return Buffer.from(bytes);
}
