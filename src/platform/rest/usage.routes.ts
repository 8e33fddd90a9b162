// Usage API (FastAPI dialect, header x-api-key): granular trace counts as JSON, and as a CSV export
// streamed from a database cursor.
import { once } from 'node:events';
import { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import type { Deps } from '../../context.js';
import { UsageGroupBy, UsageInstant, UsageWorkspaceIds } from '../services/usage/usage.schemas.js';
import { getGranularUsage, streamGranularUsage } from '../services/usage/usage.service.js';
import { parseInput } from '../../validate.js';
import { authenticate } from './auth.js';
import { csvLine, presentUsageReport, USAGE_CSV_HEADER, usageCsvLine } from './usage.presenters.js';

export const GranularUsageQuery = z.object({
  start_time: UsageInstant,
  end_time: UsageInstant,
  workspace_ids: UsageWorkspaceIds,
  group_by: UsageGroupBy,
});

/**
 * The query, read from the raw query string: `workspace_ids` may come as repeated keys, as
 * comma-separated values and as `workspace_ids[]` (Express's own parser keeps at most 1,000 keys and
 * would drop the rest silently).
 */
function usageQuery(req: Request) {
  const params = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
  const ids = [...params.getAll('workspace_ids'), ...params.getAll('workspace_ids[]')]
    .flatMap((value) => value.split(','))
    .map((id) => id.trim())
    .filter(Boolean);
  const query = parseInput(
    GranularUsageQuery,
    {
      start_time: params.get('start_time') ?? undefined,
      end_time: params.get('end_time') ?? undefined,
      workspace_ids: params.has('workspace_ids') || params.has('workspace_ids[]') ? ids : undefined,
      group_by: params.get('group_by') ?? undefined,
    },
    'query',
  );
  return { startTime: query.start_time, endTime: query.end_time, workspaceIds: query.workspace_ids, groupBy: query.group_by };
}

/** Waits until the response can take more, or the client is gone (listeners removed either way). */
async function drainOrClose(res: Response): Promise<void> {
  const done = new AbortController();
  await Promise.race([once(res, 'drain', { signal: done.signal }), once(res, 'close', { signal: done.signal })]).finally(() => done.abort());
}

export function usageRouter(deps: Deps): Router {
  const router = Router();
  const auth = authenticate(deps);

  router.get('/orgs/current/billing/granular-usage', auth, async (req, res) => {
    res.json(presentUsageReport(await getGranularUsage(req.ctx, usageQuery(req))));
  });

  router.get('/orgs/current/billing/granular-usage/export', auth, async (req, res) => {
    const query = usageQuery(req);
    const stream = await streamGranularUsage(req.ctx, query);
    const day = (date: Date) => date.toISOString().slice(0, 10);
    res.status(200);
    res.type('text/csv; charset=utf-8');
    res.attachment(`granular-usage-${query.groupBy}-${day(query.startTime)}-${day(query.endTime)}.csv`);
    res.write(csvLine(USAGE_CSV_HEADER));
    for await (const page of stream.pages) {
      if (res.destroyed) break;
      // Backpressure: a slow client holds one page here, not the whole export.
      if (!res.write(page.map(usageCsvLine).join(''))) await drainOrClose(res);
    }
    res.end();
  });

  return router;
}
