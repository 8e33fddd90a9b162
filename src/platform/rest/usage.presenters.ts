// The usage record as the spec shows it (snake_case, dimension keys per group_by), and its CSV form.
import type { UsageDimensions, UsageRecord, UsageReport } from '../services/usage/usage.service.js';

const DIMENSION_KEYS: Record<keyof UsageDimensions, string> = {
  workspaceId: 'workspace_id',
  workspaceName: 'workspace_name',
  projectId: 'project_id',
  projectName: 'project_name',
  userId: 'user_id',
  userEmail: 'user_email',
  apiKeyShortKey: 'api_key_short_key',
};

const presentDimensions = (dimensions: UsageDimensions) =>
  Object.fromEntries(Object.entries(dimensions).map(([key, value]) => [DIMENSION_KEYS[key as keyof UsageDimensions], value]));

export const presentUsageReport = (report: UsageReport) => ({
  stride: report.stride,
  usage: report.usage.map((record) => ({
    time_bucket: record.timeBucket.toISOString(),
    dimensions: presentDimensions(record.dimensions),
    traces: record.traces,
  })),
});

// ───────────────────────────── CSV ─────────────────────────────

/** Every column, always, in the spec's order; a record fills those of its group_by. */
export const USAGE_CSV_HEADER = [
  'Time Bucket Start',
  'Time Bucket End',
  'Workspace ID',
  'Workspace Name',
  'Project ID',
  'Project Name',
  'User ID',
  'User Email',
  'API Key Short Key',
  'Traces',
];

/**
 * One CSV cell (RFC 4180 quoting). A cell a spreadsheet would read as a formula (starting with =, +,
 * -, @, tab or CR) gets a leading tab, so a project named `=HYPERLINK(…)` stays text.
 */
function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `\t${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export const csvLine = (cells: (string | number | null | undefined)[]) => `${cells.map(csvCell).join(',')}\r\n`;

export const usageCsvLine = (record: UsageRecord) => {
  const d = record.dimensions;
  return csvLine([
    record.timeBucket.toISOString(),
    record.timeBucketEnd.toISOString(),
    d.workspaceId,
    d.workspaceName,
    d.projectId,
    d.projectName,
    d.userId,
    d.userEmail,
    d.apiKeyShortKey,
    record.traces,
  ]);
};
