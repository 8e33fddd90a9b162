// Which deployment a control-plane call may act on: one of the viewer's selected workspace, with the
// permission the call needs there. Deployments and revisions alike look their deployment up here.
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';
import type { ServiceContext } from '../../../context.js';
import { assertCan, type Permission, requireWorkspace } from '../../../viewer.js';
import { type ControlDeploymentRow, findControlDeployment } from './revisions.store.js';

const deploymentNotFound = (id: string) => AppError.notFound(`Deployment ID ${id} not found.`);

/** The workspace a control-plane call acts in, after checking `permission` there. */
export function controlWorkspace(ctx: ServiceContext, permission: Permission): string {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, permission, workspaceId);
  return workspaceId;
}

/** A deployment of the viewer's workspace; NOT_FOUND for another workspace's, a deleted one or a bad id. */
export async function findOwnDeployment(ctx: ServiceContext, id: string, permission: Permission = 'workspaces:read'): Promise<ControlDeploymentRow> {
  const workspaceId = controlWorkspace(ctx, permission);
  const row = isUuid(id) ? await findControlDeployment(ctx.db, id.toLowerCase(), workspaceId) : undefined;
  if (!row) throw deploymentNotFound(id);
  return row;
}
