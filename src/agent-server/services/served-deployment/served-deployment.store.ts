// SQL of the agent server's record of the deployment it serves and of its runtimes, in the agent
// server's own database (a deployed revision's, or `serve`'s). The platform's records of deployments and
// of their agent servers are other rows, in the platform's database (deployments/deployments.store.ts),
// which the agent server never reads.
import type { Database } from '../../../db.js';

export type ServedDeploymentRow = {
  id: string;
  tenant_id: string;
  organization_id: string;
  name: string;
  source: string;
  source_config: Record<string, unknown>;
  graph_ids: string[];
};

/** The deployment with its tenant's organization. */
export async function findServedDeployment(db: Database, deploymentId: string): Promise<ServedDeploymentRow | undefined> {
  const { rows } = await db.pool.query<ServedDeploymentRow>(
    `SELECT d.id, d.tenant_id, w.organization_id, d.name, d.source, d.source_config, d.graph_ids
     FROM deployments d JOIN workspaces w ON w.id = d.tenant_id WHERE d.id = $1 AND d.deleted_at IS NULL`,
    [deploymentId],
  );
  return rows[0];
}

/** Records (or updates) the deployment of a graph config this agent server serves. */
export async function upsertServedDeployment(
  db: Database,
  values: { id: string; tenantId: string; name: string; configPath: string; graphIds: string[] },
): Promise<void> {
  await db.pool.query(
    `INSERT INTO deployments (id, tenant_id, name, source, source_config, graph_ids, updated_at)
     VALUES ($1, $2, $3, 'local', $4, $5, now())
     ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, name = excluded.name, source_config = excluded.source_config,
       graph_ids = excluded.graph_ids, updated_at = now()`,
    [values.id, values.tenantId, values.name, { config_path: values.configPath }, values.graphIds],
  );
}

/** Records the deployment's `checkpointer.ttl` (from the graph config its runtime loaded), which the thread TTL sweep applies. */
export async function recordThreadTtl(db: Database, deploymentId: string, ttl: { defaultMinutes?: number; sweepIntervalMinutes?: number }): Promise<void> {
  await db.pool.query('UPDATE deployments SET thread_default_ttl_minutes = $2, thread_sweep_interval_minutes = $3 WHERE id = $1', [
    deploymentId,
    ttl.defaultMinutes ?? null,
    ttl.sweepIntervalMinutes ?? null,
  ]);
}

/** The deployment's runtimes (where its graphs run) that recorded themselves, newest first. */
export async function listRuntimes(db: Database, deploymentId: string): Promise<{ id: string; url: string }[]> {
  const { rows } = await db.pool.query<{ id: string; url: string }>(
    'SELECT id, url FROM deployment_runtimes WHERE deployment_id = $1 ORDER BY started_at DESC',
    [deploymentId],
  );
  return rows;
}

/** Records a live runtime and where it answers. */
export async function insertRuntime(db: Database, values: { id: string; deploymentId: string; url: string }): Promise<void> {
  await db.pool.query('INSERT INTO deployment_runtimes (id, deployment_id, url) VALUES ($1, $2, $3)', [values.id, values.deploymentId, values.url]);
}

export async function deleteRuntime(db: Database, runtimeId: string): Promise<void> {
  await db.pool.query('DELETE FROM deployment_runtimes WHERE id = $1', [runtimeId]);
}
