// The shapes trace ingestion is called with, shared by the REST adapter, the ingest threads and the
// service (a leaf module, so none of them imports another for its types).
import type { JsonbValue, Usage } from './derive.js';


/**
 * Who ingests: the workspace the runs are stored in, and the key and user stored on every run.
 * `project`, for a deployment's trace key: the one project it writes. Its runs that name no project
 * go there, runs naming another are FORBIDDEN, and its patches touch only runs of that project.
 */
export type Ingester = { workspaceId: string; apiKeyId?: string | null; userId?: string | null; project?: string };
/** One string per ingester (workspace, key, user, project): what batches of different requests are grouped by. */
export const ingesterKey = (who: Ingester): string => `${who.workspaceId}\n${who.apiKeyId ?? ''}\n${who.userId ?? ''}\n${who.project ?? ''}`;
/**
 * What a batch stored: posts accepted, posts already stored (`duplicates`), patches applied or kept for
 * later; `rejected`: items left out one by one (OTLP spans that cannot be runs) and why.
 */
export type IngestResult = { accepted: number; duplicates: string[]; patched: number; deferredPatches: number; rejected?: { count: number; message: string } };

/** An ingestion request as received: its encoded body and the headers that say how to read it (decoded by rest/ingest-wire.ts). */
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
export type RunBatch = { post?: RunCreate[]; patch?: RunUpdate[]; attachments?: RunAttachment[]; parentsMayFollow?: boolean };

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
