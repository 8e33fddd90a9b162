// One deployment: where it answers, its source and secret names, its revisions with their status live
// over graphql-ws, and the selected revision's build and deploy logs as they are written.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, gql } from '../api.js';
import { ErrorNote, Loading, PageHeader, StatusBadge, TableHead } from '../components.js';
import { formatTime } from '../format.js';
import { useGql, useSubmit } from '../hooks.js';
import { useSubscription } from '../live.js';
import { href } from '../router.js';
import type { Session } from '../session.js';

type Revision = {
  id: string;
  status: string;
  commitSha: string | null;
  graphIds: string[];
  sourceRevisionConfig: { repo_ref?: string; graph_config_path?: string };
  createdAt: string;
  updatedAt: string;
};

type Deployment = {
  id: string;
  name: string;
  url: string;
  status: string;
  sourceConfig: { repo_url?: string; build_on_push?: boolean };
  sourceRevisionConfig: { repo_ref?: string; graph_config_path?: string };
  secretNames: string[];
  activeRevisionId: string | null;
  latestRevisionId: string | null;
  createdAt: string;
  revisions: Revision[];
};

const DEPLOYMENT = `query ConsoleDeployment($id: ID!) { deployment(id: $id) {
  id name url status sourceConfig sourceRevisionConfig secretNames activeRevisionId latestRevisionId createdAt
  revisions(limit: 20) { id status commitSha graphIds sourceRevisionConfig createdAt updatedAt } } }`;
const DEPLOYMENT_EVENTS = `subscription ConsoleDeploymentEvents($id: ID!) { deploymentEvents(deploymentId: $id) { revisionId status } }`;
const REVISION_STATUS = `subscription ConsoleRevisionStatus($id: ID!) { revisionStatus(revisionId: $id) { revisionId status } }`;
const LOGS = `query ConsoleRevisionLogs($deploymentId: ID!, $id: ID!, $type: String!, $offset: Int!) {
  revision(deploymentId: $deploymentId, id: $id) { status logs(type: $type, offset: $offset, limit: 1000) { id message createdAt } } }`;
const UPDATE = `mutation ConsoleUpdateDeployment($id: ID!, $input: UpdateDeploymentInput!) { updateDeployment(id: $id, input: $input) { id latestRevisionId } }`;

const FINISHED = ['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN'];
const isFinished = (status: string) => FINISHED.includes(status);
/** How often an unfinished revision's log is read again for new lines. */
const LOG_POLL_MS = 1_000;
/** How often the serving revision's deploy log (its agent server's output) is read again. */
const LOG_FOLLOW_MS = 3_000;
/** A finished revision's log is read once more this long after it finished: the pipeline's last line comes after the status. */
const LOG_LAST_READ_MS = 2_000;

type LogLine = { id: string; message: string; createdAt: string };

/**
 * A revision's build or deploy log: what is written so far, then the new lines each second until the
 * revision finishes, and once more shortly after (the pipeline writes its last line after the status).
 * `follow`: the log keeps growing after that (the serving revision's agent server output), read every few seconds.
 */
function RevisionLog({
  session,
  deploymentId,
  revisionId,
  type,
  status,
  follow,
}: { session: Session; deploymentId: string; revisionId: string; type: 'build' | 'deploy'; status: string; follow: boolean }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const finished = isFinished(status);
  const offset = useRef(0);
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    setLines([]);
    offset.current = 0;
  }, [revisionId, type]);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();
    let lastRead = false;
    const read = async () => {
      try {
        // Every new line, in pages of 1,000.
        for (;;) {
          const data = await gql<{ revision: { status: string; logs: LogLine[] } }>(session, LOGS, { deploymentId, id: revisionId, type, offset: offset.current }, controller.signal);
          if (stopped) return;
          const page = data.revision.logs;
          if (page.length > 0) {
            offset.current += page.length;
            setLines((previous) => [...previous, ...page]);
          }
          if (page.length < 1000) break;
        }
        setError(null);
      } catch (caught) {
        if (!stopped) setError(caught as ApiError);
      }
      if (stopped) return;
      if (!finished) timer = setTimeout(() => void read(), LOG_POLL_MS);
      else if (follow) timer = setTimeout(() => void read(), LOG_FOLLOW_MS);
      else if (!lastRead) {
        lastRead = true;
        timer = setTimeout(() => void read(), LOG_LAST_READ_MS);
      }
    };
    void read();
    return () => {
      stopped = true;
      controller.abort();
      clearTimeout(timer);
    };
  }, [session.apiKey, session.workspaceId, deploymentId, revisionId, type, finished, follow]);
  // Keep the newest line in view while following, unless the reader scrolled up.
  useEffect(() => {
    const element = box.current;
    if (element && element.scrollHeight - element.scrollTop - element.clientHeight < 80) element.scrollTop = element.scrollHeight;
  }, [lines.length]);
  return (
    <section aria-labelledby={`log-${type}`}>
      <h3 id={`log-${type}`}>{type === 'build' ? 'Build log' : 'Deploy log'}</h3>
      <ErrorNote error={error} />
      <pre class="log" ref={box} role="log" aria-label={type === 'build' ? 'Build log' : 'Deploy log'} tabIndex={0}>
        {lines.length === 0 ? <span class="muted">{finished ? 'No lines.' : 'Waiting for the first line…'}</span> : lines.map((line) => `${line.message}\n`).join('')}
      </pre>
    </section>
  );
}

/** Follows an unfinished revision's status from now (its current status first); renders nothing. */
function WatchRevision({ session, revisionId, onStatus }: { session: Session; revisionId: string; onStatus: (revisionId: string, status: string) => void }) {
  useSubscription<{ revisionStatus: { revisionId: string; status: string } }>(session, REVISION_STATUS, { id: revisionId }, {
    next: (data) => onStatus(data.revisionStatus.revisionId, data.revisionStatus.status),
  });
  return null;
}

function DeployRefForm({ session, deployment, onDone }: { session: Session; deployment: Deployment; onDone: (revisionId: string) => void }) {
  const [ref, setRef] = useState(deployment.sourceRevisionConfig.repo_ref ?? '');
  const { busy, error, submit } = useSubmit(async () => {
    const { updateDeployment } = await gql<{ updateDeployment: { latestRevisionId: string } }>(session, UPDATE, { id: deployment.id, input: { repoRef: ref.trim() } });
    onDone(updateDeployment.latestRevisionId);
  });
  return (
    <form class="inline-form" onSubmit={submit}>
      <label for="deploy-ref">Deploy ref</label>
      <input id="deploy-ref" required value={ref} onInput={(event) => setRef(event.currentTarget.value)} spellcheck={false} />
      <button type="submit" disabled={busy}>
        {busy ? 'Starting…' : 'Deploy'}
      </button>
      <ErrorNote error={error} />
    </form>
  );
}

export function DeploymentPage({ session, deploymentId, params, canWrite }: { session: Session; deploymentId: string; params: URLSearchParams; canWrite: boolean }) {
  const { data, error, loading, reload } = useGql<{ deployment: Deployment }>(session, DEPLOYMENT, { id: deploymentId });
  // Status moves seen live, by revision: newer than what the last read said.
  const [live, setLive] = useState<Record<string, string>>({});
  const deployment = data?.deployment.id === deploymentId ? data.deployment : null;
  const known = new Set(deployment?.revisions.map((revision) => revision.id));
  const onStatus = (revisionId: string, status: string) => {
    // A revision made since the page was read (another ref deployed, a push built): read it again.
    if (!known.has(revisionId)) reload();
    setLive((previous) => ({ ...previous, [revisionId]: status }));
  };
  useSubscription<{ deploymentEvents: { revisionId: string; status: string } }>(session, DEPLOYMENT_EVENTS, { id: deploymentId }, {
    next: (event) => onStatus(event.deploymentEvents.revisionId, event.deploymentEvents.status),
  });
  const statusOf = (revision: Revision) => live[revision.id] ?? revision.status;
  // DEPLOYED moves the active revision: read the deployment again to show which one serves.
  const deployedLive = Object.entries(live).filter(([, status]) => status === 'DEPLOYED').map(([id]) => id).join();
  useEffect(() => {
    if (deployedLive) reload();
  }, [deployedLive]);

  if (error) return <ErrorNote error={error} />;
  if (!deployment) return <Loading when={loading} />;
  const selectedId = params.get('revision') ?? deployment.revisions[0]?.id ?? null;
  const selected = deployment.revisions.find((revision) => revision.id === selectedId) ?? null;
  const serving = deployment.activeRevisionId;
  return (
    <>
      <PageHeader title={deployment.name}>
        <a href={href(['deployments'])}>All deployments</a>
        <a href={href(['deployments', deployment.id, 'threads'])}>Threads and chat</a>
      </PageHeader>
      <div class="columns">
        <section class="panel" aria-labelledby="about">
          <h2 id="about">Source</h2>
          <dl class="facts">
            <dt>Git URL</dt>
            <dd>
              <code>{deployment.sourceConfig.repo_url ?? '–'}</code>
            </dd>
            <dt>Ref</dt>
            <dd>
              <code>{deployment.sourceRevisionConfig.repo_ref ?? '–'}</code>
            </dd>
            <dt>Config</dt>
            <dd>
              <code>{deployment.sourceRevisionConfig.graph_config_path ?? '–'}</code>
            </dd>
            <dt>Agent server</dt>
            <dd>
              <code>{deployment.url}</code>
            </dd>
            <dt>Build on push</dt>
            <dd>{deployment.sourceConfig.build_on_push ? 'yes' : 'no'}</dd>
            <dt>Created</dt>
            <dd>{formatTime(deployment.createdAt)}</dd>
          </dl>
          {canWrite && <DeployRefForm session={session} deployment={deployment} onDone={() => reload()} />}
        </section>
        <section class="panel" aria-labelledby="secrets">
          <h2 id="secrets">Secrets</h2>
          {deployment.secretNames.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <ul class="secret-names" aria-label="Secret names">
              {deployment.secretNames.map((name) => (
                <li>
                  <code>{name}</code>
                </li>
              ))}
            </ul>
          )}
          <p class="muted small">Only names are shown: values are stored encrypted and never returned.</p>
        </section>
      </div>
      {deployment.revisions.filter((revision) => !isFinished(revision.status)).map((revision) => (
        <WatchRevision key={revision.id} session={session} revisionId={revision.id} onStatus={onStatus} />
      ))}
      <h2>Revisions</h2>
      <div class="table-wrap">
        <table class="revisions">
          <caption class="visually-hidden">Revisions, newest first; status is live</caption>
          <TableHead columns={['Revision', 'Status', 'Ref', 'Commit', 'Graphs', 'Created']} />
          <tbody>
            {deployment.revisions.map((revision) => (
              <tr class={revision.id === selectedId ? 'selected' : undefined}>
                <th scope="row">
                  <a href={href(['deployments', deployment.id], { revision: revision.id })} aria-current={revision.id === selectedId ? 'true' : undefined}>
                    {revision.id.slice(0, 8)}
                  </a>
                  {revision.id === serving && <span class="muted small"> (serving)</span>}
                </th>
                <td aria-live="polite">
                  <StatusBadge status={statusOf(revision)} />
                </td>
                <td>
                  <code>{revision.sourceRevisionConfig.repo_ref ?? '–'}</code>
                </td>
                <td>
                  <code>{revision.commitSha?.slice(0, 10) ?? '–'}</code>
                </td>
                <td>{revision.graphIds.join(', ') || '–'}</td>
                <td>{formatTime(revision.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {selected && (
        <div class="logs">
          <RevisionLog session={session} deploymentId={deployment.id} revisionId={selected.id} type="build" status={statusOf(selected)} follow={false} />
          <RevisionLog session={session} deploymentId={deployment.id} revisionId={selected.id} type="deploy" status={statusOf(selected)} follow={selected.id === serving} />
        </div>
      )}
    </>
  );
}
