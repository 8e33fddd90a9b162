// SQL of the control plane: deployments as the control plane sees them, their revisions and logs.
import type { CorsOptions } from '../../../contracts/graph-config.js';
import { type Database, withTransaction } from '../../../db.js';
import type { RevisionStatus } from './deployments.schemas.js';

export type ControlDeploymentRow = {
  id: string;
  tenant_id: string;
  name: string;
  source: string;
  source_config: Record<string, unknown>;
  source_revision_config: Record<string, unknown>;
  status: string;
  active_revision_id: string | null;
  latest_revision_id: string | null;
  url: string | null;
  graph_ids: string[];
  secrets: string | null;
  /** Its own number, from which its sandbox's OS user is made (sandbox.ts). */
  sandbox_id: number;
  created_at: Date;
  updated_at: Date;
};

export type RevisionRow = {
  id: string;
  deployment_id: string;
  status: RevisionStatus;
  source_revision_config: Record<string, unknown>;
  commit_sha: string | null;
  graph_ids: string[];
  created_at: Date;
  updated_at: Date;
};

export type RevisionLogRow = { id: string; type: string; message: string; created_at: Date };

const DEPLOYMENT_COLUMNS = `id, tenant_id, name, source, source_config, source_revision_config, status, active_revision_id,
  latest_revision_id, url, graph_ids, secrets, sandbox_id, created_at, updated_at`;
const REVISION_COLUMNS = 'id, deployment_id, status, source_revision_config, commit_sha, graph_ids, created_at, updated_at';

/** A deployment of a workspace that is not deleted; `tenantId` undefined: of any workspace (the pipeline). */
export async function findControlDeployment(db: Database, id: string, tenantId?: string): Promise<ControlDeploymentRow | undefined> {
  const { rows } = await db.pool.query<ControlDeploymentRow>(
    `SELECT ${DEPLOYMENT_COLUMNS} FROM deployments WHERE id = $1 AND deleted_at IS NULL AND ($2::uuid IS NULL OR tenant_id = $2)`,
    [id, tenantId ?? null],
  );
  return rows[0];
}

export async function listControlDeployments(
  db: Database,
  tenantId: string,
  filter: { limit: number; offset: number; nameContains?: string; status?: string; ids?: string[] },
): Promise<ControlDeploymentRow[]> {
  const { rows } = await db.pool.query<ControlDeploymentRow>(
    `SELECT ${DEPLOYMENT_COLUMNS} FROM deployments
     WHERE tenant_id = $1 AND deleted_at IS NULL
       AND ($2::text IS NULL OR strpos(lower(name), lower($2)) > 0)
       AND ($3::text IS NULL OR status = $3)
       AND ($4::uuid[] IS NULL OR id = ANY($4))
     ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6`,
    [tenantId, filter.nameContains ?? null, filter.status ?? null, filter.ids ?? null, filter.limit, filter.offset],
  );
  return rows;
}

/** Inserts a deployment and its first revision (CREATING) in one statement. */
export async function insertDeploymentWithRevision(
  db: Database,
  values: {
    id: string;
    revisionId: string;
    tenantId: string;
    name: string;
    source: string;
    sourceConfig: Record<string, unknown>;
    sourceRevisionConfig: Record<string, unknown>;
    secrets: string | null;
    url: string | null;
  },
): Promise<void> {
  await db.pool.query(
    `WITH deployment AS (
       INSERT INTO deployments (id, tenant_id, name, source, source_config, source_revision_config, secrets, url, latest_revision_id, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now()) RETURNING id)
     INSERT INTO deployment_revisions (id, deployment_id, source_revision_config, updated_at)
     SELECT $9, id, $6, now() FROM deployment`,
    [values.id, values.tenantId, values.name, values.source, values.sourceConfig, values.sourceRevisionConfig, values.secrets, values.url, values.revisionId],
  );
}

/**
 * Changes a deployment's mutable fields and, with `revisionId`, records a new latest revision (CREATING)
 * of its source revision config as changed. The changes merge into the row as it is when the statement
 * runs (secrets left undefined are kept), so concurrent PATCHes of different fields all stay.
 */
export async function updateDeploymentWithRevision(
  db: Database,
  id: string,
  change: { sourceConfig?: Record<string, unknown>; sourceRevisionConfig?: Record<string, unknown>; secrets?: string | null; revisionId?: string },
): Promise<void> {
  await db.pool.query(
    `WITH deployment AS (
       UPDATE deployments SET source_config = source_config || $2::jsonb, source_revision_config = source_revision_config || $3::jsonb,
         secrets = CASE WHEN $6 THEN $4 ELSE secrets END, latest_revision_id = coalesce($5, latest_revision_id), updated_at = now()
       WHERE id = $1 RETURNING id, source_revision_config)
     INSERT INTO deployment_revisions (id, deployment_id, source_revision_config, updated_at)
     SELECT $5, id, source_revision_config, now() FROM deployment WHERE $5::uuid IS NOT NULL`,
    [id, change.sourceConfig ?? {}, change.sourceRevisionConfig ?? {}, change.secrets ?? null, change.revisionId ?? null, change.secrets !== undefined],
  );
}

/** Marks a deployment deleted; its url and control-plane routes answer 404 from then on. */
export async function markDeploymentDeleted(db: Database, id: string): Promise<void> {
  await db.pool.query(`UPDATE deployments SET deleted_at = now(), status = 'AWAITING_DELETE', active_revision_id = NULL, graph_ids = '{}', updated_at = now() WHERE id = $1`, [id]);
}

/** Of these deployments, the deleted ones. */
export async function deletedDeploymentsAmong(db: Database, ids: string[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM deployments WHERE id = ANY($1::uuid[]) AND deleted_at IS NOT NULL', [ids]);
  return rows.map((row) => row.id);
}

/**
 * Of these revisions, those no agent server starts from again: finished and not their deployment's active
 * revision (every revision of a deleted deployment). A redeploy makes a new revision, built afresh.
 */
export async function retiredRevisionsAmong(db: Database, ids: string[], finished: readonly RevisionStatus[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `SELECT r.id FROM deployment_revisions r JOIN deployments d ON d.id = r.deployment_id
     WHERE r.id = ANY($1::uuid[]) AND r.status = ANY($2) AND d.active_revision_id IS DISTINCT FROM r.id`,
    [ids, finished],
  );
  return rows.map((row) => row.id);
}

/**
 * Runs `work` holding the build-on-push watch's lock (a transaction's advisory lock in the platform's
 * database): passes of several processes (workers, a pass asked for meanwhile) take turns, so two
 * that see the same ref move never both make a revision of it.
 */
export async function whileWatchingRefs<T>(db: Database, work: () => Promise<T>): Promise<T> {
  return withTransaction(db, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('agent-platform:revisions-watch'))");
    return work();
  });
}

/** The deployments whose active revision should be running (for a restart of the platform). */
export async function listActiveRevisions(db: Database): Promise<{ deployment_id: string; revision_id: string; status: string; resource_spec: unknown }[]> {
  const { rows } = await db.pool.query<{ deployment_id: string; revision_id: string; status: string; resource_spec: unknown }>(
    `SELECT id AS deployment_id, active_revision_id AS revision_id, status, source_config->'resource_spec' AS resource_spec FROM deployments
     WHERE deleted_at IS NULL AND active_revision_id IS NOT NULL AND source <> 'local'`,
  );
  return rows;
}

/**
 * Makes `revisionId` the deployment's active revision, if the deployment still exists; the deployment
 * takes on whether the revision declares custom auth, which the gateway reads.
 */
export async function activateRevision(db: Database, deploymentId: string, revisionId: string, graphIds: string[]): Promise<boolean> {
  const { rowCount } = await db.pool.query(
    `UPDATE deployments SET active_revision_id = $2, graph_ids = $3, updated_at = now(),
       custom_auth = coalesce((SELECT custom_auth FROM deployment_revisions WHERE id = $2), false),
       platform_keys = coalesce((SELECT platform_keys FROM deployment_revisions WHERE id = $2), false),
       cors = (SELECT cors FROM deployment_revisions WHERE id = $2)
     WHERE id = $1 AND deleted_at IS NULL`,
    [deploymentId, revisionId, graphIds],
  );
  return rowCount === 1;
}

export async function findRevision(db: Database, revisionId: string, deploymentId?: string): Promise<RevisionRow | undefined> {
  const { rows } = await db.pool.query<RevisionRow>(
    `SELECT ${REVISION_COLUMNS} FROM deployment_revisions WHERE id = $1 AND ($2::uuid IS NULL OR deployment_id = $2)`,
    [revisionId, deploymentId ?? null],
  );
  return rows[0];
}

/** A deployment's revisions, latest first. */
export async function listRevisions(db: Database, deploymentId: string, page: { limit: number; offset: number }): Promise<RevisionRow[]> {
  const { rows } = await db.pool.query<RevisionRow>(
    `SELECT ${REVISION_COLUMNS} FROM deployment_revisions WHERE deployment_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
    [deploymentId, page.limit, page.offset],
  );
  return rows;
}

/**
 * Moves a revision to `status` if it is in one of `from` (all statuses when omitted); returns whether
 * it moved. The condition makes racing moves (a build finishing while a DELETE interrupts it) safe.
 */
export async function moveRevision(db: Database, revisionId: string, status: RevisionStatus, from?: readonly RevisionStatus[]): Promise<RevisionRow | undefined> {
  const { rows } = await db.pool.query<RevisionRow>(
    `UPDATE deployment_revisions SET status = $2, updated_at = now() WHERE id = $1 AND ($3::text[] IS NULL OR status = ANY($3))
     RETURNING ${REVISION_COLUMNS}`,
    [revisionId, status, from ?? null],
  );
  return rows[0];
}

/** Moves every revision of a deployment in one of `from` (other than `except`) to `status`; returns the ids moved. */
export async function moveRevisionsOf(
  db: Database,
  deploymentId: string,
  status: RevisionStatus,
  from: readonly RevisionStatus[],
  options: { except?: string; olderThan?: string } = {},
): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `UPDATE deployment_revisions SET status = $2, updated_at = now()
     WHERE deployment_id = $1 AND status = ANY($3) AND ($4::uuid IS NULL OR id <> $4)
       AND ($5::uuid IS NULL OR created_at < (SELECT created_at FROM deployment_revisions WHERE id = $5))
     RETURNING id`,
    [deploymentId, status, from, options.except ?? null, options.olderThan ?? null],
  );
  return rows.map((row) => row.id);
}

export async function setRevisionBuild(
  db: Database,
  revisionId: string,
  values: { commitSha?: string; graphIds?: string[]; customAuth?: boolean; platformKeys?: boolean; cors?: CorsOptions },
): Promise<void> {
  await db.pool.query(
    `UPDATE deployment_revisions SET commit_sha = coalesce($2, commit_sha), graph_ids = coalesce($3, graph_ids),
       custom_auth = coalesce($4, custom_auth), platform_keys = coalesce($5, platform_keys), cors = coalesce($6::jsonb, cors), updated_at = now() WHERE id = $1`,
    [revisionId, values.commitSha ?? null, values.graphIds ?? null, values.customAuth ?? null, values.platformKeys ?? null, values.cors ? JSON.stringify(values.cors) : null],
  );
}

export async function appendRevisionLog(db: Database, revisionId: string, type: 'build' | 'deploy', message: string): Promise<void> {
  await db.pool.query('INSERT INTO deployment_revision_logs (revision_id, type, message) VALUES ($1, $2, $3)', [revisionId, type, message]);
}

export async function listRevisionLogs(db: Database, revisionId: string, page: { type: string; limit: number; offset: number }): Promise<RevisionLogRow[]> {
  const { rows } = await db.pool.query<RevisionLogRow>(
    `SELECT id::text, type, message, created_at FROM deployment_revision_logs l WHERE revision_id = $1 AND type = $2 ORDER BY l.id LIMIT $3 OFFSET $4`,
    [revisionId, page.type, page.limit, page.offset],
  );
  return rows;
}

/** Deployments that build on push, with their latest revision's ref and commit. */
export async function listBuildOnPush(db: Database): Promise<{ id: string; tenant_id: string; repo_url: string; repo_ref: string; commit_sha: string | null }[]> {
  const { rows } = await db.pool.query<{ id: string; tenant_id: string; repo_url: string; repo_ref: string; commit_sha: string | null }>(
    `SELECT d.id, d.tenant_id, d.source_config->>'repo_url' AS repo_url, d.source_revision_config->>'repo_ref' AS repo_ref, r.commit_sha
     FROM deployments d LEFT JOIN deployment_revisions r ON r.id = d.latest_revision_id
     WHERE d.deleted_at IS NULL AND d.source = 'github' AND (d.source_config->>'build_on_push')::boolean IS TRUE
       AND (r.id IS NULL OR r.status IN ('DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'CREATE_FAILED'))`,
  );
  return rows;
}
