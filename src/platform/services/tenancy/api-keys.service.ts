// API keys: a user's keys (created with the secret shown once, listed, revoked) and the trace keys the
// platform makes for each launch of a deployment's agent server. Keys are stored hashed
// (api-key-secret.ts); authentication.service.ts resolves them to viewers.
import { AppError } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import { isUuid, newId } from '../../../ids.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { parseInput } from '../../../validate.js';
import { generateApiKeySecret } from './api-key-secret.js';
import { ApiKeyCreate, type ApiKeyCreateInput } from './tenancy.schemas.js';
import { tenancyChanged } from './tenancy.service.js';
import { assertCan, can } from '../../../viewer.js';

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
