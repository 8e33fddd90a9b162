// Control-plane resources as the wire shows them (snake_case; secret values never).
import type { Request } from 'express';
import type { Deployment } from '../services/deployments/deployments.service.js';
import type { RevisionLogRow, RevisionRow } from '../services/deployments/revisions.service.js';

const iso = (value: Date | null) => (value ? value.toISOString() : null);

/** Where a deployment's agent server answers: the configured public URL, else the address this request reached. */
function deploymentUrl(deployment: Deployment, req: Request): string {
  return deployment.url ?? `${req.protocol}://${req.get('host')}/deployments/${deployment.id}`;
}

export function presentDeployment(deployment: Deployment, req: Request) {
  return {
    id: deployment.id,
    name: deployment.name,
    source: deployment.source,
    source_config: deployment.source_config,
    source_revision_config: deployment.source_revision_config,
    secrets: deployment.secret_names.map((name) => ({ name })),
    status: deployment.status,
    latest_revision_id: deployment.latest_revision_id,
    active_revision_id: deployment.active_revision_id,
    url: deploymentUrl(deployment, req),
    created_at: iso(deployment.created_at),
    updated_at: iso(deployment.updated_at),
  };
}

export function presentRevision(revision: RevisionRow) {
  return {
    id: revision.id,
    deployment_id: revision.deployment_id,
    status: revision.status,
    source_revision_config: revision.source_revision_config,
    commit_sha: revision.commit_sha,
    graph_ids: revision.graph_ids,
    created_at: iso(revision.created_at),
    updated_at: iso(revision.updated_at),
  };
}

export function presentRevisionLog(line: RevisionLogRow) {
  return { id: line.id, type: line.type, message: line.message, timestamp: iso(line.created_at) };
}
