// Git host integrations of a workspace (control plane, integrations v1): a named access token for a
// git host, sealed at rest. Its only reader is the control plane's clone step, through
// integrationAccessToken; no response ever carries the token.
import { AppError } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import { isUuid } from '../../../ids.js';
import type { ServiceContext } from '../../../context.js';
import { assertCan, requireWorkspace } from '../../../viewer.js';
import { parseInput } from '../../../validate.js';
import { IntegrationCreate, type IntegrationCreateInput } from './integrations.schemas.js';
import * as store from './integrations.store.js';

export type { Integration } from './integrations.store.js';

/** Registers an integration in the viewer's workspace (needs workspaces:write). Throws VALIDATION_FAILED, FORBIDDEN. */
export async function createIntegration(ctx: ServiceContext, input: IntegrationCreateInput): Promise<store.Integration> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:write', workspaceId);
  const data = parseInput(IntegrationCreate, input, 'body');
  return store.insertIntegration(ctx.db, {
    workspaceId,
    name: data.name,
    host: data.host,
    accessToken: ctx.secrets.encrypt(data.access_token),
  });
}

/** The integrations of the viewer's workspace, newest first; `selection` folds relations (GraphQL) into the read. */
export async function listIntegrations(ctx: ServiceContext, selection: Prisma.IntegrationFindManyArgs = {}): Promise<store.Integration[]> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:read', workspaceId);
  return store.listIntegrations(ctx.db, workspaceId, selection);
}

/** One integration of the viewer's workspace; NOT_FOUND otherwise (never another workspace's row). */
export async function getIntegration(ctx: ServiceContext, id: string, selection: Prisma.IntegrationFindFirstArgs = {}): Promise<store.Integration> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:read', workspaceId);
  return findIntegration(ctx, workspaceId, id, selection);
}

/** Deletes an integration (needs workspaces:write) and returns it as it was. */
export async function deleteIntegration(ctx: ServiceContext, id: string): Promise<store.Integration> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:write', workspaceId);
  const integration = await findIntegration(ctx, workspaceId, id);
  await store.deleteIntegration(ctx.db, integration.id);
  return integration;
}

/**
 * The git host and unsealed access token of an integration, for cloning a repository with it. An
 * API-key caller sees only its workspace's integrations (needs workspaces:write: the token is used
 * on its behalf); the platform itself (system viewer, e.g. a build job) passes the deployment's
 * `workspaceId` to stay within that tenant. NOT_FOUND for any other integration.
 */
export async function integrationAccessToken(
  ctx: ServiceContext,
  integrationId: string,
  options: { workspaceId?: string } = {},
): Promise<{ host: string; token: string }> {
  let workspaceId: string | null = options.workspaceId ?? null;
  if (ctx.viewer.kind !== 'system') {
    workspaceId = requireWorkspace(ctx.viewer);
    if (options.workspaceId && options.workspaceId !== workspaceId) throw AppError.notFound(`Integration ${integrationId} not found.`);
    assertCan(ctx.viewer, 'workspaces:write', workspaceId);
  }
  const integration = await findIntegration(ctx, workspaceId, integrationId);
  return { host: integration.host, token: ctx.secrets.decrypt(integration.accessToken) };
}

async function findIntegration(ctx: ServiceContext, workspaceId: string | null, id: string, selection: Prisma.IntegrationFindFirstArgs = {}) {
  const integration = isUuid(id) ? await store.findIntegration(ctx.db, workspaceId, id, selection) : null;
  if (!integration) throw AppError.notFound(`Integration ${id} not found.`);
  return integration;
}
