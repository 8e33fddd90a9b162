// Trace counts over a range, grouped by workspace, project, user or key, as a chart (uPlot: ~50 KB,
// draws thousands of points on a canvas without a framework), a table of totals and a CSV download.
import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { ErrorNote, Loading, PageHeader, TableHead } from '../components.js';
import { formatNumber } from '../format.js';
import { useGql } from '../hooks.js';
import type { Viewer } from '../session.js';
import { href, navigate } from '../router.js';
import type { Session } from '../session.js';

type Dimensions = {
  workspaceId: string | null;
  workspaceName: string | null;
  projectId: string | null;
  projectName: string | null;
  userId: string | null;
  userEmail: string | null;
  apiKeyShortKey: string | null;
};
type UsageRecord = { timeBucket: string; timeBucketEnd: string; traces: number; dimensions: Dimensions };
type UsageData = { viewer: { organization: { usage: { stride: { days: number; hours: number }; usage: UsageRecord[] } } | null } };

const USAGE = `query ConsoleUsage($startTime: DateTime!, $endTime: DateTime!, $groupBy: UsageGroupBy, $workspaceIds: [ID!]!) {
  viewer { organization { usage(startTime: $startTime, endTime: $endTime, groupBy: $groupBy, workspaceIds: $workspaceIds) {
    stride { days hours }
    usage { timeBucket timeBucketEnd traces dimensions { workspaceId workspaceName projectId projectName userId userEmail apiKeyShortKey } }
  } } } }`;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const RANGES: Record<string, { label: string; ms: number }> = {
  '24h': { label: 'Last 24 hours', ms: DAY },
  '7d': { label: 'Last 7 days', ms: 7 * DAY },
  '30d': { label: 'Last 30 days', ms: 30 * DAY },
  '90d': { label: 'Last 90 days', ms: 90 * DAY },
  '365d': { label: 'Last 365 days', ms: 365 * DAY },
};
const GROUPS: Record<string, string> = { WORKSPACE: 'Workspace', PROJECT: 'Project', USER: 'User', API_KEY: 'API key' };
const STRIDES: Record<string, { label: string; ms: number }> = {
  auto: { label: 'Automatic', ms: 0 },
  hour: { label: 'Hour', ms: HOUR },
  day: { label: 'Day', ms: DAY },
  week: { label: 'Week', ms: 7 * DAY },
  month: { label: '30 days', ms: 30 * DAY },
};
// The chart shows the largest groups; the rest add up to one line.
const MAX_SERIES = 8;
const stepped = uPlot.paths.stepped!({ align: 1 });
const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#db2777', '#0891b2', '#65a30d', '#6b7280'];

function groupLabel(groupBy: string, d: Dimensions): string {
  if (groupBy === 'PROJECT') return d.projectName ?? d.projectId ?? 'unknown project';
  if (groupBy === 'USER') return d.userEmail ?? (d.userId ? d.userId : 'no user');
  if (groupBy === 'API_KEY') return d.apiKeyShortKey ?? 'no key';
  return d.workspaceName ?? d.workspaceId ?? 'unknown workspace';
}

// The same columns and formula guard as the REST API's CSV, so either download reads the same.
const CSV_HEADER = ['Time Bucket Start', 'Time Bucket End', 'Workspace ID', 'Workspace Name', 'Project ID', 'Project Name', 'User ID', 'User Email', 'API Key Short Key', 'Traces'];
function csvCell(value: string | number | null): string {
  if (value === null) return '';
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `\t${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
function toCsv(records: UsageRecord[]): string {
  const lines = records.map((r) => {
    const d = r.dimensions;
    return [r.timeBucket, r.timeBucketEnd, d.workspaceId, d.workspaceName, d.projectId, d.projectName, d.userId, d.userEmail, d.apiKeyShortKey, r.traces];
  });
  return [CSV_HEADER, ...lines].map((cells) => `${cells.map(csvCell).join(',')}\r\n`).join('');
}

/** Records summed into buckets of `strideMs` counted from `origin` (a stride coarser than the platform's). */
function rebucket(records: UsageRecord[], groupBy: string, origin: number, strideMs: number): UsageRecord[] {
  const merged = new Map<string, UsageRecord>();
  for (const record of records) {
    const start = origin + Math.floor((Date.parse(record.timeBucket) - origin) / strideMs) * strideMs;
    const key = `${start}\n${groupLabel(groupBy, record.dimensions)}`;
    const existing = merged.get(key);
    if (existing) existing.traces += record.traces;
    else merged.set(key, { ...record, timeBucket: new Date(start).toISOString(), timeBucketEnd: new Date(start + strideMs).toISOString() });
  }
  return [...merged.values()].sort((a, b) => a.timeBucket.localeCompare(b.timeBucket));
}

function Chart({ records, groupBy, from, to, strideMs }: { records: UsageRecord[]; groupBy: string; from: number; to: number; strideMs: number }) {
  const holder = useRef<HTMLDivElement>(null);
  const { groups, totals } = useMemo(() => {
    const sums = new Map<string, number>();
    for (const record of records) sums.set(groupLabel(groupBy, record.dimensions), (sums.get(groupLabel(groupBy, record.dimensions)) ?? 0) + record.traces);
    const sorted = [...sums.entries()].sort((a, b) => b[1] - a[1]);
    return { groups: sorted.slice(0, MAX_SERIES).map(([name]) => name), totals: sorted };
  }, [records, groupBy]);

  useEffect(() => {
    if (!holder.current) return;
    // Every bucket of the range, including empty ones (the platform leaves them out).
    const xs: number[] = [];
    for (let t = from; t < to; t += strideMs) xs.push(t / 1000);
    // A closing point at the range's end, so the last bucket's step has a width.
    xs.push(to / 1000);
    const index = new Map(xs.map((x, i) => [x * 1000, i]));
    const hasOther = totals.length > MAX_SERIES;
    const names = hasOther ? [...groups, 'other'] : groups;
    const ys = names.map(() => xs.map(() => 0));
    // The closing point repeats the last bucket's value (set after the counts below).
    for (const record of records) {
      const column = index.get(Date.parse(record.timeBucket));
      if (column === undefined) continue;
      const row = groups.indexOf(groupLabel(groupBy, record.dimensions));
      ys[row === -1 ? names.length - 1 : row]![column]! += record.traces;
    }
    for (const y of ys) y[y.length - 1] = y[y.length - 2] ?? 0;
    const width = () => Math.max(holder.current?.clientWidth ?? 600, 280);
    const plot = new uPlot(
      {
        width: width(),
        height: 280,
        scales: { y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
        axes: [{}, { label: 'Traces', size: 60 }],
        series: [
          { label: 'Bucket' },
          // Steps, not slopes: each value is a count over its whole bucket.
          ...names.map((name, i) => ({
            label: name,
            stroke: COLORS[i % COLORS.length],
            fill: names.length === 1 ? `${COLORS[0]}22` : undefined,
            width: 2,
            paths: stepped,
            points: { show: false },
          })),
        ],
      },
      [xs, ...ys],
      holder.current,
    );
    const resize = () => plot.setSize({ width: width(), height: 280 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [records, groups, totals, from, to, strideMs]);

  const total = totals.reduce((sum, [, count]) => sum + count, 0);
  return (
    <>
      <div ref={holder} class="chart" role="img" aria-label={`Traces per bucket, ${formatNumber(total)} in all, by ${GROUPS[groupBy]?.toLowerCase()}`} />
      <div class="table-wrap">
        <table class="usage-totals">
          <caption>Traces in the range by {GROUPS[groupBy]?.toLowerCase()}</caption>
          <TableHead columns={[{ label: GROUPS[groupBy] }, { label: 'Traces', num: true }]} />
          <tbody>
            {totals.map(([name, count]) => (
              <tr>
                <th scope="row">{name}</th>
                <td class="num">{formatNumber(count)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

export function UsagePage({ session, viewer, params }: { session: Session; viewer: Viewer; params: URLSearchParams }) {
  const rangeKey = RANGES[params.get('range') ?? ''] ? params.get('range')! : '7d';
  const groupBy = GROUPS[params.get('group') ?? ''] ? params.get('group')! : 'WORKSPACE';
  const strideKey = STRIDES[params.get('stride') ?? ''] ? params.get('stride')! : 'auto';
  // The range ends at the next whole hour, so a reload within the hour asks the same question.
  const [from, to] = useMemo(() => {
    const end = Math.ceil(Date.now() / HOUR) * HOUR;
    return [end - RANGES[rangeKey]!.ms, end];
  }, [rangeKey]);
  const variables = { startTime: new Date(from).toISOString(), endTime: new Date(to).toISOString(), groupBy, workspaceIds: viewer.workspaces.map((w) => w.id) };
  const { data, error, loading } = useGql<UsageData>(session, USAGE, variables);
  const report = data?.viewer.organization?.usage;
  const platformStrideMs = report ? report.stride.days * DAY + report.stride.hours * HOUR : 0;
  const strideMs = Math.max(STRIDES[strideKey]!.ms, platformStrideMs);
  // The platform's buckets count from the range's start floored to its unit (the hour, or the UTC day).
  const origin = report?.stride.days ? Math.floor(from / DAY) * DAY : from;
  const records = useMemo(
    () => (report ? (strideMs > platformStrideMs ? rebucket(report.usage, groupBy, origin, strideMs) : report.usage) : []),
    [report, groupBy, origin, strideMs, platformStrideMs],
  );
  const set = (change: Record<string, string>) => navigate(href(['usage'], { range: rangeKey, group: groupBy, stride: strideKey, ...change }), true);

  const download = () => {
    const url = URL.createObjectURL(new Blob([toCsv(records)], { type: 'text/csv' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = `usage-${groupBy.toLowerCase()}-${variables.startTime.slice(0, 10)}-${variables.endTime.slice(0, 10)}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  return (
    <>
      <PageHeader title="Usage" />
      <form class="controls" onSubmit={(event) => event.preventDefault()}>
        <label>
          Range
          <select value={rangeKey} onChange={(event) => set({ range: event.currentTarget.value })}>
            {Object.entries(RANGES).map(([key, range]) => (
              <option value={key}>{range.label}</option>
            ))}
          </select>
        </label>
        <label>
          Group by
          <select value={groupBy} onChange={(event) => set({ group: event.currentTarget.value })}>
            {Object.entries(GROUPS).map(([key, label]) => (
              <option value={key}>{label}</option>
            ))}
          </select>
        </label>
        <label>
          Stride
          <select value={strideKey} onChange={(event) => set({ stride: event.currentTarget.value })}>
            {Object.entries(STRIDES).map(([key, stride]) => (
              // Buckets finer than the platform's for this range cannot be made from its records.
              <option value={key} disabled={key !== 'auto' && stride.ms < platformStrideMs}>
                {stride.label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={download} disabled={!report}>
          Download CSV
        </button>
      </form>
      <p class="muted small">
        {viewer.workspaces.length} workspace{viewer.workspaces.length === 1 ? '' : 's'} · buckets of{' '}
        {strideMs >= DAY ? `${strideMs / DAY} day${strideMs === DAY ? '' : 's'}` : `${strideMs / HOUR} hour`}
      </p>
      <ErrorNote error={error} />
      <Loading when={loading} />
      {report && <Chart records={records} groupBy={groupBy} from={origin} to={to} strideMs={strideMs} />}
    </>
  );
}
