// A project's runs, newest first, a page at a time (cursor), narrowed by the platform's filter
// language; a malformed filter is shown with a caret at the position the platform reports.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type FilterPosition, gql } from '../api.js';
import { ErrorNote, Loading, PageHeader, StatusBadge, TableHead } from '../components.js';
import { formatCost, formatDuration, formatNumber, formatTime } from '../format.js';
import { useGql } from '../hooks.js';
import { href, navigate } from '../router.js';
import type { Session } from '../session.js';

export type RunSummary = {
  id: string;
  traceId: string;
  name: string;
  runType: string;
  status: string;
  startTime: string;
  latency: number | null;
  totalTokens: number | null;
  totalCost: number | null;
  error: string | null;
};

const PAGE_SIZE = 50;
const RUNS = `query ConsoleRuns($projectId: ID!, $filter: String, $isRoot: Boolean, $first: Int, $after: String) {
  runs(projectId: $projectId, filter: $filter, isRoot: $isRoot, first: $first, after: $after) {
    edges { node { id traceId name runType status startTime latency totalTokens totalCost error } }
    pageInfo { hasNextPage endCursor }
  } }`;
const PROJECT = `query ConsoleProject($id: ID!) { tracingProject(id: $id) { id name runCount } }`;

type RunsPageData = { runs: { edges: { node: RunSummary }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };

const EXAMPLES = ['eq(status, "error")', 'eq(run_type, "llm")', 'gt(latency, "2s")', 'and(eq(name, "agent"), gte(total_tokens, 1000))'];

/** The line of the filter holding the error, and a caret under its column. */
function FilterCaret({ text, at }: { text: string; at: FilterPosition }) {
  const line = text.split('\n')[at.line - 1] ?? '';
  return (
    <pre class="caret" aria-hidden="true">
      {line}
      {'\n'}
      {' '.repeat(Math.max(at.column - 1, 0))}^
    </pre>
  );
}

export function RunsPage({ session, projectId, params }: { session: Session; projectId: string; params: URLSearchParams }) {
  const filter = params.get('filter') ?? '';
  const rootsOnly = params.get('all') !== '1';
  const project = useGql<{ tracingProject: { name: string; runCount: number } }>(session, PROJECT, { id: projectId });
  const [draft, setDraft] = useState(filter);
  const [runs, setRuns] = useState<RunSummary[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [more, setMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const input = useRef<HTMLTextAreaElement>(null);

  const load = async (after: string | null, signal?: AbortSignal) => {
    setLoading(true);
    setError(null);
    try {
      const data = await gql<RunsPageData>(
        session,
        RUNS,
        { projectId, filter: filter || null, isRoot: rootsOnly ? true : null, first: PAGE_SIZE, after },
        signal,
      );
      const page = data.runs.edges.map((edge) => edge.node);
      setRuns((previous) => (after ? [...previous, ...page] : page));
      setCursor(data.runs.pageInfo.endCursor);
      setMore(data.runs.pageInfo.hasNextPage);
    } catch (caught) {
      if (signal?.aborted) return;
      if (!after) setRuns([]);
      setError(caught as ApiError);
    } finally {
      if (!signal?.aborted) setLoading(false);
    }
  };

  useEffect(() => {
    setDraft(filter);
    const controller = new AbortController();
    void load(null, controller.signal);
    return () => controller.abort();
  }, [session.apiKey, session.workspaceId, projectId, filter, rootsOnly]);

  // Put the text cursor where the platform says the filter went wrong.
  useEffect(() => {
    const at = error?.filter;
    if (at && input.current) {
      input.current.focus();
      input.current.setSelectionRange(at.position, at.position);
    }
  }, [error]);

  const apply = (event: Event) => {
    event.preventDefault();
    navigate(href(['projects', projectId], { filter: draft.trim() || null, all: rootsOnly ? null : '1' }));
  };
  const filterError = error?.filter ? error : null;

  return (
    <>
      <PageHeader title={project.data?.tracingProject.name ?? 'Runs'}>
        <a href={href([])}>All projects</a>
      </PageHeader>
      <ErrorNote error={project.error} />
      <form class="filter" onSubmit={apply} role="search" aria-label="Filter runs">
        <label for="run-filter">Filter</label>
        <textarea
          id="run-filter"
          ref={input}
          rows={1}
          spellcheck={false}
          placeholder='e.g. and(eq(run_type, "llm"), gt(latency, "2s"))'
          value={draft}
          aria-invalid={filterError ? 'true' : undefined}
          aria-describedby={filterError ? 'run-filter-error' : 'run-filter-help'}
          onInput={(event) => setDraft(event.currentTarget.value)}
          onKeyDown={(event) => {
            // Enter applies, as in a search box; Shift+Enter breaks a long filter over lines.
            if (event.key === 'Enter' && !event.shiftKey) apply(event);
          }}
        />
        <button type="submit">Apply</button>
        <label class="check">
          <input
            type="checkbox"
            checked={rootsOnly}
            onChange={(event) => navigate(href(['projects', projectId], { filter: filter || null, all: event.currentTarget.checked ? null : '1' }))}
          />
          Traces only (root runs)
        </label>
      </form>
      {filterError?.filter ? (
        <div id="run-filter-error" class="error filter-error" role="alert">
          <p>{filterError.message}</p>
          <FilterCaret text={filter} at={filterError.filter} />
        </div>
      ) : (
        <p id="run-filter-help" class="muted small">
          Examples:{' '}
          {EXAMPLES.map((example, index) => (
            <>
              {index > 0 && ' · '}
              <a href={href(['projects', projectId], { filter: example, all: rootsOnly ? null : '1' })}>
                <code>{example}</code>
              </a>
            </>
          ))}
        </p>
      )}
      {!filterError && <ErrorNote error={error} />}
      <div class="table-wrap">
        <table class="runs">
          <caption class="visually-hidden">Runs, newest first</caption>
          <TableHead columns={['Name', 'Type', 'Status', 'Started', { label: 'Latency', num: true }, { label: 'Tokens', num: true }, { label: 'Cost', num: true }]} />
          <tbody>
            {runs.map((run) => (
              <tr>
                <th scope="row">
                  <a href={href(['traces', run.traceId], { run: run.id })}>{run.name}</a>
                </th>
                <td>{run.runType}</td>
                <td>
                  <StatusBadge status={run.status} />
                </td>
                <td>{formatTime(run.startTime)}</td>
                <td class="num">{formatDuration(run.latency)}</td>
                <td class="num">{formatNumber(run.totalTokens)}</td>
                <td class="num">{formatCost(run.totalCost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Loading when={loading} />
      {!loading && !error && runs.length === 0 && <p>No runs match.</p>}
      {more && !loading && (
        <button type="button" onClick={() => void load(cursor)}>
          Load {PAGE_SIZE} more
        </button>
      )}
      <p class="muted small" aria-live="polite">
        {runs.length > 0 && `${runs.length.toLocaleString()} shown${project.data ? ` of ${project.data.tracingProject.runCount.toLocaleString()} runs in the project` : ''}`}
      </p>
    </>
  );
}
