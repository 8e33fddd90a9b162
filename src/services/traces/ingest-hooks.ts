// The seam between trace ingestion and usage metering.
//
// `afterRunsStored` runs inside the ingest transaction, after the runs of one request are inserted, so
// whatever it writes commits or rolls back with them (a trace is counted exactly when it is stored).
// The usage area appends these counts to its deltas here: `traces` is already grouped by
// (hour of the root run's start, workspace, project, user, API key) with the number of new traces.
import type pg from 'pg';
import { recordStoredTraces } from '../usage/usage.service.js';

import type { TraceCount } from './ingest-types.js';

export type { TraceCount };

/** Called inside the ingest transaction with the traces stored by one request. */
export async function afterRunsStored(client: pg.PoolClient, traces: TraceCount[]): Promise<void> {
  await recordStoredTraces(client, traces);
}

/** Groups stored root runs into hourly trace counts. */
export function countTraces(
  roots: { startTime: string; sessionId: string }[],
  who: { workspaceId: string; userId?: string | null; apiKeyId?: string | null },
): TraceCount[] {
  const groups = new Map<string, TraceCount>();
  for (const root of roots) {
    const hour = new Date(root.startTime);
    hour.setUTCMinutes(0, 0, 0);
    const key = `${hour.getTime()}|${root.sessionId}`;
    const group = groups.get(key);
    if (group) group.traces += 1;
    else
      groups.set(key, {
        hour,
        workspaceId: who.workspaceId,
        projectId: root.sessionId,
        userId: who.userId ?? null,
        apiKeyId: who.apiKeyId ?? null,
        traces: 1,
      });
  }
  return [...groups.values()];
}
