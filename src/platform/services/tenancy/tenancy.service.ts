// Tenancy: organizations, workspaces, users and their memberships, and the installation's first start.
// API keys are api-keys.service.ts; resolving a request's key to its viewer authentication.service.ts.
import { AppError, isUniqueViolation } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import { isUuid, newId } from '../../../ids.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { parseInput } from '../../../validate.js';
import { generateApiKeySecret } from './api-key-secret.js';
import {
  OrganizationCreate,
  type OrganizationCreateInput,
  UserCreate,
  type UserCreateInput,
  WorkspaceCreate,
  type WorkspaceCreateInput,
} from './tenancy.schemas.js';
import { type ApiKeyViewer, assertCan, can, organizationOf } from '../../../viewer.js';

/**
 * After a committed change to keys or roles: this process forgets its cached viewers before the
 * caller answers (so its next request is checked afresh), and every other process is told to.
 */
export async function tenancyChanged(deps: Pick<Deps, 'viewers' | 'events'>, change: { apiKeyId?: string } = {}): Promise<void> {
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
