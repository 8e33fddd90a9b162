// Tenancy: organizations, workspaces, users, memberships and API keys, and authentication of requests.
import { AppError, isUniqueViolation } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import type { OrganizationRole, WorkspaceRole } from '../../../generated/prisma/enums.js';
import { isUuid, newId } from '../../../ids.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { parseInput } from '../../../validate.js';
import { generateApiKeySecret, hashApiKey } from './api-key-secret.js';
import {
  ApiKeyCreate,
  type ApiKeyCreateInput,
  OrganizationCreate,
  type OrganizationCreateInput,
  UserCreate,
  type UserCreateInput,
  WorkspaceCreate,
  type WorkspaceCreateInput,
} from './tenancy.schemas.js';
import { type ApiKeyViewer, assertCan, can, organizationOf, type TraceWriterViewer } from '../../../viewer.js';

// last_used_at is informational; writing it on every request would make every read a write.
const LAST_USED_RESOLUTION_MS = 60_000;

// ───────────────────────────── authentication ─────────────────────────────

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

/**
 * After a committed change to keys or roles: this process forgets its cached viewers before the
 * caller answers (so its next request is checked afresh), and every other process is told to.
 */
async function tenancyChanged(deps: Pick<Deps, 'viewers' | 'events'>, change: { apiKeyId?: string } = {}): Promise<void> {
  deps.viewers.clear();
  await deps.events.publish('tenancy.changed', change);
}

/** The API-key viewer of a tenant-scoped call; a local (serve) caller has no tenant: FORBIDDEN. */
function tenantViewer(ctx: ServiceContext): ApiKeyViewer {
  if (ctx.viewer.kind !== 'api-key') throw AppError.forbidden();
  return ctx.viewer;
}

// ───────────────────────────── organizations ─────────────────────────────

/** Creates an organization. System only (admin CLI, bootstrap); throws FORBIDDEN for API keys. */
export async function createOrganization(ctx: ServiceContext, input: OrganizationCreateInput) {
  if (ctx.viewer.kind !== 'system') throw AppError.forbidden('Organizations are created by an administrator.');
  const data = parseInput(OrganizationCreate, input);
  return ctx.db.prisma.organization.create({ data: { id: newId(), ...data } });
}

/** Organizations the viewer belongs to (all of them for the system). */
export async function listOrganizations(ctx: ServiceContext, query: Prisma.OrganizationFindManyArgs = {}) {
  const where = ctx.viewer.kind === 'system' ? {} : { id: tenantViewer(ctx).organizationId };
  return ctx.db.prisma.organization.findMany({ ...query, where, orderBy: { createdAt: 'asc' } });
}

/** The viewer's organization; throws NOT_FOUND for one the viewer does not belong to. */
export async function getOrganization(ctx: ServiceContext, id: string, query: Omit<Prisma.OrganizationFindUniqueArgs, 'where'> = {}) {
  if (!isUuid(id) || (ctx.viewer.kind === 'api-key' && ctx.viewer.organizationId !== id)) {
    throw AppError.notFound(`Organization ${id} not found.`);
  }
  const organization = await ctx.db.prisma.organization.findUnique({ ...query, where: { id } });
  if (!organization) throw AppError.notFound(`Organization ${id} not found.`);
  return organization;
}

// ───────────────────────────── workspaces ─────────────────────────────

/**
 * Creates a workspace in the viewer's organization (or `organizationId` for the system). The creating
 * user becomes its admin. Throws FORBIDDEN without organization:manage, CONFLICT on a duplicate name.
 */
export async function createWorkspace(ctx: ServiceContext, input: WorkspaceCreateInput) {
  const data = parseInput(WorkspaceCreate, input);
  assertCan(ctx.viewer, 'organization:manage');
  const organizationId = organizationOf(ctx.viewer, data.organizationId);
  const { viewer } = ctx;
  const nameTaken = () => AppError.conflict(`A workspace named "${data.name}" already exists.`);
  const workspace = await ctx.db.prisma.$transaction(async (tx) => {
    const clash = await tx.workspace.findUnique({ where: { organizationId_name: { organizationId, name: data.name } } });
    if (clash) throw nameTaken();
    if (!(await tx.organization.findUnique({ where: { id: organizationId } }))) {
      throw AppError.notFound(`Organization ${organizationId} not found.`);
    }
    const workspace = await tx.workspace.create({ data: { id: newId(), organizationId, name: data.name } });
    if (viewer.kind === 'api-key') {
      await tx.workspaceMembership.create({ data: { workspaceId: workspace.id, userId: viewer.userId, role: 'WORKSPACE_ADMIN' } });
    }
    return workspace;
  }).catch((error: unknown) => {
    throw isUniqueViolation(error) ? nameTaken() : error;
  });
  // The creator's role in it is new: cached viewers of the creator's keys do not hold it yet.
  if (viewer.kind === 'api-key') await tenancyChanged(ctx);
  return workspace;
}

/** Workspaces the viewer can read, oldest first. */
export async function listWorkspaces(
  ctx: ServiceContext,
  options: { organizationId?: string } = {},
  query: Prisma.WorkspaceFindManyArgs = {},
) {
  return ctx.db.prisma.workspace.findMany({
    ...query,
    where: readableWorkspacesWhere(ctx, options.organizationId),
    orderBy: { createdAt: 'asc' },
  });
}

/** One workspace the viewer can read; NOT_FOUND otherwise (never another tenant's row). */
export async function getWorkspace(ctx: ServiceContext, id: string, query: Omit<Prisma.WorkspaceFindFirstArgs, 'where'> = {}) {
  const workspace = isUuid(id)
    ? await ctx.db.prisma.workspace.findFirst({ ...query, where: { AND: [{ id }, readableWorkspacesWhere(ctx)] } })
    : null;
  if (!workspace) throw AppError.notFound(`Workspace ${id} not found.`);
  return workspace;
}

/**
 * Workspaces by ID, in the order asked, for GraphQL fields that load one per parent (a dataloader
 * batches them into one read): null where the viewer cannot read the workspace.
 */
export async function getWorkspaces(ctx: ServiceContext, ids: readonly string[]) {
  const found = await ctx.db.prisma.workspace.findMany({ where: { AND: [{ id: { in: ids.filter(isUuid) } }, readableWorkspacesWhere(ctx)] } });
  const byId = new Map(found.map((workspace) => [workspace.id, workspace]));
  return ids.map((id) => byId.get(id) ?? null);
}

function readableWorkspacesWhere(ctx: ServiceContext, organizationId?: string): Prisma.WorkspaceWhereInput {
  const { viewer } = ctx;
  if (viewer.kind === 'system') return organizationId ? { organizationId } : {};
  if (viewer.kind === 'local' || viewer.kind === 'trace-writer') return { id: { in: [] } };
  const scope: Prisma.WorkspaceWhereInput = { organizationId: viewer.organizationId };
  if (viewer.keyWorkspaceId) return { ...scope, id: viewer.keyWorkspaceId };
  if (can(viewer, 'workspaces:read')) return scope; // organization admins read every workspace
  return { ...scope, id: { in: [...viewer.workspaceRoles.keys()] } };
}

// ───────────────────────────── users ─────────────────────────────

/** Creates a user with an organization role and workspace roles. Needs organization:manage. */
export async function createUser(ctx: ServiceContext, input: UserCreateInput) {
  const data = parseInput(UserCreate, input);
  assertCan(ctx.viewer, 'organization:manage');
  const organizationId = organizationOf(ctx.viewer, data.organizationId);
  const user = await ctx.db.prisma.$transaction(async (tx) => {
    if (!(await tx.organization.findUnique({ where: { id: organizationId } }))) {
      throw AppError.notFound(`Organization ${organizationId} not found.`);
    }
    const workspaces = await tx.workspace.findMany({
      where: { organizationId, id: { in: data.workspaces.map((w) => w.workspaceId) } },
      select: { id: true },
    });
    const missing = data.workspaces.find((w) => !workspaces.some((found) => found.id === w.workspaceId));
    if (missing) throw AppError.notFound(`Workspace ${missing.workspaceId} not found.`);
    const existing = await tx.user.findUnique({ where: { email: data.email } });
    const user = existing ?? (await tx.user.create({ data: { id: newId(), email: data.email, name: data.name ?? null } }));
    await tx.organizationMembership.upsert({
      where: { organizationId_userId: { organizationId, userId: user.id } },
      create: { organizationId, userId: user.id, role: data.organizationRole },
      update: { role: data.organizationRole },
    });
    for (const { workspaceId, role } of data.workspaces) {
      await tx.workspaceMembership.upsert({
        where: { workspaceId_userId: { workspaceId, userId: user.id } },
        create: { workspaceId, userId: user.id, role },
        update: { role },
      });
    }
    return user;
  });
  // An existing user's roles may have changed (upserts): their keys' cached viewers are stale.
  await tenancyChanged(ctx);
  return user;
}

/** Users of an organization (the viewer's own for API keys). Needs organization:read. */
export async function listUsers(ctx: ServiceContext, options: { organizationId?: string } = {}, query: Prisma.UserFindManyArgs = {}) {
  assertCan(ctx.viewer, 'organization:read');
  const organizationId = ctx.viewer.kind === 'system' ? options.organizationId : tenantViewer(ctx).organizationId;
  return ctx.db.prisma.user.findMany({
    ...query,
    where: organizationId ? { organizationMemberships: { some: { organizationId } } } : {},
    orderBy: { createdAt: 'asc' },
  });
}

/** The user behind the viewer's key. */
export async function getViewerUser(ctx: ServiceContext, query: Omit<Prisma.UserFindUniqueArgs, 'where'> = {}) {
  if (ctx.viewer.kind !== 'api-key') return null;
  return ctx.db.prisma.user.findUnique({ ...query, where: { id: ctx.viewer.userId } });
}

// ───────────────────────────── API keys ─────────────────────────────

/**
 * Creates an API key for the viewer's own user (or, for the system, the named user) and returns the
 * secret, which is never retrievable again. A workspace-scoped key can only create keys scoped to the
 * same workspace. Throws FORBIDDEN for a workspace the user cannot read, NOT_FOUND for unknown rows.
 */
export async function createApiKey(ctx: ServiceContext, input: ApiKeyCreateInput) {
  const data = parseInput(ApiKeyCreate, input);
  const { viewer } = ctx;
  let userId: string;
  let organizationId: string;
  let workspaceId = data.workspaceId ?? null;
  if (viewer.kind === 'system') {
    if (!data.userId || !data.organizationId) throw AppError.badRequest('userId and organizationId are required.');
    userId = data.userId;
    organizationId = data.organizationId;
    const membership = await ctx.db.prisma.organizationMembership.findUnique({
      where: { organizationId_userId: { organizationId, userId } },
    });
    if (!membership) throw AppError.notFound(`User ${userId} is not a member of organization ${organizationId}.`);
  } else {
    if (viewer.kind === 'local' || viewer.kind === 'trace-writer') throw AppError.forbidden();
    userId = viewer.userId;
    organizationId = viewer.organizationId;
    if (viewer.keyWorkspaceId) {
      if (workspaceId && workspaceId !== viewer.keyWorkspaceId) {
        throw AppError.forbidden('A workspace-scoped key can only create keys for its own workspace.');
      }
      workspaceId = viewer.keyWorkspaceId;
    }
    if (workspaceId) assertCan(viewer, 'workspaces:read', workspaceId);
  }
  if (workspaceId) {
    const workspace = await ctx.db.prisma.workspace.findUnique({ where: { id: workspaceId } });
    if (!workspace || workspace.organizationId !== organizationId) throw AppError.notFound(`Workspace ${workspaceId} not found.`);
  }
  const secret = generateApiKeySecret();
  const apiKey = await ctx.db.prisma.apiKey.create({
    data: {
      id: newId(),
      organizationId,
      workspaceId,
      userId,
      description: data.description,
      shortKey: secret.shortKey,
      secretHash: secret.secretHash,
    },
  });
  return { apiKey, key: secret.key };
}

/** API keys of the viewer's user (organization admins see every key of the organization). */
export async function listApiKeys(
  ctx: ServiceContext,
  options: { organizationId?: string; includeRevoked?: boolean } = {},
  query: Prisma.ApiKeyFindManyArgs = {},
) {
  return ctx.db.prisma.apiKey.findMany({
    ...query,
    where: { ...apiKeysVisibleTo(ctx, options.organizationId), ...(options.includeRevoked ? {} : { revokedAt: null }) },
    orderBy: { createdAt: 'asc' },
  });
}

/** Revokes a key (idempotent). NOT_FOUND for a key the viewer cannot see. */
export async function revokeApiKey(ctx: ServiceContext, id: string) {
  const apiKey = isUuid(id) ? await ctx.db.prisma.apiKey.findFirst({ where: { id, ...apiKeysVisibleTo(ctx) } }) : null;
  if (!apiKey) throw AppError.notFound(`API key ${id} not found.`);
  if (apiKey.revokedAt) return apiKey;
  const revoked = await ctx.db.prisma.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
  await tenancyChanged(ctx, { apiKeyId: id });
  return revoked;
}

// ───────────────────────────── deployments' trace keys ─────────────────────────────

/**
 * Makes the trace key of one launch of a deployment's agent server: it writes runs into the tracing
 * project named after the deployment, in its workspace, and is refused everywhere else
 * (authenticateIngestKey). Like the launch's database password and signing key it is the launch's
 * own: the secret goes to that agent server's environment only and is stored here as a hash.
 * Throws NOT_FOUND for a deleted (or unknown) deployment.
 */
export async function createDeploymentTraceKey(deps: Pick<Deps, 'db'>, deploymentId: string): Promise<{ id: string; key: string; project: string }> {
  const secret = generateApiKeySecret();
  const { rows } = await deps.db.pool.query<{ id: string; trace_project: string }>(
    `INSERT INTO api_keys (id, organization_id, workspace_id, user_id, deployment_id, trace_project, description, short_key, secret_hash)
     SELECT $1, w.organization_id, d.tenant_id, NULL, d.id, d.name, 'Writes the traces of deployment ' || d.name, $3, $4
       FROM deployments d JOIN workspaces w ON w.id = d.tenant_id
      WHERE d.id = $2 AND d.deleted_at IS NULL
     RETURNING id, trace_project`,
    [newId(), deploymentId, secret.shortKey, secret.secretHash],
  );
  if (!rows[0]) throw AppError.notFound(`Deployment ${deploymentId} not found.`);
  return { id: rows[0].id, key: secret.key, project: rows[0].trace_project };
}

/**
 * Revokes a deployment's trace keys: one launch's (`keyId`, once its agent server has stopped and
 * sent its last traces), or all of them (the deployment is deleted). Every process forgets them.
 */
export async function revokeDeploymentTraceKeys(deps: Pick<Deps, 'db' | 'viewers' | 'events'>, deploymentId: string, keyId?: string): Promise<void> {
  const { rowCount } = await deps.db.pool.query(
    'UPDATE api_keys SET revoked_at = now() WHERE deployment_id = $1 AND ($2::uuid IS NULL OR id = $2::uuid) AND revoked_at IS NULL',
    [deploymentId, keyId ?? null],
  );
  if (rowCount) await tenancyChanged(deps, keyId ? { apiKeyId: keyId } : {});
}

function apiKeysVisibleTo(ctx: ServiceContext, organizationId?: string): Prisma.ApiKeyWhereInput {
  const { viewer } = ctx;
  if (viewer.kind === 'system') return organizationId ? { organizationId } : {};
  if (viewer.kind === 'local' || viewer.kind === 'trace-writer') return { id: { in: [] } };
  // Deployments' trace keys are the platform's, made and deleted with their deployment's runtimes.
  if (!viewer.keyWorkspaceId && can(viewer, 'organization:manage')) return { organizationId: viewer.organizationId, deploymentId: null };
  return { organizationId: viewer.organizationId, userId: viewer.userId };
}

// ───────────────────────────── first start ─────────────────────────────

const DEFAULT_ADMIN_EMAIL = 'admin@localhost';

/**
 * On an empty installation, creates the default organization, workspace, admin user and a first API
 * key, and returns the key (shown once). Returns null when the installation already has an
 * organization. Safe when several processes start at once (advisory lock).
 */
export async function bootstrapInstallation(deps: Deps): Promise<null | { key: string; organizationId: string; workspaceId: string }> {
  const claimed = await deps.db.prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(7202811)`;
    if ((await tx.organization.count()) > 0) return null;
    const organization = await tx.organization.create({
      data: { id: newId(), name: 'Default Organization', planTier: 'enterprise', selfHosted: true },
    });
    const workspace = await tx.workspace.create({ data: { id: newId(), organizationId: organization.id, name: 'Default Workspace' } });
    const user = await tx.user.upsert({
      where: { email: DEFAULT_ADMIN_EMAIL },
      create: { id: newId(), email: DEFAULT_ADMIN_EMAIL, name: 'Administrator' },
      update: {},
    });
    await tx.organizationMembership.create({ data: { organizationId: organization.id, userId: user.id, role: 'ORGANIZATION_ADMIN' } });
    await tx.workspaceMembership.create({ data: { workspaceId: workspace.id, userId: user.id, role: 'WORKSPACE_ADMIN' } });
    // The key is written in the same transaction, so a crash cannot leave an installation without one.
    const secret = generateApiKeySecret();
    await tx.apiKey.create({
      data: {
        id: newId(),
        organizationId: organization.id,
        userId: user.id,
        description: 'Created on first start',
        shortKey: secret.shortKey,
        secretHash: secret.secretHash,
      },
    });
    return { key: secret.key, organizationId: organization.id, workspaceId: workspace.id };
  });
  return claimed;
}
