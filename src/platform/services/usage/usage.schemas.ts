// Input schemas of the usage area, shared by the REST query string and the GraphQL arguments.
import { z } from 'zod';

const USAGE_DIMENSIONS = ['workspace', 'project', 'user', 'api_key'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

/** More workspace ids than any organization reads at once; bounds the work one request can ask for. */
const MAX_USAGE_WORKSPACES = 1_000;

/** An ISO 8601 date-time (UTC when it has no offset) or date (midnight UTC). */
export const UsageInstant = z.union([
  z.date(),
  z.iso.datetime({ offset: true, local: true }).transform((text) => new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text}Z`)),
  z.iso.date().transform((text) => new Date(`${text}T00:00:00Z`)),
], { error: 'expected an ISO 8601 date-time' });

export const UsageWorkspaceIds = z
  .array(z.uuid().transform((id) => id.toLowerCase()))
  .min(1, 'name at least one workspace')
  .max(MAX_USAGE_WORKSPACES, `at most ${MAX_USAGE_WORKSPACES} workspaces per request`);

export const UsageGroupBy = z.enum(USAGE_DIMENSIONS).default('workspace');

/** A granular-usage request (`start_time`, `end_time`, `workspace_ids`, `group_by` on the wire). */
export const UsageQuery = z.object({
  startTime: UsageInstant,
  endTime: UsageInstant,
  workspaceIds: UsageWorkspaceIds,
  groupBy: UsageGroupBy,
});
export type UsageQueryInput = z.input<typeof UsageQuery>;
