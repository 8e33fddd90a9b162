// The shapes trace ingestion is called with, shared by the REST adapter, the ingest threads, the wire
// and the services (a leaf module, so none of them imports another for its types).
import type { JsonbValue, Usage } from './derive.js';
import type { Ingester } from '../../contracts/trace-wire.js';

// The wire's shapes are ground (the agent server sends them too); ingest's own are below.
export type { Ingester, IngestRequest, IngestResult, RunAttachment, RunBatch, RunCreate } from '../../contracts/trace-wire.js';

/** One string per ingester (workspace, key, user, project): what batches of different requests are grouped by. */
export const ingesterKey = (who: Ingester): string => `${who.workspaceId}\n${who.apiKeyId ?? ''}\n${who.userId ?? ''}\n${who.project ?? ''}`;

export type NormalizedRun = {
  id: string;
  sessionId: string | null;
  sessionName: string | null;
  traceId: string | null;
  parentRunId: string | null;
  parentRunIds: string[];
  referenceExampleId: string | null;
  name: string;
  runType: string;
  startTime: string;
  endTime: string | null;
  dottedOrder: string | null;
  traceTier: string | null;
  inputs: JsonbValue | null;
  outputs: JsonbValue | null;
  error: string | null;
  extra: JsonbValue | null;
  events: JsonbValue | null;
  serialized: JsonbValue | null;
  tags: string[];
  usage: Usage;
  /** The usage of its descendants stored by the same INSERT, added to its totals there (foldUsageIntoAncestors). */
  descendantUsage?: Usage;
  firstTokenTime: string | null;
  threadId: string | null;
  /** From a batch whose parents may follow: may have provisional descendants stored to adopt. */
  adopts?: boolean;
  /** Stored in a provisional trace: its parent was neither in its batch nor stored. */
  awaitsParent?: boolean;
};

export type NormalizedPatch = {
  id: string;
  endTime: string | null;
  inputs: string | null;
  outputs: string | null;
  error: string | null;
  extra: string | null;
  events: string | null;
  serialized: string | null;
  tags: string[] | null;
  usage: Usage;
  firstTokenTime: string | null;
  threadId: string | null;
  /** The validated wire patch, kept when the run is not stored yet. */
  raw: Record<string, unknown>;
};

// An OTLP export as its transport decodes it (otlp-wire.ts) and the OTLP mapping reads it (otlp-ingest.service.ts).

/** Attribute values as JSON (the transport has turned OTLP's AnyValue into plain values). */
export type OtlpAttributes = Record<string, unknown>;

export type OtlpSpan = {
  /** Lowercase hex: 32 digits for the trace id, 16 for span ids; '' when absent. */
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: OtlpAttributes;
  events: { name: string; timeUnixNano: bigint; attributes: OtlpAttributes }[];
  links: { traceId: string; spanId: string; attributes: OtlpAttributes }[];
  /** 0 unset, 1 ok, 2 error (OTLP's StatusCode). */
  status: { code: number; message: string };
  /** Set by the transport when the span cannot be read (an attribute nested too deep): it is rejected. */
  invalid?: string;
};

type OtlpResourceSpans = {
  resource: OtlpAttributes;
  scopeSpans: { scope: { name: string; version: string } | null; spans: OtlpSpan[] }[];
};

/** An ExportTraceServiceRequest, decoded. */
export type OtlpTraces = { resourceSpans: OtlpResourceSpans[] };
