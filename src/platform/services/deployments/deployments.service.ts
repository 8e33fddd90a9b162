// Deployments as the platform sees them: the control plane (/v2/deployments) and what its gateway
// asks of a deployment's row (who may call it, whether it authenticates its own callers), looked up in
// the platform's database by id, so any api process can serve any deployment. What an agent server
// knows of the deployment it serves is its own (agent-server/services/served-deployment/).
import { AppError } from '../../../errors.js';
import { dropDeploymentDatabase } from './deployment-database.js';
import type { CorsOptions } from '../../../contracts/graph-config.js';
import type { Deps, ServiceContext } from '../../../context.js';
import { integrationAccessToken } from '../integrations/integrations.service.js';
import { revokeDeploymentTraceKeys } from '../tenancy/api-keys.service.js';
import { assertCan, deploymentAccessOf, organizationOf, SYSTEM_VIEWER } from '../../../viewer.js';
import type { DeploymentAccess } from '../../../contracts/gateway-protocol.js';
import { newId } from '../../../ids.js';
import { parseInput } from '../../../validate.js';
import { DeploymentCreate, DeploymentListQuery, DeploymentPatch } from './deployments.schemas.js';
import { controlWorkspace, findOwnDeployment } from './deployment-access.js';
import { moveRevisionsOf, queueRevision, UNFINISHED } from './revisions.service.js';
import * as revisionsStore from './revisions.store.js';
import type { GitCredentials } from '../../launcher/source-checkout.js';
import type { ControlDeploymentRow } from './revisions.store.js';
import { deleteDeploymentRuntime, type DeploymentRow, type DeploymentUsage, findDeployment, listAllDeploymentRuntimeIds, listOrganizationUsage } from './deployments.store.js';
import { runtimeLockKey } from '../../../contracts/launcher-protocol.js';
import { Gauge, Registry } from 'prom-client';

const NOT_FOUND = 'Deployment not found';

// Every request through the gateway needs its deployment's row; a row read in the last second is reused,
// so a busy deployment costs one lookup per second per process rather than one per request.
const ROW_TTL_MS = 1000;
const recentRows = new Map<string, { row: DeploymentRow; readAt: number }>();

async function deploymentRow(deps: Deps, deploymentId: string): Promise<DeploymentRow | undefined> {
  const cached = recentRows.get(deploymentId);
  if (cached && Date.now() - cached.readAt < ROW_TTL_MS) return cached.row;
  if (!/^[0-9a-f-]{36}$/i.test(deploymentId)) return undefined;
  const row = await findDeployment(deps.db, deploymentId.toLowerCase());
  if (row) recentRows.set(deploymentId, { row, readAt: Date.now() });
  else recentRows.delete(deploymentId);
  return row;
}

/**
 * Which access a caller of a deployment's agent server holds there, checked for `access` as
 * deploymentAccessOf checks it (NOT_FOUND, FORBIDDEN): what the gateway passes on to the deployment.
 */
export async function authorizeDeploymentCaller(ctx: ServiceContext, deploymentId: string, access: DeploymentAccess): Promise<DeploymentAccess> {
  const row = await deploymentRow(ctx, deploymentId);
  if (!row) throw AppError.notFound(NOT_FOUND);
  return deploymentAccessOf(ctx.viewer, row, access);
}

/** Whether a deployment exists (and is not deleted): the public pages of its url answer 404 otherwise. */
export async function deploymentExists(deps: Deps, deploymentId: string): Promise<boolean> {
  return (await deploymentRow(deps, deploymentId)) !== undefined;
}

/**
 * Whether the deployment's own agent server authenticates its callers itself: its active revision
 * declares custom auth (langgraph.json `auth`, as its build read it). The gateway then lets its end
 * users in without a platform key.
 */
export async function declaresCustomAuth(deps: Deps, deploymentId: string): Promise<boolean> {
  const row = await deploymentRow(deps, deploymentId);
  return row !== undefined && row.custom_auth;
}

/**
 * The `http.cors` of a deployment's active revision (null: none, so any origin), or undefined when no
 * such deployment exists: the gateway answers with it where the agent server cannot.
 */
export async function deploymentCors(deps: Deps, deploymentId: string): Promise<CorsOptions | null | undefined> {
  const row = await deploymentRow(deps, deploymentId);
  return row === undefined ? undefined : row.cors;
}

/** Whether the deployment's custom auth also takes platform API keys (`auth.allow_langsmith_api_keys`, as its active revision's build read it). */
export async function takesPlatformKeys(deps: Deps, deploymentId: string): Promise<boolean> {
  const row = await deploymentRow(deps, deploymentId);
  return row !== undefined && row.platform_keys;
}

// ───────────────────────────── control plane (/v2/deployments) ─────────────────────────────

export type Deployment = ControlDeploymentRow & { secret_names: string[] };

/** The deployment's secrets, unsealed: only its runtime's environment ever receives the values. */
export function deploymentSecrets(deps: Pick<Deps, 'secrets'>, row: Pick<ControlDeploymentRow, 'secrets'>): { name: string; value: string }[] {
  return row.secrets ? (JSON.parse(deps.secrets.decrypt(row.secrets)) as { name: string; value: string }[]) : [];
}

const withSecretNames = (deps: Deps, row: ControlDeploymentRow): Deployment => ({ ...row, secret_names: deploymentSecrets(deps, row).map((secret) => secret.name) });

/**
 * Creates a deployment and its first revision, and queues the revision's build. The agent server
 * answers at `<platform>/deployments/<id>` once the revision is DEPLOYED. BAD_REQUEST for sources and
 * fields this installation does not support; VALIDATION_FAILED for bad input.
 */
export async function createDeployment(ctx: ServiceContext, input: unknown): Promise<Deployment> {
  const workspaceId = controlWorkspace(ctx, 'workspaces:write');
  const data = parseInput(DeploymentCreate, input, 'body');
  if (data.source !== 'github' || data.source_revision_config.image_uri) throw AppError.badRequest('Deployments from container images (external_docker, image_uri) are not supported by this installation.');
  await assertIntegration(ctx, data.source_config.integration_id);
  const id = newId();
  const revisionId = newId();
  const sourceConfig = { build_on_push: false, custom_url: null, resource_spec: null, deployment_type: 'dev', integration_id: null, ...data.source_config };
  await revisionsStore.insertDeploymentWithRevision(ctx.db, {
    id,
    revisionId,
    tenantId: workspaceId,
    name: data.name,
    source: data.source,
    sourceConfig,
    sourceRevisionConfig: { image_uri: null, ...data.source_revision_config },
    secrets: data.secrets.length ? ctx.secrets.encrypt(JSON.stringify(data.secrets)) : null,
    url: ctx.config.publicUrl ? `${ctx.config.publicUrl}/deployments/${id}` : null,
  });
  await ctx.events.publish('revisions.status', { deploymentId: id, revisionId, status: 'CREATING' }, id);
  await queueRevision(ctx, id, revisionId);
  return getDeployment(ctx, id);
}

/** The workspace's deployments, newest first, with the next page's offset. */
export async function listDeployments(ctx: ServiceContext, query: unknown): Promise<{ resources: Deployment[]; offset: number }> {
  const workspaceId = controlWorkspace(ctx, 'workspaces:read');
  const filter = parseInput(DeploymentListQuery, query, 'query');
  const rows = await revisionsStore.listControlDeployments(ctx.db, workspaceId, {
    limit: filter.limit,
    offset: filter.offset,
    nameContains: filter.name_contains,
    status: filter.status,
    ids: filter.deployment_ids,
  });
  return { resources: rows.map((row) => withSecretNames(ctx, row)), offset: filter.offset + rows.length };
}

export async function getDeployment(ctx: ServiceContext, id: string): Promise<Deployment> {
  return withSecretNames(ctx, await findOwnDeployment(ctx, id));
}

/**
 * Changes a deployment (DECISIONS): `source_revision_config` keys or `secrets` make a new revision;
 * other `source_config` keys change in place; name, source, repo_url, integration_id and
 * deployment_type cannot change (BAD_REQUEST).
 */
export async function updateDeployment(ctx: ServiceContext, id: string, input: unknown): Promise<Deployment> {
  const data = parseInput(DeploymentPatch, input, 'body');
  const row = await findOwnDeployment(ctx, id, 'workspaces:write');
  const immutable = [
    ['name', data.name],
    ['source', data.source],
    ['source_config.repo_url', data.source_config?.repo_url],
    ['source_config.integration_id', data.source_config?.integration_id],
    ['source_config.deployment_type', data.source_config?.deployment_type],
  ].filter(([, value]) => value !== undefined);
  if (immutable.length) throw AppError.badRequest(`${immutable.map(([field]) => field).join(', ')} cannot be changed.`);
  if (data.source_revision_config?.image_uri) throw AppError.badRequest('Deployments from container images (image_uri) are not supported by this installation.');
  const { build_on_push, custom_url, resource_spec } = data.source_config ?? {};
  const revisionChange = definedOnly({ repo_ref: data.source_revision_config?.repo_ref, graph_config_path: data.source_revision_config?.graph_config_path });
  const newRevision = Object.keys(revisionChange).length > 0 || data.secrets !== undefined;
  const revisionId = newRevision ? newId() : undefined;
  // Only what the PATCH names: the store merges it into the row as it is then (another PATCH may have changed it since `row` was read).
  await revisionsStore.updateDeploymentWithRevision(ctx.db, row.id, {
    sourceConfig: definedOnly({ build_on_push, custom_url, resource_spec }),
    sourceRevisionConfig: revisionChange,
    secrets: data.secrets === undefined ? undefined : data.secrets.length ? ctx.secrets.encrypt(JSON.stringify(data.secrets)) : null,
    revisionId,
  });
  if (revisionId) {
    await ctx.events.publish('revisions.status', { deploymentId: row.id, revisionId, status: 'CREATING' }, row.id);
    await queueRevision(ctx, row.id, revisionId);
  }
  return getDeployment(ctx, row.id);
}


/**
 * Deletes a deployment: unfinished revisions become INTERRUPTED, its url answers 404, its trace keys
 * are revoked, every launcher stops its runtimes, and their database login is dropped.
 */
export async function deleteDeployment(ctx: ServiceContext, id: string): Promise<void> {
  const row = await findOwnDeployment(ctx, id, 'workspaces:write');
  await revisionsStore.markDeploymentDeleted(ctx.db, row.id);
  recentRows.delete(row.id);
  // Its runtimes' trace keys stop writing now, in every process, not when the runtimes have stopped.
  await revokeDeploymentTraceKeys(ctx, row.id);
  await moveRevisionsOf(ctx, row.id, 'INTERRUPTED', UNFINISHED);
  await ctx.events.publish('deployments.stop-runtimes', { deploymentId: row.id });
  // Its database (its threads, runs, store…) and login go with it. The deletion stands if that fails
  // (say, the admin login may no longer drop them): the login can still reach only that database.
  await dropDeploymentDatabase(ctx, row.id).catch((error: unknown) => ctx.logger.warn({ err: error, deploymentId: row.id }, "could not drop the deleted deployment's database"));
}

/**
 * Forgets the agent servers recorded in deployment_runtimes whose launcher died without removing its
 * row: each live one's launcher holds its liveness lock (child-launcher.ts, recordAgentServer), so a
 * row whose lock is free is a dead one's. Returns how many.
 */
export async function pruneDeadAgentServers(deps: Pick<Deps, 'db'>): Promise<number> {
  const ids = await listAllDeploymentRuntimeIds(deps.db);
  if (!ids.length) return 0;
  let pruned = 0;
  // Try-lock and unlock must happen on one session.
  const client = await deps.db.pool.connect();
  try {
    for (const id of ids) {
      const { rows } = await client.query<{ free: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS free', [runtimeLockKey(id)]);
      if (!rows[0]?.free) continue;
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [runtimeLockKey(id)]);
      await deleteDeploymentRuntime(deps.db, id);
      pruned++;
    }
  } finally {
    client.release();
  }
  return pruned;
}

/** Forgets a cached deployment row (its graphs or deletion changed). */
export const forgetDeploymentRow = (deploymentId: string) => recentRows.delete(deploymentId);

/** An integration given on create must be one of the workspace's (BAD_REQUEST otherwise, as a bad field). */
async function assertIntegration(ctx: ServiceContext, integrationId: string | null | undefined): Promise<void> {
  if (!integrationId) return;
  await integrationAccessToken(ctx, integrationId).catch((error: unknown) => {
    throw error instanceof AppError && error.code === 'NOT_FOUND' ? AppError.badRequest(`Integration ${integrationId} not found.`) : error;
  });
}

/** The git credentials a deployment's clones use: its integration's token, when it names one. */
export async function deploymentGitCredentials(deps: Deps, deployment: Pick<ControlDeploymentRow, 'tenant_id' | 'source_config'>): Promise<GitCredentials | undefined> {
  const integrationId = deployment.source_config.integration_id;
  if (typeof integrationId !== 'string') return undefined;
  return integrationAccessToken({ ...deps, viewer: SYSTEM_VIEWER }, integrationId, { workspaceId: deployment.tenant_id });
}

const definedOnly = <T extends Record<string, unknown>>(values: T): Partial<T> =>
  Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;

/**
 * The organization's deployments' use of their limits, as their workers last measured it, in
 * Prometheus's text format (the platform's GET /metrics): for each deployment (labels
 * `deployment_id`, `deployment_name`, `workspace_id`) processes and threads, memory, its files, its
 * database's size and connections, each beside its limit, and whether it is stopped OVER_LIMIT. For
 * an organization admin (FORBIDDEN otherwise).
 */
export async function deploymentUsageMetrics(ctx: ServiceContext): Promise<{ contentType: string; text: string }> {
  assertCan(ctx.viewer, 'organization:manage');
  const deployments = await listOrganizationUsage(ctx.db, organizationOf(ctx.viewer));
  const registry = new Registry();
  const labelNames = ['deployment_id', 'deployment_name', 'workspace_id'] as const;
  const gauge = (name: string, help: string) => new Gauge({ name: `agent_platform_deployment_${name}`, help, labelNames, registers: [registry] });
  const figures: Array<[Gauge, (usage: DeploymentUsage) => number | undefined]> = [
    [gauge('pids', 'Processes and threads its sandbox runs.'), (usage) => usage.pids],
    [gauge('pids_limit', 'Most processes and threads it may run (resource_spec.pids).'), (usage) => usage.pidsLimit],
    [gauge('memory_bytes', 'Memory its sandbox uses, page cache included.'), (usage) => usage.memoryBytes],
    [gauge('memory_limit_bytes', 'Its memory limit (resource_spec.memory_mb).'), (usage) => usage.memoryLimitBytes],
    [gauge('files_bytes', 'Disk its own folders (HOME, caches) take.'), (usage) => usage.filesBytes],
    [gauge('files_limit_bytes', 'Disk its own folders may take (resource_spec.disk_mb).'), (usage) => usage.filesLimitBytes],
    [gauge('database_bytes', 'Size of its database on disk.'), (usage) => usage.databaseBytes],
    [gauge('database_limit_bytes', 'Size its database may reach (resource_spec.database_mb).'), (usage) => usage.databaseLimitBytes],
    [gauge('database_connections', 'Sessions open on its database.'), (usage) => usage.databaseConnections],
    [gauge('database_connections_limit', "Its database login's connection limit."), (usage) => usage.databaseConnectionsLimit],
  ];
  const stopped = gauge('over_limit', '1 while it is stopped for outgrowing its disk limits (status OVER_LIMIT).');
  for (const deployment of deployments) {
    const labels = { deployment_id: deployment.id, deployment_name: deployment.name, workspace_id: deployment.tenant_id };
    stopped.set(labels, deployment.status === 'OVER_LIMIT' ? 1 : 0);
    if (!deployment.usage) continue;
    for (const [metric, read] of figures) {
      const value = read(deployment.usage);
      if (value !== undefined) metric.set(labels, value);
    }
  }
  return { contentType: registry.contentType, text: await registry.metrics() };
}
