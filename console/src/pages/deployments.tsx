// The workspace's deployments with their latest revision's status (live), and a form that creates one
// from a git URL and ref.
import { useState } from 'preact/hooks';
import { gql } from '../api.js';
import { ErrorNote, Loading, PageHeader, StatusBadge, TableHead } from '../components.js';
import { formatTime } from '../format.js';
import { useGql, useSubmit } from '../hooks.js';
import { useSubscription } from '../live.js';
import { href, navigate } from '../router.js';
import type { Session } from '../session.js';

type DeploymentSummary = {
  id: string;
  name: string;
  sourceConfig: { repo_url?: string };
  sourceRevisionConfig: { repo_ref?: string };
  createdAt: string;
  revisions: { id: string; status: string; updatedAt: string }[];
};

const DEPLOYMENTS = `query ConsoleDeployments { deployments(limit: 100) {
  id name sourceConfig sourceRevisionConfig createdAt revisions(limit: 1) { id status updatedAt } } }`;
const CREATE = `mutation ConsoleCreateDeployment($input: CreateDeploymentInput!) { createDeployment(input: $input) { id } }`;

type SecretRow = { name: string; value: string };

function CreateDeploymentForm({ session, onCancel }: { session: Session; onCancel: () => void }) {
  const [name, setName] = useState('');
  const [repoUrl, setRepoUrl] = useState('');
  const [repoRef, setRepoRef] = useState('main');
  const [configPath, setConfigPath] = useState('langgraph.json');
  const [secrets, setSecrets] = useState<SecretRow[]>([]);
  const setSecret = (index: number, change: Partial<SecretRow>) => setSecrets(secrets.map((row, at) => (at === index ? { ...row, ...change } : row)));
  // On success the page moves to the new deployment.
  const { busy, error, submit } = useSubmit(async () => {
    const input = {
      name: name.trim(),
      repoUrl: repoUrl.trim(),
      repoRef: repoRef.trim(),
      graphConfigPath: configPath.trim(),
      secrets: secrets.filter((row) => row.name.trim()).map((row) => ({ name: row.name.trim(), value: row.value })),
    };
    const { createDeployment } = await gql<{ createDeployment: { id: string } }>(session, CREATE, { input });
    navigate(href(['deployments', createDeployment.id]));
  });
  return (
    <form class="panel form-grid" onSubmit={submit} aria-labelledby="new-deployment">
      <h2 id="new-deployment">New deployment</h2>
      <label>
        Name
        <input required value={name} onInput={(event) => setName(event.currentTarget.value)} autoComplete="off" />
      </label>
      <label>
        Git URL
        <input required value={repoUrl} onInput={(event) => setRepoUrl(event.currentTarget.value)} placeholder="https://github.com/you/agent.git" autoComplete="off" spellcheck={false} />
      </label>
      <label>
        Ref
        <input required value={repoRef} onInput={(event) => setRepoRef(event.currentTarget.value)} spellcheck={false} />
      </label>
      <label>
        Config path
        <input required value={configPath} onInput={(event) => setConfigPath(event.currentTarget.value)} spellcheck={false} />
      </label>
      <fieldset>
        <legend>Secrets (environment of the agent server; values are stored encrypted and never shown again)</legend>
        {secrets.map((row, index) => (
          <div class="secret-row">
            <label>
              Secret name
              <input value={row.name} onInput={(event) => setSecret(index, { name: event.currentTarget.value })} spellcheck={false} autoComplete="off" />
            </label>
            <label>
              Secret value
              <input type="password" value={row.value} onInput={(event) => setSecret(index, { value: event.currentTarget.value })} autoComplete="off" />
            </label>
            <button type="button" onClick={() => setSecrets(secrets.filter((_, at) => at !== index))} aria-label={`Remove secret ${row.name || index + 1}`}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" onClick={() => setSecrets([...secrets, { name: '', value: '' }])}>
          Add a secret
        </button>
      </fieldset>
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create deployment'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}

export function DeploymentsPage({ session, params, canWrite }: { session: Session; params: URLSearchParams; canWrite: boolean }) {
  const { data, error, loading, reload } = useGql<{ deployments: DeploymentSummary[] }>(session, DEPLOYMENTS);
  const creating = canWrite && params.get('new') === '1';
  // Live: each status move of a listed deployment's revisions, by revision (a new revision: read the list again).
  const [moves, setMoves] = useState<Record<string, string>>({});
  const latestIds = new Set(data?.deployments.map((deployment) => deployment.revisions[0]?.id));
  return (
    <>
      <PageHeader title="Deployments">
        {canWrite && !creating && (
          <a class="button primary" href={href(['deployments'], { new: '1' })}>
            New deployment
          </a>
        )}
      </PageHeader>
      {creating && <CreateDeploymentForm session={session} onCancel={() => navigate(href(['deployments']))} />}
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data?.deployments.map((deployment) => (
        <LiveStatus
          key={deployment.id}
          session={session}
          deploymentId={deployment.id}
          onMove={(move) => {
            if (!latestIds.has(move.revisionId)) reload();
            setMoves((previous) => ({ ...previous, [move.revisionId]: move.status }));
          }}
        />
      ))}
      {data && data.deployments.length === 0 && <p>No deployments in this workspace yet.</p>}
      {data && data.deployments.length > 0 && (
        <div class="table-wrap">
          <table class="deployments">
            <caption class="visually-hidden">Deployments, newest first</caption>
            <TableHead columns={['Deployment', 'Latest revision', 'Source', 'Ref', 'Created']} />
            <tbody>
              {data.deployments.map((deployment) => {
                const latest = deployment.revisions[0];
                const status = latest ? (moves[latest.id] ?? latest.status) : undefined;
                return (
                  <tr>
                    <th scope="row">
                      <a href={href(['deployments', deployment.id])}>{deployment.name}</a>
                    </th>
                    <td>{status ? <StatusBadge status={status} /> : '–'}</td>
                    <td class="wrap">
                      <code>{deployment.sourceConfig.repo_url ?? '–'}</code>
                    </td>
                    <td>
                      <code>{deployment.sourceRevisionConfig.repo_ref ?? '–'}</code>
                    </td>
                    <td>{formatTime(deployment.createdAt)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

const DEPLOYMENT_EVENTS = `subscription ConsoleDeploymentEvents($id: ID!) { deploymentEvents(deploymentId: $id) { revisionId status } }`;

/** Follows one deployment's revision status moves; renders nothing. */
function LiveStatus({ session, deploymentId, onMove }: { session: Session; deploymentId: string; onMove: (move: { revisionId: string; status: string }) => void }) {
  useSubscription<{ deploymentEvents: { revisionId: string; status: string } }>(session, DEPLOYMENT_EVENTS, { id: deploymentId }, { next: (data) => onMove(data.deploymentEvents) });
  return null;
}
