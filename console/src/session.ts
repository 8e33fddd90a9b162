// The signed-in key and chosen workspace live in sessionStorage only: gone when the tab closes, never
// in a URL (so never in history, a Referer or a server log) and never in localStorage.
const KEY = 'agent-platform.api-key';
const WORKSPACE = 'agent-platform.workspace';

export type Session = { apiKey: string; workspaceId: string | null };

/** Who the session's key acts for, and where (the console's viewer query). */
type Workspace = { id: string; name: string };
export type Viewer = {
  apiKeyShortKey: string | null;
  permissions: string[];
  /** What the key may do in the selected workspace (workspaces:write: create and change things there). */
  workspacePermissions: string[];
  user: { email: string } | null;
  organization: { id: string; name: string; planTier: string } | null;
  workspace: Workspace | null;
  workspaces: Workspace[];
};

export function loadSession(): Session | null {
  const apiKey = sessionStorage.getItem(KEY);
  return apiKey ? { apiKey, workspaceId: sessionStorage.getItem(WORKSPACE) } : null;
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, session.apiKey);
  if (session.workspaceId) sessionStorage.setItem(WORKSPACE, session.workspaceId);
  else sessionStorage.removeItem(WORKSPACE);
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(WORKSPACE);
}
