// Who may use bulk export, and in which workspace: the workspace of X-Tenant-Id (or the key's own),
// in an organization on the Plus or Enterprise plan.
import { AppError } from '../../../errors.js';
import type { ServiceContext } from '../../../context.js';
import { assertCan, type Permission, requireWorkspace } from '../../../viewer.js';

const EXPORT_PLANS = ['plus', 'enterprise'];

/**
 * The workspace a bulk export request acts in, after checking `permission` there and the plan.
 * Throws BAD_REQUEST without a workspace, FORBIDDEN without the permission or on the free plan.
 */
export async function exportWorkspace(ctx: ServiceContext, permission: Permission): Promise<{ workspaceId: string; selfHosted: boolean }> {
  const workspaceId = requireWorkspace(ctx.viewer);
  assertCan(ctx.viewer, permission, workspaceId);
  const workspace = await ctx.db.prisma.workspace.findUnique({
    where: { id: workspaceId },
    select: { organization: { select: { planTier: true, selfHosted: true } } },
  });
  if (!workspace) throw AppError.notFound(`Workspace ${workspaceId} not found.`);
  if (!EXPORT_PLANS.includes(workspace.organization.planTier)) {
    throw AppError.forbidden('Bulk export is available on the Plus and Enterprise plans only.');
  }
  return { workspaceId, selfHosted: workspace.organization.selfHosted };
}
