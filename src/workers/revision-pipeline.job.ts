// The revision pipeline, two pg-boss jobs worked by the worker role (queues in boss.ts):
//   revisions.build    AWAITING_BUILD → BUILDING: clone at the ref, check the graph config, install
//                      dependencies, load every graph in a child process → AWAITING_DEPLOY (or BUILD_FAILED)
//   revisions.deploy   DEPLOYING: start the revision's runtime, wait until it answers, make it the
//                      active revision, stop the previous one → DEPLOYED (or DEPLOY_FAILED)
// Every move is conditional on the status it leaves, so a revision SKIPPED by a newer one or
// INTERRUPTED by a DELETE meanwhile stops at the next step (and a runtime it started is stopped).
import type { PgBoss } from 'pg-boss';
import { DeployedRuntimes } from '../runtime/deployed-runtimes.js';
import { checkGraphsInChild } from '../runtime/child-launcher.js';
import { ensureSystemAssistants } from '../services/assistants/assistants.service.js';
import type { Deps } from '../services/context.js';
import { agentContext, deploymentGitCredentials, deploymentSecrets, forgetDeploymentRow } from '../services/deployments/deployments.service.js';
import { logRevision, moveRevision, REVISION_BUILD_QUEUE, REVISION_DEPLOY_QUEUE } from '../services/deployments/revisions.service.js';
import { activateRevision, findControlDeployment, findRevision, setRevisionBuild } from '../services/deployments/revisions.store.js';
import { checkoutSource, installDependencies, locateGraphConfig, revisionDirectory, revisionGraphConfigPath } from '../services/deployments/source-checkout.js';
import { SYSTEM_VIEWER } from '../services/tenancy/viewer.js';

type RevisionJob = { revisionId: string };

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

export async function buildRevision(deps: Deps, boss: PgBoss, revisionId: string): Promise<void> {
  if (!(await moveRevision(deps, revisionId, 'AWAITING_BUILD', ['QUEUED']))) return;
  if (!(await moveRevision(deps, revisionId, 'BUILDING', ['AWAITING_BUILD']))) return;
  const log = (message: string) => logRevision(deps, revisionId, 'build', message);
  try {
    const revision = await findRevision(deps.db, revisionId);
    const deployment = revision && (await findControlDeployment(deps.db, revision.deployment_id));
    if (!revision || !deployment) {
      await moveRevision(deps, revisionId, 'INTERRUPTED', ['BUILDING']);
      return;
    }
    const dir = revisionDirectory(deps.config.dataDir, revisionId);
    const { repo_ref: repoRef, graph_config_path: graphConfigPath } = revision.source_revision_config as { repo_ref: string; graph_config_path: string };
    const commitSha = await checkoutSource(dir, String(deployment.source_config.repo_url), repoRef, log, await deploymentGitCredentials(deps, deployment));
    await setRevisionBuild(deps.db, revisionId, { commitSha });
    const configPath = locateGraphConfig(dir, graphConfigPath);
    await installDependencies(dir, configPath, log);
    await log('Loading the graphs');
    const graphIds = await checkGraphsInChild({ configPath, secrets: deploymentSecrets(deps, deployment) });
    await setRevisionBuild(deps.db, revisionId, { graphIds });
    await log(`Build succeeded: graphs ${graphIds.join(', ')}`);
    if (await moveRevision(deps, revisionId, 'AWAITING_DEPLOY', ['BUILDING'])) {
      await boss.send(REVISION_DEPLOY_QUEUE, { revisionId } satisfies RevisionJob, { singletonKey: revisionId });
    }
  } catch (error) {
    await log(`Build failed: ${errorMessage(error)}`);
    await moveRevision(deps, revisionId, 'BUILD_FAILED', ['BUILDING']);
  }
}

export async function deployRevision(deps: Deps, runtimes: DeployedRuntimes, revisionId: string): Promise<void> {
  if (!(await moveRevision(deps, revisionId, 'DEPLOYING', ['AWAITING_DEPLOY']))) return;
  const log = (message: string) => logRevision(deps, revisionId, 'deploy', message);
  try {
    const revision = await findRevision(deps.db, revisionId);
    const deployment = revision && (await findControlDeployment(deps.db, revision.deployment_id));
    if (!revision || !deployment) {
      await moveRevision(deps, revisionId, 'INTERRUPTED', ['DEPLOYING']);
      return;
    }
    await log('Starting the runtime');
    const runtime = await runtimes.start(deployment.id, revisionId, revisionGraphConfigPath(deps.config.dataDir, revision));
    await log(`Runtime answering at ${runtime.url} (graphs ${runtime.graphIds.join(', ')})`);
    // Switch only if nothing interrupted the revision meanwhile; the old runtime serves until then.
    if (!(await activateRevision(deps.db, deployment.id, revisionId, runtime.graphIds))) {
      await runtimes.stopRevision(revisionId);
      await moveRevision(deps, revisionId, 'INTERRUPTED', ['DEPLOYING']);
      return;
    }
    forgetDeploymentRow(deployment.id);
    const system = { ...deps, viewer: SYSTEM_VIEWER };
    await ensureSystemAssistants(await agentContext(system, deployment.id));
    if (!(await moveRevision(deps, revisionId, 'DEPLOYED', ['DEPLOYING']))) {
      await runtimes.stopRevision(revisionId);
      return;
    }
    await log('Deployed');
    await deps.events.publish('deployments.stop-runtimes', { deploymentId: deployment.id, keepRevisionId: revisionId });
  } catch (error) {
    await log(`Deploy failed: ${errorMessage(error)}`);
    await runtimes.stopRevision(revisionId);
    await moveRevision(deps, revisionId, 'DEPLOY_FAILED', ['DEPLOYING']);
  }
}

/** Works both queues in this process, with its launcher of deployed runtimes; returns them (to stop). */
export async function workRevisionPipeline(deps: Deps, boss: PgBoss): Promise<DeployedRuntimes> {
  const runtimes = new DeployedRuntimes(deps);
  // Builds are CPU and disk heavy: two at a time per worker.
  await boss.work<RevisionJob>(REVISION_BUILD_QUEUE, { batchSize: 1, localConcurrency: 2, pollingIntervalSeconds: 0.5 }, async ([job]) => {
    await buildRevision(deps, boss, job!.data.revisionId);
  });
  await boss.work<RevisionJob>(REVISION_DEPLOY_QUEUE, { batchSize: 1, localConcurrency: 2, pollingIntervalSeconds: 0.5 }, async ([job]) => {
    await deployRevision(deps, runtimes, job!.data.revisionId);
  });
  void runtimes.restoreActive();
  return runtimes;
}
