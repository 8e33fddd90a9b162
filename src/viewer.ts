// Who is asking, and what they may do. Permissions come from roles: the organization role grants
// organization-wide permissions; workspace roles grant permissions inside one workspace.
import { AppError } from './errors.js';
import type { DeploymentAccess } from './contracts/gateway-protocol.js';
import type { OrganizationRole, WorkspaceRole } from './generated/prisma/enums.js';

export const PERMISSIONS = [
  'organization:read',
  'organization:manage',
  'workspaces:read',
  'workspaces:write',
  'workspaces:manage',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const ORGANIZATION_ROLE_PERMISSIONS: Record<OrganizationRole, Permission[]> = {
  // Organization admins hold every permission in every workspace of their organization.
  ORGANIZATION_ADMIN: [...PERMISSIONS],
  ORGANIZATION_MEMBER: ['organization:read'],
  ORGANIZATION_GUEST: [],
};

const WORKSPACE_ROLE_PERMISSIONS: Record<WorkspaceRole, Permission[]> = {
  WORKSPACE_ADMIN: ['workspaces:read', 'workspaces:write', 'workspaces:manage'],
  WORKSPACE_EDITOR: ['workspaces:read', 'workspaces:write'],
  WORKSPACE_VIEWER: ['workspaces:read'],
};

export type ApiKeyViewer = {
  kind: 'api-key';
  apiKeyId: string;
  shortKey: string;
  userId: string;
  organizationId: string;
  organizationRole: OrganizationRole;
  /** Workspace roles of the key's user; for a workspace-scoped key only that workspace. */
  workspaceRoles: ReadonlyMap<string, WorkspaceRole>;
  /** Set when the key is bound to one workspace. */
  keyWorkspaceId: string | null;
  /** The workspace selected by X-Tenant-Id, or the key's own workspace. */
  workspaceId: string | null;
};

/** The platform itself (admin CLI, bootstrap, workers): allowed everything, in every organization. */
export type SystemViewer = { kind: 'system' };

/**
 * An unauthenticated caller of a local `agent-platform serve` (like `langgraph dev`): it may use the
 * served deployment (agentContext allows it) and nothing of the platform's tenants.
 */
export type LocalViewer = { kind: 'local'; deploymentId: string };

/**
 * A deployment's trace key (made for each launch of its agent server): it writes runs into one
 * tracing project of the deployment's workspace and holds no permission anywhere. Only the ingest
 * routes accept it (tenancy.service.ts, authenticateIngestKey); `can` refuses it everything.
 */
export type TraceWriterViewer = {
  kind: 'trace-writer';
  apiKeyId: string;
  shortKey: string;
  organizationId: string;
  workspaceId: string;
  deploymentId: string;
  /** The name of the one tracing project it writes (its deployment's name). */
  project: string;
};

export type Viewer = ApiKeyViewer | SystemViewer | LocalViewer | TraceWriterViewer;

/** The unauthenticated caller of `serve` for `deploymentId`. */
export const localViewer = (deploymentId: string): LocalViewer => ({ kind: 'local', deploymentId });

export const SYSTEM_VIEWER: SystemViewer = { kind: 'system' };

/** Whether the viewer holds `permission`, organization-wide or in `workspaceId`. */
export function can(viewer: Viewer, permission: Permission, workspaceId?: string): boolean {
  if (viewer.kind === 'system') return true;
  if (viewer.kind === 'local' || viewer.kind === 'trace-writer') return false;
  if (viewer.keyWorkspaceId && workspaceId && workspaceId !== viewer.keyWorkspaceId) return false;
  const organizationPermissions = ORGANIZATION_ROLE_PERMISSIONS[viewer.organizationRole];
  // A workspace-scoped key never carries organization-wide management rights.
  const organizationWide = viewer.keyWorkspaceId
    ? organizationPermissions.filter((p) => p === 'organization:read' || p.startsWith('workspaces:'))
    : organizationPermissions;
  if (organizationWide.includes(permission)) return true;
  if (!workspaceId) return false;
  const role = viewer.workspaceRoles.get(workspaceId);
  return role !== undefined && WORKSPACE_ROLE_PERMISSIONS[role].includes(permission);
}

/**
 * What the viewer may do in its selected workspace (X-Tenant-Id, or the key's own): the workspace
 * permissions it holds there, from its organization role or its role in that workspace. None without one.
 */
export function workspacePermissions(viewer: Viewer): Permission[] {
  if (viewer.kind !== 'api-key' || !viewer.workspaceId) return [];
  const workspaceId = viewer.workspaceId;
  return PERMISSIONS.filter((permission) => permission.startsWith('workspaces:') && can(viewer, permission, workspaceId));
}

/** Throws FORBIDDEN unless the viewer holds `permission` (in `workspaceId` when given). */
export function assertCan(viewer: Viewer, permission: Permission, workspaceId?: string): void {
  if (!can(viewer, permission, workspaceId)) {
    throw AppError.forbidden(`This API key lacks the ${permission} permission${workspaceId ? ` in workspace ${workspaceId}` : ''}.`);
  }
}

/** The workspace a tenant-scoped operation acts in; throws BAD_REQUEST when none is selected. */
export function requireWorkspace(viewer: Viewer): string {
  if (viewer.kind === 'api-key' && viewer.workspaceId) return viewer.workspaceId;
  throw AppError.badRequest('Select a workspace with the X-Tenant-Id header.');
}

/** The organization the viewer acts in; system callers must name one. */
export function organizationOf(viewer: Viewer, explicit?: string): string {
  if (viewer.kind === 'api-key') return viewer.organizationId;
  if (viewer.kind === 'local' || viewer.kind === 'trace-writer') throw AppError.forbidden();
  if (!explicit) throw AppError.badRequest('organizationId is required.');
  return explicit;
}

/**
 * What the viewer may do at a deployment's agent server (DECISIONS, "Who may call a deployment's
 * agent server"), checked for `access`: the system and serve's local caller of that deployment write;
 * a key of its organization with a role in its workspace reads, and writes with workspaces:write there.
 * NOT_FOUND for anyone else (another organization's key, or a key without a role in the workspace,
 * learns nothing about the deployment); FORBIDDEN for a write by a viewer who may only read.
 */
export function deploymentAccessOf(
  viewer: Viewer,
  deployment: { id: string; tenant_id: string; organization_id: string },
  access: DeploymentAccess,
): DeploymentAccess {
  const mayUse =
    viewer.kind === 'system' ||
    (viewer.kind === 'local' && viewer.deploymentId === deployment.id) ||
    (viewer.kind === 'api-key' && viewer.organizationId === deployment.organization_id && can(viewer, 'workspaces:read', deployment.tenant_id));
  if (!mayUse) throw AppError.notFound('Deployment not found');
  const writes = viewer.kind !== 'api-key' || can(viewer, 'workspaces:write', deployment.tenant_id);
  if (access === 'write' && !writes) throw AppError.forbidden(`This API key lacks the workspaces:write permission in workspace ${deployment.tenant_id}.`);
  return writes ? 'write' : 'read';
}
