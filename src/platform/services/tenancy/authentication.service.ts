// Authentication: an API key (and the optional X-Tenant-Id workspace) resolved to the request's viewer,
// cached per key and tenant (viewer-cache.ts), a deployment's trace key to a viewer that may only
// write its project's traces.
import { AppError } from '../../../errors.js';
import type { OrganizationRole, WorkspaceRole } from '../../../generated/prisma/enums.js';
import { isUuid } from '../../../ids.js';
import type { Deps } from '../../../context.js';
import { hashApiKey } from './api-key-secret.js';
import { type ApiKeyViewer, can, type TraceWriterViewer } from '../../../viewer.js';

// last_used_at is informational; writing it on every request would make every read a write.
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Resolves an API key (and the optional X-Tenant-Id workspace) to a viewer.
 * Throws UNAUTHENTICATED for a missing, unknown or revoked key, BAD_REQUEST for a malformed tenant
 * id, FORBIDDEN for a workspace the key cannot reach (whether or not it exists elsewhere) and for a
 * deployment's trace key, which only trace ingestion accepts (authenticateIngestKey).
 */
export async function authenticateApiKey(deps: Deps, key: string | undefined, tenantId: string | undefined): Promise<ApiKeyViewer> {
  const viewer = await authenticateIngestKey(deps, key, tenantId);
  if (viewer.kind === 'trace-writer') throw AppError.forbidden('This key only writes traces of its deployment.');
  return viewer;
}

/**
 * authenticateApiKey for the trace ingestion routes, which alone also accept a deployment's trace
 * key: its viewer may write runs into its deployment's project and do nothing else.
 */
export async function authenticateIngestKey(
  deps: Deps,
  key: string | undefined,
  tenantId: string | undefined,
): Promise<ApiKeyViewer | TraceWriterViewer> {
  if (!key) throw AppError.unauthenticated('Missing API key: send it in the X-Api-Key header.');
  const requested = tenantId?.trim() || undefined;
  if (requested && !isUuid(requested)) throw AppError.badRequest('X-Tenant-Id must be a workspace ID (a UUID).');

  const secretHash = hashApiKey(key.trim());
  const cached = deps.viewers.get(secretHash, requested);
  if (cached) return cached;
  const generation = deps.viewers.generation;

  // One round trip per key and tenant per cache TTL (viewer-cache.ts says how revocation reaches
  // every process): the key, its user's organization role, the user's workspace roles (bounded to
  // the key's workspace), and the organization of the requested tenant.
  const { rows } = await deps.db.pool.query<AuthRow>(AUTHENTICATE_SQL, [secretHash, requested ?? null]);
  const row = rows[0];
  if (!row) throw AppError.unauthenticated('Invalid API key.');

  let viewer: ApiKeyViewer | TraceWriterViewer;
  if (row.deployment_id) {
    if (requested && requested !== row.workspace_id) throw AppError.forbidden(`This API key has no access to workspace ${requested}.`);
    viewer = {
      kind: 'trace-writer',
      apiKeyId: row.id,
      shortKey: row.short_key,
      organizationId: row.organization_id,
      workspaceId: row.workspace_id!,
      deploymentId: row.deployment_id,
      project: row.trace_project!,
    };
  } else {
    // A key whose user left the organization is no key.
    if (!row.user_id || !row.organization_role) throw AppError.unauthenticated('Invalid API key.');
    const apiKeyViewer: ApiKeyViewer = {
      kind: 'api-key',
      apiKeyId: row.id,
      shortKey: row.short_key,
      userId: row.user_id,
      organizationId: row.organization_id,
      organizationRole: row.organization_role,
      workspaceRoles: new Map(row.workspace_roles.map((entry) => [entry.workspace_id, entry.role] as const)),
      keyWorkspaceId: row.workspace_id,
      workspaceId: row.workspace_id,
    };
    if (requested) {
      if (row.tenant_organization_id !== row.organization_id || !can(apiKeyViewer, 'workspaces:read', requested)) {
        throw AppError.forbidden(`This API key has no access to workspace ${requested}.`);
      }
      apiKeyViewer.workspaceId = requested;
    }
    viewer = apiKeyViewer;
  }

  if (!row.last_used_at || Date.now() - row.last_used_at.getTime() > LAST_USED_RESOLUTION_MS) {
    // Fire and forget: a lost update here only makes last_used_at a minute staler.
    deps.db.pool
      .query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [row.id])
      .catch((error: unknown) => deps.logger.warn({ err: error }, 'could not record API key use'));
  }
  deps.viewers.set(secretHash, requested, viewer, generation);
  return viewer;
}

type AuthRow = {
  id: string;
  short_key: string;
  user_id: string | null;
  organization_id: string;
  workspace_id: string | null;
  deployment_id: string | null;
  trace_project: string | null;
  last_used_at: Date | null;
  organization_role: OrganizationRole | null;
  workspace_roles: { workspace_id: string; role: WorkspaceRole }[];
  tenant_organization_id: string | null;
};

// A trace key has no user (so no membership) and stops working the moment its deployment is deleted,
// even before its row goes.
const AUTHENTICATE_SQL = `
  SELECT k.id, k.short_key, k.user_id, k.organization_id, k.workspace_id, k.deployment_id, k.trace_project, k.last_used_at,
         m.role AS organization_role,
         COALESCE((
           SELECT json_agg(json_build_object('workspace_id', wm.workspace_id, 'role', wm.role))
             FROM workspace_memberships wm
             JOIN workspaces w ON w.id = wm.workspace_id
            WHERE wm.user_id = k.user_id
              AND w.organization_id = k.organization_id
              AND (k.workspace_id IS NULL OR wm.workspace_id = k.workspace_id)
         ), '[]'::json) AS workspace_roles,
         (SELECT organization_id FROM workspaces WHERE id = $2::uuid) AS tenant_organization_id
    FROM api_keys k
    LEFT JOIN organization_memberships m ON m.organization_id = k.organization_id AND m.user_id = k.user_id
   WHERE k.secret_hash = $1 AND k.revoked_at IS NULL
     AND (k.deployment_id IS NULL OR EXISTS (SELECT 1 FROM deployments d WHERE d.id = k.deployment_id AND d.deleted_at IS NULL))`;
