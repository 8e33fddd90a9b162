// Ingestion on behalf of the viewer (the REST surface's caller): who the runs are stored as, and the
// rule that a batch naming runs already received is a conflict although everything else was stored.
import { AppError } from '../../errors.js';
import type { ServiceContext } from '../../context.js';
import type { Ingester, IngestResult } from './ingest-types.js';
import { traceWorkspace } from '../services/traces/workspace.js';

/**
 * Stores runs as the viewer: `store` gets the viewer's trace workspace (checked for
 * workspaces:write) and key, or a deployment's trace key with the one project it may write. CONFLICT names the posts already received (the rest was stored), unless
 * `duplicates` is 'ignore' (OTLP: an exporter retries a whole export, and the same span is one run).
 */
export async function ingestAsViewer(
  ctx: ServiceContext,
  store: (who: Ingester) => Promise<IngestResult>,
  options: { duplicates: 'conflict' | 'ignore' } = { duplicates: 'conflict' },
): Promise<IngestResult> {
  const { viewer } = ctx;
  const result = await store(
    viewer.kind === 'trace-writer'
      ? // A deployment's trace key: its workspace, and only its project (ingest.service.ts enforces it).
        { workspaceId: viewer.workspaceId, apiKeyId: viewer.apiKeyId, userId: null, project: viewer.project }
      : {
          workspaceId: await traceWorkspace(ctx, 'workspaces:write'),
          apiKeyId: viewer.kind === 'api-key' ? viewer.apiKeyId : null,
          userId: viewer.kind === 'api-key' ? viewer.userId : null,
        },
  );
  if (result.duplicates.length && options.duplicates === 'conflict') {
    throw AppError.conflict(`Run${result.duplicates.length > 1 ? 's' : ''} already received: ${result.duplicates.slice(0, 20).join(', ')}.`);
  }
  return result;
}
