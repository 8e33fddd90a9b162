// The deployment an agent server serves, as it knows it from its own database: recorded there when
// it starts (serve's graph config, a deployed revision, a local deployment the operator registered),
// read back for every request (who may use it, its graphs, its run queue). The platform keeps its own
// rows of deployments in its own database (deployments/deployments.service.ts); a deployed agent
// server never sees them.
import { basename, dirname } from 'node:path';
import { AppError } from '../../../errors.js';
import type { DeploymentAccess } from '../../../contracts/gateway-protocol.js';
import { readGraphConfig } from '../../../contracts/graph-config.js';
import { ensureSystemAssistants } from '../assistants/assistants.service.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { runQueueFor } from '../runs/run-queue.js';
import { deploymentAccessOf } from '../../../viewer.js';
import { findServedDeployment, type ServedDeploymentRow, upsertServedDeployment } from './served-deployment.store.js';
import { type AgentServerContext, type DeploymentScope, serveDeploymentId } from './deployment-scope.js';

const NOT_FOUND = 'Deployment not found';

// Every request needs the deployment's row; a row read in the last second is reused, so a busy
// deployment costs one lookup per second per process rather than one per request. Reused only on the
// database it was read from: a process may hold two (a platform hosting a local deployment, and a
// test's worker on a deployed revision's own database, where the same id is recorded too).
const ROW_TTL_MS = 1000;
const recentRows = new Map<string, { row: ServedDeploymentRow; readAt: number; database: string }>();

async function deploymentRow(deps: Deps, deploymentId: string): Promise<ServedDeploymentRow | undefined> {
  const cached = recentRows.get(deploymentId);
  if (cached && cached.database === deps.db.url && Date.now() - cached.readAt < ROW_TTL_MS) return cached.row;
  if (!/^[0-9a-f-]{36}$/i.test(deploymentId)) return undefined;
  const row = await findServedDeployment(deps.db, deploymentId.toLowerCase());
  if (row) recentRows.set(deploymentId, { row, readAt: Date.now(), database: deps.db.url });
  else recentRows.delete(deploymentId);
  return row;
}

/**
 * The agent-server context for a deployment, if the viewer may use it for `access` (deploymentAccessOf).
 * NOT_FOUND when it may not reach it (another organization's key, or a key with no role in the
 * deployment's workspace, learns nothing about the deployment); FORBIDDEN for a write by a viewer
 * who may only read. `dev` enables the test-harness endpoints (serve --dev).
 */
export async function agentContext(ctx: ServiceContext, deploymentId: string, options: { dev?: boolean; access?: DeploymentAccess } = {}): Promise<AgentServerContext> {
  const row = await deploymentRow(ctx, deploymentId);
  if (!row) throw AppError.notFound(NOT_FOUND);
  deploymentAccessOf(ctx.viewer, row, options.access ?? 'read');
  const { boss } = ctx;
  const deployment: DeploymentScope = {
    deploymentId: row.id,
    tenantId: row.tenant_id,
    organizationId: row.organization_id,
    graphIds: row.graph_ids,
    // Only runs need the job queue (the admin CLI, which has none, never creates one).
    get queue() {
      if (!boss) throw new Error('Enqueuing a run needs the process job queue (Deps.boss)');
      return runQueueFor(boss, row.id);
    },
    dev: options.dev ?? false,
  };
  return { ...ctx, deployment };
}

export type LocalDeployment = { deploymentId: string; tenantId: string; name: string; configPath: string; graphIds: string[] };

/**
 * Records a deployment of a graph config on this machine (what `serve` runs, and what `start --role
 * runtime --deployment <id>` can run): its graphs are read from the config's names, never imported.
 * The id is stable per config path unless given; the tenant is `workspaceId` or the installation's
 * first workspace. Each graph's default assistant is created (LANGGRAPH_CONFIG gives their config).
 * NOT_FOUND for an unknown workspace; BAD_REQUEST for an unreadable config.
 */
export async function registerLocalDeployment(
  ctx: ServiceContext,
  input: { configPath: string; workspaceId?: string; name?: string; deploymentId?: string },
): Promise<LocalDeployment> {
  if (ctx.viewer.kind !== 'system') throw AppError.forbidden();
  const graphConfig = readGraphConfig(input.configPath);
  const workspace = input.workspaceId
    ? await ctx.db.prisma.workspace.findUnique({ where: { id: input.workspaceId } })
    : await ctx.db.prisma.workspace.findFirst({ orderBy: [{ organization: { createdAt: 'asc' } }, { createdAt: 'asc' }] });
  if (!workspace) throw AppError.notFound(input.workspaceId ? `Workspace ${input.workspaceId} not found.` : 'No workspace yet: start the platform once first.');
  const deployment: LocalDeployment = {
    deploymentId: input.deploymentId ?? serveDeploymentId(graphConfig.path),
    tenantId: workspace.id,
    name: input.name ?? basename(dirname(graphConfig.path)),
    configPath: graphConfig.path,
    graphIds: graphConfig.graphs.map((graph) => graph.graphId),
  };
  await upsertServedDeployment(ctx.db, { id: deployment.deploymentId, ...deployment });
  recentRows.delete(deployment.deploymentId);
  await ensureSystemAssistants(await agentContext(ctx, deployment.deploymentId), ctx.config.langgraphConfig);
  return deployment;
}

/**
 * A deployed revision's agent server, on its own database: the deployment's workspace (and
 * organization) are recorded there as its one tenant, then the deployment as `serve` records its own
 * (with its default assistants). Idempotent: every start of the deployment's agent servers runs it.
 */
export async function registerOwnDeployment(
  ctx: ServiceContext,
  input: { deploymentId: string; name: string; workspaceId: string; organizationId: string; configPath: string },
): Promise<LocalDeployment> {
  const { prisma } = ctx.db;
  await prisma.organization.upsert({ where: { id: input.organizationId }, create: { id: input.organizationId, name: 'Deployment organization' }, update: {} });
  await prisma.workspace.upsert({
    where: { id: input.workspaceId },
    create: { id: input.workspaceId, organizationId: input.organizationId, name: 'Deployment workspace' },
    update: {},
  });
  return registerLocalDeployment(ctx, { configPath: input.configPath, workspaceId: input.workspaceId, deploymentId: input.deploymentId, name: input.name });
}

/** A local deployment's graph config path, for the runtime that runs it. NOT_FOUND otherwise. */
export async function localDeploymentConfig(deps: Deps, deploymentId: string): Promise<{ configPath: string; tenantId: string; name: string }> {
  const row = await findServedDeployment(deps.db, deploymentId);
  const configPath = row?.source === 'local' ? row.source_config.config_path : undefined;
  if (!row || typeof configPath !== 'string') throw AppError.notFound(`Deployment ${deploymentId} not found (or not a local graph config).`);
  return { configPath, tenantId: row.tenant_id, name: row.name };
}

/**
 * The graph config's description of each graph (`"graphs": {"id": {"path", "description"}}`), for a
 * local deployment whose config this machine can read; empty otherwise. Read from the file, never by
 * loading graph code.
 */
export async function graphDescriptions(deps: Deps, deploymentId: string): Promise<Record<string, string>> {
  const row = await deploymentRow(deps, deploymentId);
  const configPath = row?.source === 'local' ? row.source_config.config_path : undefined;
  if (typeof configPath !== 'string') return {};
  try {
    const config = readGraphConfig(configPath);
    return Object.fromEntries(config.graphs.flatMap((graph) => (graph.description ? [[graph.graphId, graph.description]] : [])));
  } catch {
    // The file moved or broke after the deployment was recorded: tools fall back to generic descriptions.
    return {};
  }
}
