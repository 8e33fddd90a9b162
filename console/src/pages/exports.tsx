// Bulk exports of the workspace: destinations (credentials never shown), exports with their progress
// live over graphql-ws (exportProgress: status, rows and files of each run) and their runs' errors.
import { useState } from 'preact/hooks';
import { ApiError, gql } from '../api.js';
import { ErrorNote, Loading, PageHeader, StatusBadge, TableHead } from '../components.js';
import { formatNumber, formatTime } from '../format.js';
import { useGql, useSubmit } from '../hooks.js';
import { useSubscription } from '../live.js';
import { href, navigate } from '../router.js';
import type { Session } from '../session.js';

type Destination = {
  id: string;
  displayName: string;
  destinationType: string;
  hasCredentials: boolean;
  config: { bucket_name?: string; prefix?: string; endpoint_url?: string | null; region?: string | null };
  createdAt: string;
};
type ExportRun = {
  id: string;
  status: string;
  startTime: string;
  endTime: string;
  retryNumber: number;
  errors: Record<string, unknown>;
  rowsWritten: number;
  exportedFiles: string[];
  exportPath: string | null;
  finishedAt: string | null;
};
type BulkExport = {
  id: string;
  status: string;
  destinationId: string | null;
  sessionId: string;
  project: { name: string } | null;
  destination: { displayName: string } | null;
  startTime: string;
  endTime: string | null;
  filter: string | null;
  formatVersion: string;
  intervalHours: number | null;
  createdAt: string;
  finishedAt: string | null;
  runs: ExportRun[];
};
type Progress = { exportId: string; status: string; rowsWritten: number; runs: ExportRun[] };

const RUN_FIELDS = 'id status startTime endTime retryNumber errors rowsWritten exportedFiles exportPath finishedAt';
const EXPORTS = `query ConsoleExports {
  exportDestinations { id displayName destinationType hasCredentials config createdAt }
  bulkExports { id status destinationId sessionId project { name } destination { displayName } startTime endTime filter formatVersion intervalHours createdAt finishedAt runs { ${RUN_FIELDS} } }
  tracingProjects(limit: 1000) { id name } }`;
const PROGRESS = `subscription ConsoleExportProgress($id: ID!) { exportProgress(exportId: $id) { exportId status rowsWritten runs { ${RUN_FIELDS} } } }`;

const CREATE = `mutation ConsoleCreateExport($input: CreateBulkExportInput!) { createBulkExport(input: $input) {
  ... on MutationCreateBulkExportSuccess { data { id } } ... on AppError { code message } } }`;

const FINISHED = ['Completed', 'Failed', 'Cancelled', 'TimedOut'];

/** yyyy-mm-dd of a day `daysAgo` before today (UTC), for the date inputs. */
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);

function CreateExportForm({ session, destinations, projects, onCreated }: { session: Session; destinations: Destination[]; projects: { id: string; name: string }[]; onCreated: (id: string) => void }) {
  const [destinationId, setDestinationId] = useState(destinations[0]?.id ?? '');
  const [sessionId, setSessionId] = useState(projects[0]?.id ?? '');
  const [from, setFrom] = useState(day(7));
  const [to, setTo] = useState(day(-1));
  const [filter, setFilter] = useState('');
  const { busy, error, submit } = useSubmit(async () => {
    const input = { destinationId, sessionId, startTime: `${from}T00:00:00Z`, endTime: `${to}T00:00:00Z`, filter: filter.trim() || null };
    const { createBulkExport } = await gql<{ createBulkExport: { data?: { id: string }; code?: string; message?: string } }>(session, CREATE, { input });
    if (!createBulkExport.data) throw new ApiError(createBulkExport.message ?? 'The export was refused.', createBulkExport.code);
    onCreated(createBulkExport.data.id);
  });
  return (
    <form class="panel controls" onSubmit={submit} aria-label="New export">
      <label>
        Project
        <select value={sessionId} onChange={(event) => setSessionId(event.currentTarget.value)} required>
          {projects.map((project) => (
            <option value={project.id}>{project.name}</option>
          ))}
        </select>
      </label>
      <label>
        Destination
        <select value={destinationId} onChange={(event) => setDestinationId(event.currentTarget.value)} required>
          {destinations.map((destination) => (
            <option value={destination.id}>{destination.displayName}</option>
          ))}
        </select>
      </label>
      <label>
        From (UTC)
        <input type="date" value={from} onInput={(event) => setFrom(event.currentTarget.value)} required />
      </label>
      <label>
        To (UTC, exclusive)
        <input type="date" value={to} onInput={(event) => setTo(event.currentTarget.value)} required />
      </label>
      <label>
        Filter
        <input value={filter} onInput={(event) => setFilter(event.currentTarget.value)} placeholder='eq(run_type, "llm")' spellcheck={false} />
      </label>
      <button type="submit" disabled={busy || !destinationId || !sessionId}>
        {busy ? 'Starting…' : 'Start export'}
      </button>
      <ErrorNote error={error} />
    </form>
  );
}

/** Each attempt's error of a run, oldest first (errors are keyed retry_<n>). */
function runErrors(run: ExportRun): [string, string][] {
  return Object.entries(run.errors ?? {})
    .sort(([a], [b]) => Number(a.replace(/\D/g, '')) - Number(b.replace(/\D/g, '')))
    .map(([attempt, error]) => [attempt.replace('retry_', 'attempt '), typeof error === 'string' ? error : JSON.stringify(error)]);
}

/** Follows one unfinished export's progress; renders nothing. */
function WatchExport({ session, exportId, onProgress }: { session: Session; exportId: string; onProgress: (progress: Progress) => void }) {
  useSubscription<{ exportProgress: Progress }>(session, PROGRESS, { id: exportId }, { next: (data) => onProgress(data.exportProgress) });
  return null;
}

function ExportCard({ item, open }: { item: BulkExport; open: boolean }) {
  const projectName = item.project?.name ?? `(deleted project ${item.sessionId})`;
  const destinationName = item.destination?.displayName ?? '(deleted destination)';
  const rows = item.runs.reduce((sum, run) => sum + run.rowsWritten, 0);
  const files = item.runs.reduce((sum, run) => sum + run.exportedFiles.length, 0);
  const done = item.runs.filter((run) => FINISHED.includes(run.status)).length;
  const failed = item.runs.filter((run) => Object.keys(run.errors ?? {}).length > 0 || run.status === 'Failed').length;
  const range = `${formatTime(item.startTime)} → ${item.endTime ? formatTime(item.endTime) : `every ${item.intervalHours} h`}`;
  return (
    <details class="export panel" open={open} id={`export-${item.id}`}>
      <summary>
        <span class="export-title">
          <strong>{projectName}</strong> → {destinationName}
        </span>{' '}
        <StatusBadge status={item.status} />
        <span class="export-figures" aria-label={`Export ${item.id} progress`}>
          {' '}
          <span class="rows">{formatNumber(rows)} rows</span> · <span class="files">{formatNumber(files)} files</span> · {done}/{item.runs.length} runs finished
          {failed > 0 && <span class="bad"> · {failed} with errors</span>}
        </span>
        {item.runs.length > 0 && !FINISHED.includes(item.status) && item.status !== 'IntervalScheduled' && (
          <progress max={item.runs.length} value={done} aria-label="Runs finished" />
        )}
      </summary>
      <p class="muted small">
        {range} · {item.formatVersion}
        {item.filter && (
          <>
            {' '}
            · filter <code>{item.filter}</code>
          </>
        )}{' '}
        · created {formatTime(item.createdAt)} ·{' '}
        <a href={href(['exports'], { export: item.id })}>
          <code>{item.id}</code>
        </a>
      </p>
      {item.runs.length > 0 && (
        <div class="table-wrap">
          <table class="export-runs">
            <caption class="visually-hidden">Runs of the export, one per UTC day</caption>
            <TableHead columns={['Day', 'Status', { label: 'Rows', num: true }, { label: 'Files', num: true }, { label: 'Retries', num: true }, 'Errors']} />
            <tbody>
              {item.runs.map((run) => (
                <tr>
                  <th scope="row">{run.startTime.slice(0, 10)}</th>
                  <td>
                    <StatusBadge status={run.status} />
                  </td>
                  <td class="num">{formatNumber(run.rowsWritten)}</td>
                  <td class="num" title={run.exportedFiles.join('\n')}>
                    {formatNumber(run.exportedFiles.length)}
                  </td>
                  <td class="num">{run.retryNumber}</td>
                  <td class="wrap">
                    {runErrors(run).map(([attempt, error]) => (
                      <div class="error-text">
                        <span class="muted">{attempt}:</span> {error}
                      </div>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </details>
  );
}

export function ExportsPage({ session, params, canWrite }: { session: Session; params: URLSearchParams; canWrite: boolean }) {
  const { data, error, loading, reload } = useGql<{ exportDestinations: Destination[]; bulkExports: BulkExport[]; tracingProjects: { id: string; name: string }[] }>(session, EXPORTS);
  const [live, setLive] = useState<Record<string, Progress>>({});
  const selected = params.get('export');
  const exports = (data?.bulkExports ?? []).map((item) => {
    const progress = live[item.id];
    return progress ? { ...item, status: progress.status, runs: progress.runs } : item;
  });
  return (
    <>
      <PageHeader title="Exports" />
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && (
        <>
          <h2>Destinations</h2>
          {data.exportDestinations.length === 0 ? (
            <p class="muted">No destinations yet: create one with the createExportDestination mutation or POST /api/v1/bulk-exports/destinations.</p>
          ) : (
            <div class="table-wrap">
              <table class="destinations">
                <caption class="visually-hidden">Export destinations, newest first</caption>
                <TableHead columns={['Destination', 'Type', 'Bucket', 'Prefix', 'Endpoint', 'Credentials', 'Created']} />
                <tbody>
                  {data.exportDestinations.map((destination) => (
                    <tr>
                      <th scope="row">{destination.displayName}</th>
                      <td>{destination.destinationType}</td>
                      <td>
                        <code>{destination.config.bucket_name ?? '–'}</code>
                      </td>
                      <td>
                        <code>{destination.config.prefix || '–'}</code>
                      </td>
                      <td>
                        <code>{destination.config.endpoint_url ?? destination.config.region ?? '–'}</code>
                      </td>
                      <td>{destination.hasCredentials ? 'stored (never shown)' : 'default chain'}</td>
                      <td>{formatTime(destination.createdAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <h2>Exports</h2>
          {canWrite && data.exportDestinations.length > 0 && data.tracingProjects.length > 0 && (
            <CreateExportForm
              session={session}
              destinations={data.exportDestinations}
              projects={data.tracingProjects}
              onCreated={(id) => {
                navigate(href(['exports'], { export: id }));
                reload();
              }}
            />
          )}
          {exports.filter((item) => !FINISHED.includes(item.status)).map((item) => (
            <WatchExport key={item.id} session={session} exportId={item.id} onProgress={(progress) => setLive((previous) => ({ ...previous, [progress.exportId]: progress }))} />
          ))}
          {exports.length === 0 && <p class="muted">No exports yet.</p>}
          <div class="exports">
            {exports.map((item) => (
              <ExportCard
                key={item.id}
                item={item}
                open={item.id === selected || !FINISHED.includes(item.status) || item.runs.some((run) => runErrors(run).length > 0)}
              />
            ))}
          </div>
        </>
      )}
    </>
  );
}
