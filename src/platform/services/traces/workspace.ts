// Which workspace (tenant) a trace operation acts in.
import { AppError } from '../../../errors.js';
import type { ServiceContext } from '../../../context.js';
import { assertCan, can, type Permission } from '../../../viewer.js';

/**
 * The workspace a trace request acts in, after checking `permission` there.
 *
 * The key's own workspace, or the one selected by X-Tenant-Id, wins. With neither (an organization-wide
 * key, which is what the langsmith SDK sends when only LANGSMITH_ENDPOINT and LANGSMITH_API_KEY are
 * set) we use the organization's default workspace for this key: the oldest workspace of the
 * organization in which the key holds `permission`. That keeps the SDK working unchanged for the
 * common single-workspace installation and is deterministic for multi-workspace ones (send
 * X-Tenant-Id, i.e. LANGSMITH_WORKSPACE_ID, to choose another). Throws FORBIDDEN when the key holds
 * the permission in no workspace, BAD_REQUEST for the system viewer, which must name a workspace.
 */
export async function traceWorkspace(ctx: ServiceContext, permission: Permission): Promise<string> {
  const { viewer } = ctx;
  if (viewer.kind === 'system') throw AppError.badRequest('Name a workspace for trace operations.');
  if (viewer.kind === 'local') throw AppError.forbidden('Traces need an API key.');
  // It writes its own project through ingestion (ingest-as-viewer.ts) and reads nothing.
  if (viewer.kind === 'trace-writer') throw AppError.forbidden('This key only writes traces of its deployment.');
  if (viewer.workspaceId) {
    assertCan(viewer, permission, viewer.workspaceId);
    return viewer.workspaceId;
  }
  // The default is looked up per request on the ingest hot path: remember it briefly. A hit is
  // re-checked against the viewer's current permissions, so a revoked role is never used.
  const key = `${viewer.apiKeyId}\n${permission}`;
  const cached = defaults.get(key);
  if (cached && cached.expires > Date.now() && can(viewer, permission, cached.workspaceId)) return cached.workspaceId;
  const workspaces = await ctx.db.prisma.workspace.findMany({
    where: { organizationId: viewer.organizationId },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    select: { id: true },
  });
  const chosen = workspaces.find((workspace) => can(viewer, permission, workspace.id));
  if (!chosen) throw AppError.forbidden(`This API key lacks the ${permission} permission in every workspace.`);
  if (defaults.size >= 10_000) defaults.clear();
  defaults.set(key, { workspaceId: chosen.id, expires: Date.now() + DEFAULT_TTL_MS });
  return chosen.id;
}

// No older workspace can appear later; a role granted meanwhile is noticed within the TTL, a role
// taken away at once (the re-check above).
const DEFAULT_TTL_MS = 30_000;
const defaults = new Map<string, { workspaceId: string; expires: number }>();
