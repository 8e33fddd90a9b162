// A deployment's threads with their status, state and runs, and a chat box: a message sent to an
// assistant runs on the selected thread (or a new one) and its reply is shown token by token as the
// run streams it (runEvents over graphql-ws, messages-tuple mode).
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, gql } from '../api.js';
import { ErrorNote, Loading, PageHeader, StatusBadge, TableHead } from '../components.js';
import { formatTime } from '../format.js';
import { useGql } from '../hooks.js';
import { subscribe } from '../live.js';
import { href, navigate } from '../router.js';
import type { Session } from '../session.js';
import { type ChatMessage, Conversation, findConversation } from './messages.js';

type RunSummary = { runId: string; status: string; assistantId: string; createdAt: string };
type ThreadSummary = { threadId: string; status: string; metadata: { graph_id?: string }; createdAt: string; updatedAt: string; runs: RunSummary[] };
type Assistant = { assistantId: string; graphId: string; name: string };

const OVERVIEW = `query ConsoleThreads($deploymentId: ID!) {
  deployment(id: $deploymentId) { id name }
  assistants(deploymentId: $deploymentId, limit: 50) { assistantId graphId name }
  threads(deploymentId: $deploymentId, limit: 50) { threadId status metadata createdAt updatedAt runs(limit: 1) { runId status assistantId createdAt } } }`;
const THREAD = `query ConsoleThread($deploymentId: ID!, $id: ID!) { thread(deploymentId: $deploymentId, id: $id) {
  ... on QueryThreadSuccess { data { threadId status metadata values interrupts createdAt updatedAt runs(limit: 20) { runId status assistantId createdAt } } }
  ... on AppError { code message } } }`;
const STATE = `query ConsoleThreadState($deploymentId: ID!, $id: ID!) { thread(deploymentId: $deploymentId, id: $id) {
  ... on QueryThreadSuccess { data { state { next values } } } ... on AppError { code message } } }`;
const CREATE_THREAD = `mutation ConsoleCreateThread($input: CreateThreadInput!) { createThread(input: $input) {
  ... on MutationCreateThreadSuccess { data { threadId } } ... on AppError { code message } } }`;
const CREATE_RUN = `mutation ConsoleCreateRun($input: CreateRunInput!) { createRun(input: $input) {
  ... on MutationCreateRunSuccess { data { runId } } ... on AppError { code message } } }`;
const RUN_EVENTS = `subscription ConsoleRunEvents($runId: ID!, $deploymentId: ID!) {
  runEvents(runId: $runId, deploymentId: $deploymentId, streamModes: ["messages"]) { seq event data } }`;

type Thread = ThreadSummary & { values: unknown; interrupts: unknown; runs: RunSummary[] };
type Result<T> = ({ data: T } & { code?: undefined }) | { code: string; message: string; data?: undefined };

function unwrap<T>(result: Result<T>): T {
  if (result.code !== undefined) throw new ApiError(result.message, result.code);
  return result.data as T;
}

/** A message as messages-tuple sends it: a chunk (or whole message) and its metadata. */
type StreamedMessage = { id?: string; type?: string; content?: unknown };

const ROLE_OF_TYPE: Record<string, string> = { AIMessageChunk: 'assistant', ai: 'assistant', tool: 'tool', ToolMessageChunk: 'tool', human: 'user', system: 'system' };

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'string' ? part : ((part as { text?: string })?.text ?? ''))).join('');
  return '';
}

type Exchange = { threadId: string; runId: string | null; sent: string; replies: { id: string; role: string; content: string }[]; done: boolean; error: ApiError | null };

function RunsTable({ runs, caption }: { runs: RunSummary[]; caption: string }) {
  return (
    <table class="runs-of-thread">
      <caption>{caption}</caption>
      <TableHead columns={['Run', 'Status', 'Created']} />
      <tbody>
        {runs.map((run) => (
          <tr>
            <th scope="row">
              <code>{run.runId.slice(0, 8)}</code>
            </th>
            <td>
              <StatusBadge status={run.status} />
            </td>
            <td>{formatTime(run.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ThreadState({ session, deploymentId, threadId, generation }: { session: Session; deploymentId: string; threadId: string; generation: number }) {
  const state = useGql<{ thread: Result<{ state: { next: string[]; values: unknown } }> }>(session, STATE, { deploymentId, id: threadId });
  useEffect(() => {
    if (generation > 0) state.reload();
  }, [generation]);
  let error = state.error;
  let next: string[] | null = null;
  if (state.data) {
    try {
      next = unwrap(state.data.thread).state.next;
    } catch (caught) {
      error = caught as ApiError;
    }
  }
  return (
    <p class="muted small">
      {error ? <span class="error">State unavailable: {error.message}</span> : next === null ? 'Reading state…' : next.length ? `Next: ${next.join(', ')}` : 'State: done (no node pending).'}
    </p>
  );
}

export function ThreadsPage({ session, deploymentId, params, canWrite }: { session: Session; deploymentId: string; params: URLSearchParams; canWrite: boolean }) {
  const threadId = params.get('thread');
  const overview = useGql<{ deployment: { id: string; name: string }; assistants: Assistant[]; threads: ThreadSummary[] }>(session, OVERVIEW, { deploymentId });
  const thread = useGql<{ thread: Result<Thread> }>(session, threadId ? THREAD : null, { deploymentId, id: threadId });
  const [assistantId, setAssistantId] = useState('');
  const [draft, setDraft] = useState('');
  const [exchange, setExchange] = useState<Exchange | null>(null);
  // Bumped when a run ends: the thread's state is read again.
  const [generation, setGeneration] = useState(0);
  const stopStream = useRef<(() => void) | null>(null);
  useEffect(() => () => stopStream.current?.(), []);

  const assistants = overview.data?.assistants ?? [];
  const chosen = assistantId || assistants[0]?.assistantId || '';
  let current: Thread | null = null;
  let threadError: ApiError | null = thread.error;
  if (threadId && thread.data) {
    try {
      current = unwrap(thread.data.thread);
      if (current.threadId !== threadId) current = null;
    } catch (caught) {
      threadError = caught as ApiError;
    }
  }
  const busy = exchange !== null && !exchange.done;

  const send = async (event: Event) => {
    event.preventDefault();
    const text = draft.trim();
    if (!text || !chosen || busy) return;
    let target = threadId;
    const started: Exchange = { threadId: target ?? '', runId: null, sent: text, replies: [], done: false, error: null };
    setExchange(started);
    setDraft('');
    try {
      if (!target) {
        const created = await gql<{ createThread: Result<{ threadId: string }> }>(session, CREATE_THREAD, { input: { deploymentId } });
        target = unwrap(created.createThread).threadId;
        navigate(href(['deployments', deploymentId, 'threads'], { thread: target }), true);
      }
      const input = { messages: [{ role: 'user', content: text }] };
      const created = await gql<{ createRun: Result<{ runId: string }> }>(session, CREATE_RUN, {
        input: { deploymentId, threadId: target, assistantId: chosen, input, streamModes: ['messages-tuple', 'values'] },
      });
      const runId = unwrap(created.createRun).runId;
      const threadOfRun = target;
      setExchange((previous) => previous && { ...previous, threadId: threadOfRun, runId });
      // The thread is busy now, with a new run: show that, as the list does.
      overview.reload();
      thread.reload();
      stopStream.current?.();
      stopStream.current = subscribe<{ runEvents: { seq: number; event: string; data: unknown } }>(session, RUN_EVENTS, { runId, deploymentId }, {
        next: ({ runEvents: streamed }) => {
          if (streamed.event === 'error') {
            const detail = streamed.data as { message?: string; error?: string };
            setExchange((previous) => previous && { ...previous, error: new ApiError(detail.message ?? detail.error ?? 'The run failed.', 'RUN_ERROR') });
            return;
          }
          if (streamed.event !== 'messages') return;
          const [message] = streamed.data as [StreamedMessage, unknown];
          const role = ROLE_OF_TYPE[message.type ?? ''] ?? 'assistant';
          if (role === 'user') return;
          const id = message.id ?? `reply-${streamed.seq}`;
          const chunk = contentText(message.content);
          // messages-tuple sends each streamed token of a message under its id, and a message that
          // was not streamed (a tool's answer) once, whole: the texts of one id add up.
          setExchange((previous) => {
            if (!previous) return previous;
            const replies = [...previous.replies];
            const at = replies.findIndex((reply) => reply.id === id);
            if (at === -1) replies.push({ id, role, content: chunk });
            else replies[at] = { ...replies[at]!, content: replies[at]!.content + chunk };
            return { ...previous, replies };
          });
        },
        error: (error) => setExchange((previous) => previous && { ...previous, error, done: true }),
        complete: () => {
          setExchange((previous) => previous && { ...previous, done: true });
          thread.reload();
          overview.reload();
          setGeneration((value) => value + 1);
        },
      });
    } catch (caught) {
      setExchange((previous) => previous && { ...previous, error: caught instanceof ApiError ? caught : new ApiError(String(caught), undefined), done: true });
    }
  };

  const stored: ChatMessage[] = current ? (findConversation(current.values) ?? []) : [];
  // The exchange in flight shows below the stored conversation until the thread, read again, holds it.
  const showExchange = exchange && exchange.threadId === (threadId ?? '') && (!exchange.done || (current?.runs[0]?.runId === exchange.runId ? false : true));
  return (
    <>
      <PageHeader title={overview.data ? `${overview.data.deployment.name}: threads` : 'Threads'}>
        <a href={href(['deployments', deploymentId])}>Deployment</a>
      </PageHeader>
      <ErrorNote error={overview.error} />
      <Loading when={overview.loading && !overview.data} />
      <div class="threads-layout">
        <nav class="thread-list" aria-label="Threads">
          <a class="button" href={href(['deployments', deploymentId, 'threads'])} aria-current={threadId ? undefined : 'page'}>
            New thread
          </a>
          {overview.data && overview.data.threads.length === 0 && <p class="muted">No threads yet.</p>}
          <ul>
            {overview.data?.threads.map((item) => (
              <li>
                <a href={href(['deployments', deploymentId, 'threads'], { thread: item.threadId })} aria-current={item.threadId === threadId ? 'page' : undefined}>
                  <code>{item.threadId.slice(0, 8)}</code> <StatusBadge status={item.status} />
                  <span class="muted small">
                    {' '}
                    {item.metadata.graph_id ?? ''} · {item.runs[0] ? `last run ${item.runs[0].status}` : 'no runs'} · {formatTime(item.updatedAt)}
                  </span>
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <section class="thread" aria-label={threadId ? `Thread ${threadId}` : 'New thread'}>
          {threadId ? (
            <>
              <h2>
                Thread <code>{threadId}</code> {current && <StatusBadge status={current.status} />}
              </h2>
              <ErrorNote error={threadError} />
              {current && <ThreadState session={session} deploymentId={deploymentId} threadId={threadId} generation={generation} />}
            </>
          ) : (
            <h2>New thread</h2>
          )}
          {stored.length > 0 && <Conversation messages={stored} label="Conversation" />}
          {current && !stored.length && current.values !== null && (
            <details>
              <summary>State values</summary>
              <pre class="json">{JSON.stringify(current.values, null, 2)}</pre>
            </details>
          )}
          {showExchange && exchange && (
            <ol class="conversation live" aria-label="Reply in progress" aria-live="polite" aria-busy={!exchange.done}>
              <li class="message message-user">
                <span class="role">user</span>
                <div class="content">{exchange.sent}</div>
              </li>
              {exchange.replies
                .filter((reply) => reply.content)
                .map((reply) => (
                  <li class={`message message-${reply.role}`}>
                    <span class="role">{reply.role}</span>
                    <div class="content streaming">{reply.content}</div>
                  </li>
                ))}
              {!exchange.done && exchange.replies.length === 0 && <li class="muted">Running…</li>}
            </ol>
          )}
          {exchange?.error && <ErrorNote error={exchange.error} />}
          {!canWrite && <p class="muted">This key may read this workspace but not run its assistants.</p>}
          {canWrite && (
            <form class="composer" onSubmit={send}>
              <label for="assistant">Assistant</label>
              <select id="assistant" value={chosen} onChange={(event) => setAssistantId(event.currentTarget.value)}>
                {assistants.map((assistant) => (
                  <option value={assistant.assistantId}>
                    {assistant.name === assistant.graphId ? assistant.graphId : `${assistant.name} (${assistant.graphId})`}
                  </option>
                ))}
              </select>
              <label for="message">Message</label>
              <textarea
                id="message"
                rows={2}
                value={draft}
                onInput={(event) => setDraft(event.currentTarget.value)}
                onKeyDown={(event) => {
                  if (event.key === 'Enter' && !event.shiftKey) void send(event);
                }}
              />
              <button type="submit" disabled={busy || !chosen || !draft.trim()}>
                {busy ? 'Running…' : 'Send'}
              </button>
            </form>
          )}
          {current && current.runs.length > 0 && <RunsTable runs={current.runs} caption="Runs of the thread, newest first" />}
        </section>
      </div>
    </>
  );
}
