// The console's shell: sign-in, the workspace switcher, navigation and the page of the current route.
import { type JSX, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, gql } from './api.js';
import { useSubmit } from './hooks.js';
import { ErrorNote, Loading } from './components.js';
import { ProjectsPage } from './pages/projects.js';
import { RunsPage } from './pages/runs.js';
import { RunLinkPage, TracePage } from './pages/trace.js';
import { href, navigate, useRoute } from './router.js';
import { clearSession, loadSession, type Session, saveSession, type Viewer } from './session.js';
import './styles.css';


const VIEWER = `query ConsoleViewer { viewer { apiKeyShortKey permissions workspacePermissions user { email } organization { id name planTier } workspace { id name } workspaces { id name } } }`;

// Pages other than the traces' load when first opened: the traces pages never pay for the chart
// library, the deployments' live client or the exports page. A page opened by its link starts loading
// its code at once, beside the sign-in's viewer query rather than after it.
function lazyPage<C extends (props: any) => JSX.Element>(load: () => Promise<C>) {
  let loading: Promise<C> | undefined;
  const preload = () => (loading ??= load());
  function LazyPage(props: Parameters<C>[0]) {
    const [Page, setPage] = useState<{ component: C } | null>(null);
    useEffect(() => {
      void preload().then((component) => setPage({ component }));
    }, []);
    return Page ? <Page.component {...props} /> : <Loading when />;
  }
  return Object.assign(LazyPage, { preload });
}
const UsagePage = lazyPage(() => import('./pages/usage.js').then((module) => module.UsagePage));
const DeploymentsPage = lazyPage(() => import('./pages/deployments.js').then((module) => module.DeploymentsPage));
const DeploymentPage = lazyPage(() => import('./pages/deployment.js').then((module) => module.DeploymentPage));
const ThreadsPage = lazyPage(() => import('./pages/threads.js').then((module) => module.ThreadsPage));
const ExportsPage = lazyPage(() => import('./pages/exports.js').then((module) => module.ExportsPage));
const DatasetsPage = lazyPage(() => import('./pages/datasets.js').then((module) => module.DatasetsPage));
const DatasetPage = lazyPage(() => import('./pages/datasets.js').then((module) => module.DatasetPage));

/** Starts loading the code of the page a link opens (code only: no data is asked before the viewer is known). */
function preloadPage(hash: string): void {
  const [section, id, sub] = hash.replace(/^#\/?/, '').split('?')[0]!.split('/');
  if (section === 'usage') void UsagePage.preload();
  else if (section === 'exports') void ExportsPage.preload();
  else if (section === 'datasets') void (id ? DatasetPage : DatasetsPage).preload();
  else if (section === 'deployments') void (sub === 'threads' ? ThreadsPage : id ? DeploymentPage : DeploymentsPage).preload();
}

function SignIn({ onSignedIn }: { onSignedIn: (session: Session, viewer: Viewer) => void }) {
  const [key, setKey] = useState('');
  const { busy, error, submit } = useSubmit(async () => {
    const session: Session = { apiKey: key.trim(), workspaceId: null };
    const { viewer } = await gql<{ viewer: Viewer }>(session, VIEWER).catch((caught: unknown) => {
      throw caught instanceof ApiError && caught.code === 'UNAUTHENTICATED' ? new ApiError('That API key was not accepted.', caught.code) : caught;
    });
    onSignedIn({ ...session, workspaceId: viewer.workspace?.id ?? viewer.workspaces[0]?.id ?? null }, viewer);
  });
  return (
    <main class="sign-in">
      <h1>Agent Platform</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          aria-describedby="api-key-help"
        />
        <p id="api-key-help" class="muted">
          Kept in this tab only (sessionStorage), sent as the X-Api-Key header.
        </p>
        <button type="submit" disabled={busy || !key.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <ErrorNote error={error} />
      </form>
      <p class="muted">
        Developers: <a href="/graphql">GraphiQL</a> · <a href="/docs">REST reference</a>
      </p>
    </main>
  );
}

function Shell({ session, viewer, onWorkspace, onSignOut }: { session: Session; viewer: Viewer; onWorkspace: (id: string, options?: { keepRoute?: boolean }) => void; onSignOut: () => void }) {
  const route = useRoute();
  const [section = 'projects'] = route.path;
  // Usage is organization-wide: a key without organization:read gets no link and no request.
  const canSeeUsage = viewer.permissions.includes('organization:read');
  // Bulk export is a Plus and Enterprise feature: other plans get no link and no request.
  const canExport = viewer.organization?.planTier === 'plus' || viewer.organization?.planTier === 'enterprise';
  // Forms that create or change things show only to keys that may write in the workspace.
  const canWrite = viewer.workspacePermissions.includes('workspaces:write');
  // A link that names its workspace (LangSmith's web links do) opens in it, if this key may read it.
  const linkWorkspace = route.params.get('workspace');
  const switching = Boolean(linkWorkspace && linkWorkspace !== session.workspaceId && viewer.workspaces.some((workspace) => workspace.id === linkWorkspace));
  useEffect(() => {
    if (switching) onWorkspace(linkWorkspace!, { keepRoute: true });
  }, [switching, linkWorkspace]);
  let page;
  if (switching) page = <Loading when />;
  else if (!session.workspaceId) page = <p role="alert">This key can read no workspace.</p>;
  else if (section === 'projects' && route.path[1]) page = <RunsPage session={session} projectId={route.path[1]} params={route.params} />;
  else if (section === 'runs' && route.path[1]) page = <RunLinkPage key={route.path[1]} session={session} runId={route.path[1]} />;
  else if (section === 'traces' && route.path[1]) page = <TracePage session={session} traceId={route.path[1]} runId={route.params.get('run')} />;
  else if (section === 'usage' && canSeeUsage) page = <UsagePage session={session} viewer={viewer} params={route.params} />;
  else if (section === 'deployments' && route.path[1] && route.path[2] === 'threads')
    page = <ThreadsPage key={route.path[1]} session={session} deploymentId={route.path[1]} params={route.params} canWrite={canWrite} />;
  else if (section === 'deployments' && route.path[1]) page = <DeploymentPage key={route.path[1]} session={session} deploymentId={route.path[1]} params={route.params} canWrite={canWrite} />;
  else if (section === 'deployments') page = <DeploymentsPage session={session} params={route.params} canWrite={canWrite} />;
  else if (section === 'datasets' && route.path[1]) page = <DatasetPage key={route.path[1]} session={session} datasetId={route.path[1]} params={route.params} />;
  else if (section === 'datasets') page = <DatasetsPage session={session} />;
  else if (section === 'exports' && canExport) page = <ExportsPage session={session} params={route.params} canWrite={canWrite} />;
  else page = <ProjectsPage session={session} />;
  const nav = [
    { id: 'projects', label: 'Traces', to: href([]) },
    { id: 'datasets', label: 'Datasets', to: href(['datasets']) },
    { id: 'deployments', label: 'Deployments', to: href(['deployments']) },
    ...(canExport ? [{ id: 'exports', label: 'Exports', to: href(['exports']) }] : []),
    ...(canSeeUsage ? [{ id: 'usage', label: 'Usage', to: href(['usage']) }] : []),
  ];
  const current = section === 'traces' ? 'projects' : section;
  return (
    <>
      <header class="top">
        <a class="brand" href={href([])}>
          Agent Platform
        </a>
        <nav aria-label="Sections">
          {nav.map((item) => (
            <a href={item.to} aria-current={current === item.id ? 'page' : undefined}>
              {item.label}
            </a>
          ))}
        </nav>
        <div class="who">
          <label for="workspace">Workspace</label>
          <select id="workspace" value={session.workspaceId ?? ''} onChange={(event) => onWorkspace(event.currentTarget.value)}>
            {viewer.workspaces.map((workspace) => (
              <option value={workspace.id}>{workspace.name}</option>
            ))}
          </select>
          <span class="muted" title={viewer.apiKeyShortKey ?? undefined}>
            {viewer.user?.email}
          </span>
          <button type="button" class="link" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main">{page}</main>
    </>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [viewer, setViewer] = useState<Viewer | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  // A reload keeps the session (sessionStorage) but not the viewer: ask again who the key is.
  useEffect(() => {
    if (!session || viewer) return;
    gql<{ viewer: Viewer }>(session, VIEWER).then(
      ({ viewer: found }) => {
        // No workspace chosen yet, or one the key can no longer read: the key's own, or its first.
        if (!found.workspaces.some((workspace) => workspace.id === session.workspaceId)) {
          const next = { ...session, workspaceId: found.workspace?.id ?? found.workspaces[0]?.id ?? null };
          if (next.workspaceId !== session.workspaceId) {
            // Asked again with the workspace chosen: what the key may do there comes with it.
            saveSession(next);
            setSession(next);
            return;
          }
        }
        setViewer(found);
      },
      (caught: ApiError) => {
        if (caught.code === 'UNAUTHENTICATED' || caught.code === 'FORBIDDEN') signOut();
        else setError(caught);
      },
    );
  }, [session, viewer]);

  const signOut = () => {
    clearSession();
    setSession(null);
    setViewer(null);
  };
  if (!session) {
    return (
      <SignIn
        onSignedIn={(next, found) => {
          saveSession(next);
          setSession(next);
          // The viewer as asked without a workspace holds the workspace's permissions only if it chose the same one.
          if (found.workspace?.id === next.workspaceId) setViewer(found);
        }}
      />
    );
  }
  if (!viewer) return error ? <ErrorNote error={error} /> : <p role="status">Loading…</p>;
  return (
    <Shell
      session={session}
      viewer={viewer}
      onSignOut={signOut}
      onWorkspace={(workspaceId, { keepRoute = false } = {}) => {
        const next = { ...session, workspaceId };
        saveSession(next);
        setSession(next);
        // What the key may do differs by workspace: ask who it is there.
        setViewer(null);
        // Projects, runs and traces belong to one workspace: start again from its project list
        // (but for a link that named the workspace it opens).
        if (!keepRoute) navigate(href([]));
      }}
    />
  );
}

preloadPage(location.hash);
render(<App />, document.getElementById('app')!);
