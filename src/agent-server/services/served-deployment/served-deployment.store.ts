// SQL of the agent server's record of the deployment it serves (served_deployments) and of its
// runtimes (runtimes), in its own database. The platform's records of deployments and of where their
// agent servers answer are other tables, in the platform's database, which the agent server never reads.
import type { Database } from '../../../db.js';

export type ServedDeploymentRow = {
  id: string;
  tenant_id: string;
  organization_id: string;
  name: string;
  config_path: string;
  graph_ids: string[];
};

/** The deployment this database's agent server serves. */
export async function findServedDeployment(db: Database, deploymentId: string): Promise<ServedDeploymentRow | undefined> {
  const { rows } = await db.pool.query<ServedDeploymentRow>(
    'SELECT id, tenant_id, organization_id, name, config_path, graph_ids FROM served_deployments WHERE id = $1',
    [deploymentId],
  );
  return rows[0];
}

/** Records (or updates) the deployment this agent server serves. */
export async function upsertServedDeployment(
  db: Database,
  values: { id: string; tenantId: string; organizationId: string; name: string; configPath: string; graphIds: string[] },
): Promise<void> {
  await db.pool.query(
    `INSERT INTO served_deployments (id, tenant_id, organization_id, name, config_path, graph_ids, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, now())
     ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, organization_id = excluded.organization_id, name = excluded.name,
       config_path = excluded.config_path, graph_ids = excluded.graph_ids, updated_at = now()`,
    [values.id, values.tenantId, values.organizationId, values.name, values.configPath, values.graphIds],
  );
}

/** Records the deployment's `checkpointer.ttl` (from the graph config its runtime loaded), which the thread TTL sweep applies. */
export async function recordThreadTtl(db: Database, deploymentId: string, ttl: { defaultMinutes?: number; sweepIntervalMinutes?: number }): Promise<void> {
  await db.pool.query('UPDATE served_deployments SET thread_default_ttl_minutes = $2, thread_sweep_interval_minutes = $3 WHERE id = $1', [
    deploymentId,
    ttl.defaultMinutes ?? null,
    ttl.sweepIntervalMinutes ?? null,
  ]);
}

/** The deployment's runtimes (where its graphs run) that recorded themselves, newest first. */
export async function listRuntimes(db: Database, deploymentId: string): Promise<{ id: string; url: string }[]> {
  const { rows } = await db.pool.query<{ id: string; url: string }>('SELECT id, url FROM runtimes WHERE deployment_id = $1 ORDER BY started_at DESC', [deploymentId]);
  return rows;
}

/** Records a live runtime and where it answers (again after a database outage: the row may still be there). */
export async function insertRuntime(db: Database, values: { id: string; deploymentId: string; url: string }): Promise<void> {
  await db.pool.query('INSERT INTO runtimes (id, deployment_id, url) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [values.id, values.deploymentId, values.url]);
}

export async function deleteRuntime(db: Database, runtimeId: string): Promise<void> {
  await db.pool.query('DELETE FROM runtimes WHERE id = $1', [runtimeId]);
}

/** The recorded runtimes (of one deployment, or all), to find those whose process died without removing its row. */
export async function listRuntimeIds(db: Database, deploymentId?: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM runtimes WHERE $1::uuid IS NULL OR deployment_id = $1', [deploymentId ?? null]);
  return rows.map((row) => row.id);
}
