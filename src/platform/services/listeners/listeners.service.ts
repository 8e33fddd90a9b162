// Listeners of a workspace (control plane, listeners v2): the compute targets of a self-hosted
// Enterprise installation, one per compute_id. Creating one needs that plan and hosting (403).
import { AppError, isUniqueViolation } from '../../../errors.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import { isUuid } from '../../../ids.js';
import type { ServiceContext } from '../../../context.js';
import { assertCan, requireWorkspace } from '../../../viewer.js';
import { parseInput } from '../../../validate.js';
import { ListenerCreate, type ListenerCreateInput, ListenerUpdate, type ListenerUpdateInput, PageQuery, type PageQueryInput } from './listeners.schemas.js';
import * as store from './listeners.store.js';

export type { Listener } from './listeners.store.js';
export type { PageQueryInput } from './listeners.schemas.js';

/** A page of a control-plane list and the offset of the page after it. */
export type Page<T> = { resources: T[]; offset: number };

const jsonObject = (value: Record<string, unknown> | null | undefined) => (value ?? {}) as Prisma.InputJsonObject;

/**
 * Creates a listener in the viewer's workspace (needs workspaces:write). Throws FORBIDDEN unless the
 * organization is on the Enterprise plan and self-hosted, CONFLICT when the workspace already has a
 * listener for that compute_id, VALIDATION_FAILED.
 */
export async function createListener(ctx: ServiceContext, input: ListenerCreateInput): Promise<store.Listener> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:write', workspaceId);
  const data = parseInput(ListenerCreate, input, 'body');
  const organization = await store.workspaceOrganization(ctx.db, workspaceId);
  if (!organization || organization.planTier !== 'enterprise' || !organization.selfHosted) {
    throw AppError.forbidden('Listeners are available to self-hosted organizations on the Enterprise plan only.');
  }
  try {
    return await store.insertListener(ctx.db, {
      workspaceId,
      computeType: data.compute_type,
      computeId: data.compute_id,
      computeConfig: jsonObject(data.compute_config),
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw AppError.conflict(`A listener for compute_id ${data.compute_id} already exists.`);
    throw error;
  }
}

/** A page of the workspace's listeners, newest first. */
export async function listListeners(
  ctx: ServiceContext,
  query: PageQueryInput = {},
  selection: Prisma.ListenerFindManyArgs = {},
): Promise<Page<store.Listener>> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:read', workspaceId);
  const page = parseInput(PageQuery, query, 'query');
  const resources = await store.listListeners(ctx.db, workspaceId, page, selection);
  return { resources, offset: page.offset + resources.length };
}

/** One listener of the viewer's workspace; NOT_FOUND otherwise (never another workspace's row). */
export async function getListener(ctx: ServiceContext, id: string, selection: Prisma.ListenerFindFirstArgs = {}): Promise<store.Listener> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:read', workspaceId);
  return findListener(ctx, workspaceId, id, selection);
}

/** Replaces a listener's compute_config (null: empty). compute_type and compute_id cannot change (BAD_REQUEST). */
export async function updateListener(ctx: ServiceContext, id: string, input: ListenerUpdateInput): Promise<store.Listener> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:write', workspaceId);
  const data = parseInput(ListenerUpdate, input, 'body');
  const listener = await findListener(ctx, workspaceId, id);
  for (const field of ['compute_type', 'compute_id'] as const) {
    if (data[field] !== undefined) throw AppError.badRequest(`${field} cannot be changed; create a new listener instead.`);
  }
  if (data.compute_config === undefined) return listener;
  return store.updateListener(ctx.db, listener.id, { computeConfig: jsonObject(data.compute_config) });
}

/** Deletes a listener (needs workspaces:write) and returns it as it was. */
export async function deleteListener(ctx: ServiceContext, id: string): Promise<store.Listener> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, 'workspaces:write', workspaceId);
  const listener = await findListener(ctx, workspaceId, id);
  await store.deleteListener(ctx.db, listener.id);
  return listener;
}

async function findListener(ctx: ServiceContext, workspaceId: string, id: string, selection: Prisma.ListenerFindFirstArgs = {}) {
  const listener = isUuid(id) ? await store.findListener(ctx.db, workspaceId, id, selection) : null;
  if (!listener) throw AppError.notFound(`Listener ${id} not found.`);
  return listener;
}
