// The deployment an agent server serves, as it knows it from its own database: recorded there when
// it starts, read back for every request (who may use it, its graphs, its run queue). The platform
// keeps its own rows of deployments in its own database (platform/services/deployments/); an agent
// server never sees them.
import { AppError } from '../../../errors.js';
import type { DeploymentAccess } from '../../../contracts/gateway-protocol.js';
import { readGraphConfig } from '../../../contracts/graph-config.js';
import { ensureSystemAssistants } from '../assistants/assistants.service.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { runQueueFor } from '../runs/run-queue.js';
import { deploymentAccessOf } from '../../../viewer.js';
import { findServedDeployment, type ServedDeploymentRow, upsertServedDeployment } from './served-deployment.store.js';
import type { AgentServerContext, DeploymentScope } from './deployment-scope.js';

const NOT_FOUND = 'Deployment not found';

// Every request needs the deployment's row; a row read in the last second is reused, so a busy
// deployment costs one lookup per second per process rather than one per request. Reused only on the
// database it was read from: a process may hold several (a platform process running local
// deployments' agent servers, a test's workers).
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

/**
 * Records the deployment this agent server serves in its own database: its graph config (read as
 * JSON: graph names, no code), the platform's workspace and organization it belongs to (whose keys
 * may use it: ids only, their rows are the platform's) and each graph's default assistant
 * (LANGGRAPH_CONFIG gives their config). Idempotent: every start of the deployment's agent servers runs it.
 */
export async function registerServedDeployment(
  ctx: ServiceContext,
  input: { deploymentId: string; name: string; workspaceId: string; organizationId: string; configPath: string },
): Promise<void> {
  const graphConfig = readGraphConfig(input.configPath);
  await upsertServedDeployment(ctx.db, {
    id: input.deploymentId,
    tenantId: input.workspaceId,
    organizationId: input.organizationId,
    name: input.name,
    configPath: graphConfig.path,
    graphIds: graphConfig.graphs.map((graph) => graph.graphId),
  });
  recentRows.delete(input.deploymentId);
  await ensureSystemAssistants(await agentContext(ctx, input.deploymentId), ctx.config.langgraphConfig);
}

/**
 * The graph config's description of each graph (`"graphs": {"id": {"path", "description"}}`), for a
 * deployment whose config this machine can read; empty otherwise. Read from the file, never by
 * loading graph code.
 */
export async function graphDescriptions(deps: Deps, deploymentId: string): Promise<Record<string, string>> {
  const configPath = (await deploymentRow(deps, deploymentId))?.config_path;
  if (!configPath) return {};
  try {
    const config = readGraphConfig(configPath);
    return Object.fromEntries(config.graphs.flatMap((graph) => (graph.description ? [[graph.graphId, graph.description]] : [])));
  } catch {
    // The file moved or broke after the deployment was recorded: tools fall back to generic descriptions.
    return {};
  }
}
