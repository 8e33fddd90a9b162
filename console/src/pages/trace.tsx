// One trace: its runs as a tree beside a waterfall of their timing, and the selected run's inputs,
// outputs, events, error, feedback and metadata (chat messages shown as a conversation).
import { useEffect, useMemo, useRef } from 'preact/hooks';
import { ErrorNote, Loading, PageHeader, StatusBadge } from '../components.js';
import { formatCost, formatDuration, formatNumber, formatTime } from '../format.js';
import { useGql } from '../hooks.js';
import { href, navigate } from '../router.js';
import type { Session } from '../session.js';
import { Conversation, findConversation } from './messages.js';

type TraceRun = {
  id: string;
  name: string;
  runType: string;
  status: string;
  startTime: string;
  endTime: string | null;
  latency: number | null;
  totalTokens: number | null;
  totalCost: number | null;
  parentRunId: string | null;
  projectId: string;
};

type RunDetail = TraceRun & {
  inputs: unknown;
  outputs: unknown;
  events: unknown;
  error: string | null;
  extra: { metadata?: Record<string, unknown> } | null;
  tags: string[];
  promptTokens: number | null;
  completionTokens: number | null;
  firstTokenTime: string | null;
  feedback: Feedback[];
};

type Feedback = { id: string; key: string; score: number | null; value: unknown; comment: string | null; createdAt: string };

const TRACE = `query ConsoleTrace($traceId: ID!) { traceRuns(traceId: $traceId) {
  id name runType status startTime endTime latency totalTokens totalCost parentRunId projectId } }`;
const RUN = `query ConsoleRun($id: ID!) { traceRun(id: $id) {
  id name runType status startTime endTime latency totalTokens totalCost parentRunId projectId
  inputs outputs events error extra tags promptTokens completionTokens firstTokenTime
  feedback { id key score value comment createdAt } } }`;

const RUN_TRACE = `query ConsoleRunTrace($id: ID!) { traceRun(id: $id) { id traceId } }`;

type Row = TraceRun & { depth: number; offset: number; width: number };

/** Runs in execution (dotted) order with their depth, and their bar's place on the trace's time axis. */
function layout(runs: TraceRun[]): { rows: Row[]; start: number; span: number } {
  const byId = new Map(runs.map((run) => [run.id, run]));
  const depth = new Map<string, number>();
  const depthOf = (run: TraceRun): number => {
    const known = depth.get(run.id);
    if (known !== undefined) return known;
    const parent = run.parentRunId ? byId.get(run.parentRunId) : undefined;
    const value = parent ? depthOf(parent) + 1 : 0;
    depth.set(run.id, value);
    return value;
  };
  const start = Math.min(...runs.map((run) => Date.parse(run.startTime)));
  // A run still pending is drawn up to the latest time the trace knows of.
  const end = Math.max(...runs.map((run) => Date.parse(run.endTime ?? run.startTime)), start + 1);
  const span = end - start;
  const rows = runs.map((run) => {
    const from = Date.parse(run.startTime) - start;
    const to = Date.parse(run.endTime ?? new Date(end).toISOString()) - start;
    return { ...run, depth: depthOf(run), offset: (from / span) * 100, width: Math.max(((to - from) / span) * 100, 0.3) };
  });
  return { rows, start, span };
}

function Json({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <p class="muted">None.</p>;
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** A run's feedback, newest first: key, score, value, comment and when. */
function FeedbackTable({ feedback }: { feedback: Feedback[] }) {
  if (!feedback.length) return <p class="muted">None.</p>;
  return (
    <div class="table-wrap">
      <table class="feedback" aria-label="Feedback">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col" class="num">Score</th>
            <th scope="col">Value</th>
            <th scope="col">Comment</th>
            <th scope="col">Given</th>
          </tr>
        </thead>
        <tbody>
          {feedback.map((item) => (
            <tr key={item.id}>
              <td>{item.key}</td>
              <td class="num">{item.score === null ? '–' : formatNumber(item.score)}</td>
              <td class="text">{item.value === null || item.value === undefined ? '–' : typeof item.value === 'string' ? item.value : JSON.stringify(item.value)}</td>
              <td class="text">{item.comment ?? ''}</td>
              <td class="text">{formatTime(item.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RunPanel({ session, runId }: { session: Session; runId: string }) {
  const { data, error, loading } = useGql<{ traceRun: RunDetail }>(session, RUN, { id: runId });
  const run = data?.traceRun;
  const conversation = useMemo(() => (run ? { input: findConversation(run.inputs), output: findConversation(run.outputs) } : null), [run]);
  if (error) return <ErrorNote error={error} />;
  if (!run) return <Loading when={loading} />;
  const metadata = run.extra?.metadata;
  const events = Array.isArray(run.events) ? run.events : [];
  return (
    <section class="run-detail" aria-labelledby="run-title">
      <h2 id="run-title">
        {run.name} <StatusBadge status={run.status} />
      </h2>
      <dl class="facts">
        <dt>Type</dt>
        <dd>{run.runType}</dd>
        <dt>Started</dt>
        <dd>{formatTime(run.startTime)}</dd>
        <dt>Latency</dt>
        <dd>{formatDuration(run.latency)}</dd>
        <dt>Tokens</dt>
        <dd>
          {formatNumber(run.totalTokens)}
          {run.promptTokens !== null && ` (${formatNumber(run.promptTokens)} in, ${formatNumber(run.completionTokens)} out)`}
        </dd>
        <dt>Cost</dt>
        <dd>{formatCost(run.totalCost)}</dd>
        {run.tags.length > 0 && (
          <>
            <dt>Tags</dt>
            <dd>{run.tags.join(', ')}</dd>
          </>
        )}
        <dt>Run ID</dt>
        <dd>
          <code>{run.id}</code>
        </dd>
      </dl>
      {run.error && (
        <>
          <h3>Error</h3>
          <pre class="json error-text">{run.error}</pre>
        </>
      )}
      <h3>Inputs</h3>
      {conversation?.input ? <Conversation messages={conversation.input} label="Input messages" /> : <Json value={run.inputs} />}
      <h3>Outputs</h3>
      {conversation?.output ? <Conversation messages={conversation.output} label="Output messages" /> : <Json value={run.outputs} />}
      <h3>Events</h3>
      {events.length ? <Json value={events} /> : <p class="muted">None.</p>}
      <h3>Feedback</h3>
      <FeedbackTable feedback={run.feedback} />
      <h3>Metadata</h3>
      <Json value={metadata && Object.keys(metadata).length ? metadata : null} />
    </section>
  );
}

export function TracePage({ session, traceId, runId }: { session: Session; traceId: string; runId: string | null }) {
  const { data, error, loading } = useGql<{ traceRuns: TraceRun[] }>(session, TRACE, { traceId });
  const runs = data?.traceRuns ?? [];
  const { rows, span } = useMemo(() => (runs.length ? layout(runs) : { rows: [], start: 0, span: 0 }), [runs]);
  const selected = runId && rows.some((row) => row.id === runId) ? runId : rows[0]?.id;
  const root = rows[0];
  const list = useRef<HTMLOListElement>(null);
  const select = (id: string) => navigate(href(['traces', traceId], { run: id }), true);

  // Up and down move between runs of the tree, as in a file tree.
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
    const buttons = [...(list.current?.querySelectorAll<HTMLButtonElement>('button.node') ?? [])];
    const index = buttons.indexOf(document.activeElement as HTMLButtonElement);
    const next = buttons[Math.min(Math.max(index + (event.key === 'ArrowDown' ? 1 : -1), 0), buttons.length - 1)];
    if (next) {
      event.preventDefault();
      next.focus();
      next.click();
    }
  };

  return (
    <>
      <PageHeader title={root ? `Trace: ${root.name}` : 'Trace'}>
        {root && <a href={href(['projects', root.projectId])}>Back to the project</a>}
      </PageHeader>
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && runs.length === 0 && <p role="alert">No trace {traceId} in this workspace.</p>}
      {root && (
        <div class="trace">
          <section class="tree" aria-label="Runs of the trace">
            <div class="tree-head" aria-hidden="true">
              <span>Run</span>
              <span class="axis">
                <span>0</span>
                <span>{formatDuration(span / 1000)}</span>
              </span>
              <span />
            </div>
            <ol ref={list} role="tree" aria-label="Trace tree" onKeyDown={onKeyDown}>
              {rows.map((row) => (
                <li role="treeitem" aria-level={row.depth + 1} aria-selected={row.id === selected}>
                  <button type="button" class={`node${row.id === selected ? ' selected' : ''}`} onClick={() => select(row.id)} aria-current={row.id === selected ? 'true' : undefined}>
                    <span class="node-name" style={{ paddingLeft: `${row.depth * 1.1}em` }}>
                      <span class={`dot dot-${row.status}`} aria-label={row.status} />
                      <span class="run-type">{row.runType}</span> {row.name}
                    </span>
                    <span class="bar-track" aria-hidden="true">
                      <span class={`bar bar-${row.status}`} style={{ left: `${row.offset}%`, width: `${row.width}%` }} />
                    </span>
                    <span class="node-figures">
                      {formatDuration(row.latency)}
                      {row.totalTokens !== null && ` · ${formatNumber(row.totalTokens)} tok`}
                      {row.totalCost !== null && ` · ${formatCost(row.totalCost)}`}
                    </span>
                  </button>
                </li>
              ))}
            </ol>
          </section>
          {selected && <RunPanel session={session} runId={selected} />}
        </div>
      )}
    </>
  );
}

/** A link to one run (LangSmith's run URLs name no trace): opens the run's trace with the run selected. */
export function RunLinkPage({ session, runId }: { session: Session; runId: string }) {
  const { data, error, loading } = useGql<{ traceRun: { id: string; traceId: string } }>(session, RUN_TRACE, { id: runId });
  useEffect(() => {
    if (data?.traceRun) navigate(href(['traces', data.traceRun.traceId], { run: runId }), true);
  }, [data, runId]);
  return (
    <>
      <PageHeader title="Trace" />
      <ErrorNote error={error} />
      <Loading when={loading} />
    </>
  );
}
