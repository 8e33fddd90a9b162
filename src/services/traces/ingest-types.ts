// The shapes trace ingestion is called with, shared by the REST adapter, the ingest threads and the
// service (a leaf module, so none of them imports another for its types).

/** Who ingests: the workspace the runs are stored in, and the key and user stored on every run. */
export type Ingester = { workspaceId: string; apiKeyId?: string | null; userId?: string | null };
/** One string per ingester (workspace, key, user): what batches of different requests are grouped by. */
export const ingesterKey = (who: Ingester): string => `${who.workspaceId}\n${who.apiKeyId ?? ''}\n${who.userId ?? ''}`;
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
