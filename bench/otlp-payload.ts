// The ingest benchmark's trees (ingest-payload.ts) as an OpenTelemetry exporter sends them: one OTLP
// protobuf ExportTraceServiceRequest per multipart request's runs, with the attributes LangSmith's
// OTel mapping reads (langsmith.span.kind, gen_ai.prompt / gen_ai.completion, token counts,
// langsmith.metadata.*), gzip as the exporters' `compression: 'gzip'`.
import { gzipSync } from 'node:zlib';
import { encodeExportRequest } from '../src/platform/ingest/otlp-wire.js';

const nanos = (iso: unknown) => String(BigInt(Date.parse(String(iso))) * 1_000_000n);
const traceIdOf = (uuid: string) => Buffer.from(uuid.replaceAll('-', ''), 'hex');
// uuid v7's last 8 bytes are random: a span id.
const spanIdOf = (uuid: string) => Buffer.from(uuid.replaceAll('-', '').slice(16), 'hex');

const string = (key: string, value: string) => ({ key, value: { stringValue: value } });
const int = (key: string, value: number) => ({ key, value: { intValue: value } });

function spanOf(run: Record<string, any>) {
  const attributes: { key: string; value: Record<string, unknown> }[] = [string('langsmith.span.kind', run.run_type), string('gen_ai.prompt', JSON.stringify(run.inputs)), string('gen_ai.completion', JSON.stringify(run.outputs))];
  if (run.tags?.length) attributes.push(string('langsmith.span.tags', run.tags.join(',')));
  for (const [key, value] of Object.entries(run.extra?.metadata ?? {})) {
    attributes.push(typeof value === 'number' ? int(`langsmith.metadata.${key}`, value) : string(`langsmith.metadata.${key}`, String(value)));
  }
  const usage = run.outputs?.usage_metadata;
  if (usage) attributes.push(int('gen_ai.usage.input_tokens', usage.input_tokens), int('gen_ai.usage.output_tokens', usage.output_tokens));
  return {
    traceId: traceIdOf(run.trace_id),
    spanId: spanIdOf(run.id),
    ...(run.parent_run_id ? { parentSpanId: spanIdOf(run.parent_run_id) } : {}),
    name: run.name,
    kind: 1,
    startTimeUnixNano: nanos(run.start_time),
    endTimeUnixNano: nanos(run.end_time),
    attributes,
    events: (run.events ?? []).map((event: Record<string, any>) => ({
      timeUnixNano: nanos(event.time),
      name: event.name,
      attributes: Object.entries(event.kwargs ?? {}).map(([key, value]) => string(key, String(value))),
    })),
    status: { code: 1 },
  };
}

/** One gzipped OTLP protobuf body holding these runs as spans. */
export function otlpBody(runs: Record<string, unknown>[]): { body: Buffer; rawBytes: number } {
  const raw = encodeExportRequest({
    resourceSpans: [
      {
        resource: { attributes: [string('service.name', 'bench-agent'), string('telemetry.sdk.language', 'nodejs')] },
        scopeSpans: [{ scope: { name: 'bench', version: '1.0.0' }, spans: runs.map(spanOf) }],
      },
    ],
  });
  return { body: gzipSync(raw, { level: 1 }), rawBytes: raw.length };
}
