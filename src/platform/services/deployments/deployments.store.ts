// SQL of the platform's deployments and deployment_runtimes tables (where its launchers record the
// agent servers they run, and the gateway finds them): control-plane deployments and local ones.
import type { CorsOptions } from '../../../contracts/graph-config.js';
import type { Database } from '../../../db.js';

export type DeploymentRow = {
  id: string;
  tenant_id: string;
  organization_id: string;
  name: string;
  source: string;
  source_config: Record<string, unknown>;
  graph_ids: string[];
  /** Whether its active revision declares custom auth (langgraph.json `auth`). */
  custom_auth: boolean;
  /** …and takes platform API keys beside it (`auth.allow_langsmith_api_keys`). */
  platform_keys: boolean;
  /** Its active revision's `http.cors` (null: none, any origin). */
  cors: CorsOptions | null;
};

/** One deployment with its tenant's organization. */
export async function findDeployment(db: Database, deploymentId: string): Promise<DeploymentRow | undefined> {
  const { rows } = await db.pool.query<DeploymentRow>(
    `SELECT d.id, d.tenant_id, w.organization_id, d.name, d.source, d.source_config, d.graph_ids, d.custom_auth, d.platform_keys, d.cors
     FROM deployments d JOIN workspaces w ON w.id = d.tenant_id WHERE d.id = $1 AND d.deleted_at IS NULL`,
    [deploymentId],
  );
  return rows[0];
}

/** Records (or updates) a local deployment: a graph config on the machine that runs its agent server. */
export async function upsertLocalDeployment(
  db: Database,
  values: { id: string; tenantId: string; name: string; configPath: string; graphIds: string[]; cors?: CorsOptions },
): Promise<void> {
  await db.pool.query(
    `INSERT INTO deployments (id, tenant_id, name, source, source_config, graph_ids, cors, updated_at)
     VALUES ($1, $2, $3, 'local', $4, $5, $6, now())
     ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, name = excluded.name, source_config = excluded.source_config,
       graph_ids = excluded.graph_ids, cors = excluded.cors, updated_at = now()`,
    [values.id, values.tenantId, values.name, { config_path: values.configPath }, values.graphIds, values.cors ? JSON.stringify(values.cors) : null],
  );
}

/** The local deployments (of one organization, or all), oldest first. */
export async function listLocalDeploymentIds(db: Database, organizationId?: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `SELECT d.id FROM deployments d JOIN workspaces w ON w.id = d.tenant_id
      WHERE d.source = 'local' AND d.deleted_at IS NULL AND ($1::uuid IS NULL OR w.organization_id = $1) ORDER BY d.created_at`,
    [organizationId ?? null],
  );
  return rows.map((row) => row.id);
}

/** The deployment's agent servers that its launchers recorded, the active revision's first, newest first. */
export async function listDeploymentRuntimes(db: Database, deploymentId: string): Promise<{ id: string; url: string; key_id: string | null; active: boolean }[]> {
  // The active revision's runtime first: during a deploy the next revision's runtime is already up.
  const { rows } = await db.pool.query<{ id: string; url: string; key_id: string | null; active: boolean }>(
    `SELECT r.id, r.url, r.key_id, r.revision_id IS NOT DISTINCT FROM d.active_revision_id AS active FROM deployment_runtimes r JOIN deployments d ON d.id = r.deployment_id
     WHERE r.deployment_id = $1 ORDER BY (r.revision_id IS NOT DISTINCT FROM d.active_revision_id) DESC, r.started_at DESC`,
    [deploymentId],
  );
  return rows;
}

/** Records a live runtime and where it answers. */
export async function insertDeploymentRuntime(
  db: Database,
  values: { id: string; deploymentId: string; url: string; revisionId?: string; keyId?: string },
): Promise<void> {
  // Again after a database outage (recordAgentServer): the row may still be there.
  await db.pool.query('INSERT INTO deployment_runtimes (id, deployment_id, url, revision_id, key_id) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING', [
    values.id,
    values.deploymentId,
    values.url,
    values.revisionId ?? null,
    values.keyId ?? null,
  ]);
}

/** How many live runtimes of the deployment run a revision other than `revisionId`. */
export async function countOtherRevisionRuntimes(db: Database, deploymentId: string, revisionId: string): Promise<number> {
  const { rows } = await db.pool.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM deployment_runtimes WHERE deployment_id = $1 AND revision_id IS DISTINCT FROM $2',
    [deploymentId, revisionId],
  );
  return rows[0]!.count;
}

export async function deleteDeploymentRuntime(db: Database, runtimeId: string): Promise<void> {
  await db.pool.query('DELETE FROM deployment_runtimes WHERE id = $1', [runtimeId]);
}

/** Every recorded agent server, to find those whose launcher died without removing its row. */
export async function listAllDeploymentRuntimeIds(db: Database): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM deployment_runtimes');
  return rows.map((row) => row.id);
}

/**
 * Sets a deployment's status (AWAITING_DATABASE while its database is made, READY after; OVER_LIMIT
 * while it is stopped for outgrowing its disk limits). Returns whether it changed.
 */
export async function setDeploymentStatus(db: Database, deploymentId: string, status: 'AWAITING_DATABASE' | 'READY' | 'OVER_LIMIT'): Promise<boolean> {
  const { rowCount } = await db.pool.query('UPDATE deployments SET status = $2, updated_at = now() WHERE id = $1 AND status IS DISTINCT FROM $2', [deploymentId, status]);
  return rowCount === 1;
}

/**
 * What a deployment used of its limits, as its worker last measured it (deployment-usage.ts). Every
 * figure is in bytes or a count; a limit beside each.
 */
export type DeploymentUsage = {
  measuredAt: string;
  pids?: number;
  pidsLimit: number;
  memoryBytes?: number;
  memoryLimitBytes: number;
  filesBytes?: number;
  filesLimitBytes: number;
  databaseBytes?: number;
  databaseLimitBytes: number;
  databaseConnections?: number;
  databaseConnectionsLimit: number;
};

export async function recordDeploymentUsage(db: Database, deploymentId: string, usage: DeploymentUsage): Promise<void> {
  await db.pool.query('UPDATE deployments SET usage = $2 WHERE id = $1', [deploymentId, JSON.stringify(usage)]);
}

/** A deployment's status and last measured usage (why it is OVER_LIMIT, when it is). */
export async function findDeploymentUsage(db: Database, deploymentId: string): Promise<{ status: string; usage: DeploymentUsage | null } | undefined> {
  const { rows } = await db.pool.query<{ status: string; usage: DeploymentUsage | null }>('SELECT status, usage FROM deployments WHERE id = $1 AND deleted_at IS NULL', [deploymentId]);
  return rows[0];
}

/** The organization's deployments with their status and last measured usage, for /metrics. */
export async function listOrganizationUsage(db: Database, organizationId: string): Promise<Array<{ id: string; name: string; tenant_id: string; status: string; usage: DeploymentUsage | null }>> {
  const { rows } = await db.pool.query<{ id: string; name: string; tenant_id: string; status: string; usage: DeploymentUsage | null }>(
    `SELECT d.id, d.name, d.tenant_id, d.status, d.usage FROM deployments d JOIN workspaces w ON w.id = d.tenant_id
      WHERE w.organization_id = $1 AND d.deleted_at IS NULL AND d.source <> 'local' ORDER BY d.created_at`,
    [organizationId],
  );
  return rows;
}
