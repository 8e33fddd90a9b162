// Local deployments: a graph config on the machine that runs its agent server (`serve`'s, and one an
// operator records with `admin deployments create` and runs with `start --role runtime --deployment
// <id>`). The platform keeps its row (its workspace, its graphs by name, the config's path) as it does
// a control-plane deployment's; its agent server keeps its data in a database of its own, as a
// deployed revision's does, and answers at /deployments/<id> through the gateway.
import { basename, dirname, resolve } from 'node:path';
import { v5 } from 'uuid';
import { AppError } from '../../../errors.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { readGraphConfig } from '../../../contracts/graph-config.js';
import { forgetDeploymentRow } from './deployments.service.js';
import { findDeployment, upsertLocalDeployment } from './deployments.store.js';

export type LocalDeployment = { deploymentId: string; tenantId: string; organizationId: string; name: string; configPath: string; graphIds: string[] };

// Fixed namespace for local deployments' ids (uuid5 of the config's absolute path).
const LOCAL_NAMESPACE = 'f1b8a7c2-3d4e-5f60-8a9b-0c1d2e3f4a5b';

/** The stable deployment id of a graph config on this machine: the same path gives the same deployment back. */
const localDeploymentId = (configPath: string): string => v5(resolve(configPath), LOCAL_NAMESPACE);

/**
 * Records a deployment of a graph config on this machine: its graphs are read from the config's
 * names, never imported. The id is stable per config path unless given; the tenant is `workspaceId`
 * or the installation's first workspace; the name is the config's folder unless given. For the system
 * (the admin CLI, `serve`): FORBIDDEN otherwise; NOT_FOUND for an unknown workspace; BAD_REQUEST for
 * an unreadable config.
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
    deploymentId: input.deploymentId ?? localDeploymentId(graphConfig.path),
    tenantId: workspace.id,
    organizationId: workspace.organizationId,
    name: input.name ?? basename(dirname(graphConfig.path)),
    configPath: graphConfig.path,
    graphIds: graphConfig.graphs.map((graph) => graph.graphId),
  };
  await upsertLocalDeployment(ctx.db, { id: deployment.deploymentId, ...deployment, cors: graphConfig.cors });
  forgetDeploymentRow(deployment.deploymentId);
  return deployment;
}

/** A local deployment, as its agent server's host starts it. NOT_FOUND for another kind of deployment or none. */
export async function findLocalDeployment(deps: Pick<Deps, 'db'>, deploymentId: string): Promise<LocalDeployment> {
  const row = await findDeployment(deps.db, deploymentId);
  const configPath = row?.source === 'local' ? row.source_config.config_path : undefined;
  if (!row || typeof configPath !== 'string') throw AppError.notFound(`Deployment ${deploymentId} not found (or not a local graph config).`);
  return { deploymentId: row.id, tenantId: row.tenant_id, organizationId: row.organization_id, name: row.name, configPath, graphIds: row.graph_ids };
}
