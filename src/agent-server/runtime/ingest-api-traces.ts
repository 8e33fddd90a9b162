// A deployed revision's traces, sent where any langsmith SDK user sends theirs: the platform's public
// ingest API, with the deployment's trace key (which writes only the deployment's project; its agent
// server has no access to the platform's trace tables). The official SDK client does the sending: it
// batches runs into multipart requests in the background, retries what failed for a transient reason,
// and awaitPendingTraceBatches() flushes. So, as with the TraceBatcher that `serve` writes through,
// a run only hands its trace over and is reported done; the runtime closes this sink after its last
// run ended, which sends everything still queued before the process exits.
import { Client } from 'langsmith';
import type { Logger } from 'pino';
import type { FeedbackUrlMaker, Ingester, RunBatch, TraceSink } from '../../contracts/trace-wire.js';
import { fetchOverPlatformConnections } from './platform-connections.js';

export class IngestApiTraceSink implements TraceSink {
  private readonly client: Client;

  constructor(
    target: { url: string; apiKey: string },
    private readonly logger: Logger,
  ) {
    this.client = new Client({
      apiUrl: target.url,
      apiKey: target.apiKey,
      // From a network of its own, over the connections its launcher hands over.
      fetchImplementation: fetchOverPlatformConnections(target.url),
      autoBatchTracing: true,
      // The agent-run tracer records the runtime environment on each trace's root already.
      omitTracedRuntimeInfo: true,
    });
  }

  /**
   * Queues a run's trace operations in the client (the key decides the workspace and project, so
   * `who` is not sent). Resolves once they are queued, not sent.
   */
  async add(_who: Ingester, batch: RunBatch): Promise<void> {
    for (const { session_name: projectName, ...post } of batch.post ?? []) {
      await this.client.createRun({ ...(post as unknown as Parameters<Client['createRun']>[0]), project_name: projectName as string | undefined });
    }
    for (const { id, ...patch } of batch.patch ?? []) await this.client.updateRun(String(id), patch);
  }

  /** Sends everything queued (the runtime calls it once its runs have ended). */
  async close(): Promise<void> {
    await this.client.awaitPendingTraceBatches().catch((error: unknown) => this.logger.error({ err: error }, 'could not send the last traces'));
  }
}

/**
 * Feedback urls of a deployed revision's runs, made as any langsmith client makes them: the platform's
 * POST /feedback/tokens, with the deployment's trace key (whose tokens take feedback only on runs of
 * its project). A url is given at the platform's url as the caller reached it, when known.
 */
export function ingestApiFeedbackUrls(target: { url: string; apiKey: string }): FeedbackUrlMaker {
  const client = new Client({
    apiUrl: target.url,
    apiKey: target.apiKey,
    fetchImplementation: fetchOverPlatformConnections(target.url),
    autoBatchTracing: false,
    callerOptions: { maxRetries: 1 },
  });
  return async ({ runId, keys, platformUrl }) => {
    const tokens = await Promise.all(keys.map((key) => client.createPresignedFeedbackToken(runId, key)));
    return Object.fromEntries(
      tokens.map((token, index) => [keys[index]!, platformUrl ? `${platformUrl}${new URL(token.url).pathname}` : token.url]),
    );
  };
}
