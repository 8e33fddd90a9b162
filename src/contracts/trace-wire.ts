// Traces as they travel to the platform: the langsmith wire's runs and batches, who sends them, an
// ingest request and its result, and the sink an agent server's runtime hands its runs' traces to.
// Ground: the platform's ingest (services/traces) reads them, and an agent server writes them, through
// the public ingest API (a deployed one) or straight into the platform's trace tables (a local one, run
// by a platform process, which gives it the sink: start.ts, startLocalAgentServer).

/**
 * Who ingests: the workspace the runs are stored in, and the key and user stored on every run.
 * `project`, for a deployment's trace key: the one project it writes. Its runs that name no project
 * go there, runs naming another are FORBIDDEN, and its patches touch only runs of that project.
 */
export type Ingester = { workspaceId: string; apiKeyId?: string | null; userId?: string | null; project?: string };

/**
 * What a batch stored: posts accepted, posts already stored (`duplicates`), patches applied or kept for
 * later; `rejected`: items left out one by one (OTLP spans that cannot be runs) and why.
 */
export type IngestResult = { accepted: number; duplicates: string[]; patched: number; deferredPatches: number; rejected?: { count: number; message: string } };

/** An ingestion request as received: its encoded body and the headers that say how to read it (decoded by platform/ingest/ingest-wire.ts). */
export type IngestRequest = {
  /**
   * `run`: one run create (POST /runs); `patch`: one run update (PATCH /runs/{runId}); `otlp-protobuf`
   * and `otlp-json`: an OTLP ExportTraceServiceRequest (POST /otel/v1/traces).
   */
  format: 'multipart' | 'batch' | 'run' | 'patch' | 'otlp-protobuf' | 'otlp-json';
  body: Uint8Array;
  contentEncoding: string | undefined;
  contentType: string | undefined;
  runId?: string;
  /** The project an OTLP request names (its `Langsmith-Project` header). */
  project?: string;
};

/** A run create as the langsmith SDK sends it (unknown fields are ignored). */
export type RunCreate = Record<string, unknown>;

/** A run update as the langsmith SDK sends it: `id` plus the fields that changed. */
type RunUpdate = Record<string, unknown>;
export type RunAttachment = { runId: string; name: string; contentType: string; data: Buffer };
/** Feedback as the langsmith SDK batches it with runs (multipart part `feedback.<id>`): its create body. */
export type FeedbackCreateBody = Record<string, unknown>;
export type RunBatch = { post?: RunCreate[]; patch?: RunUpdate[]; attachments?: RunAttachment[]; feedback?: FeedbackCreateBody[]; parentsMayFollow?: boolean };

/** What a trace sink did so far (on the agent server's /metrics). */
export type TraceSinkStats = {
  /** Operations waiting to be written. */
  queued: number;
  /** Operations written (stored, or refused by ingest and logged). */
  flushed: number;
  /** Times a run had to wait for room. */
  backpressureWaits: number;
  /** Operations ingest refused or could not store. */
  failed: number;
  /** Batches written (ingest calls): flushed ÷ writes is the mean batch size. */
  writes: number;
};

/**
 * Where a runtime's traces go, off the run's path: `add` resolves once the batch is queued (waiting
 * for room when the sink is full), `close` once everything queued is sent (at shutdown, after the
 * last run ended).
 */
export interface TraceSink {
  add(who: Ingester, batch: RunBatch): Promise<void>;
  close(): Promise<void>;
  stats?(): TraceSinkStats;
}

/**
 * A run's presigned feedback urls, one per key (`{key: url}`), made by the platform that stores its
 * trace (the trace's root run has the agent run's id), for the feedback event that ends a run's stream
 * when it was created with `feedback_keys`. `project`: the tracing project the run's trace goes to;
 * `platformUrl`: where the caller reached the platform, when known (a url starts there).
 */
export type FeedbackUrlMaker = (request: { project: string; runId: string; keys: string[]; platformUrl: string | undefined }) => Promise<Record<string, string>>;
