// The revision pipeline, two pg-boss jobs worked by the worker role (queues in boss.ts):
//   revisions.build    AWAITING_BUILD → BUILDING: clone at the ref, check the graph config, install
//                      dependencies, load every graph in the revision's runtime process, which then
//                      waits for its deploy → AWAITING_DEPLOY (or BUILD_FAILED)
//   revisions.deploy   DEPLOYING: start the revision's runtime (the build's process when this worker
//                      built it, else a fresh one), wait until it answers, make it the active revision,
//                      stop the previous one → DEPLOYED (or DEPLOY_FAILED)
// A worker wakes its build queue when any process queues a build (`revisions.queued`) and its deploy
// queue when it finishes a build, instead of waiting for pg-boss's next poll.
// Every move is conditional on the status it leaves, so a revision SKIPPED by a newer one or
// INTERRUPTED by a DELETE meanwhile stops at the next step (and a runtime it started is stopped).
import type { PgBoss } from 'pg-boss';
import { DeployedRuntimes, replicasOf } from '../launcher/deployed-runtimes.js';
import type { Deps } from '../../context.js';
import { deploymentGitCredentials, forgetDeploymentRow } from '../services/deployments/deployments.service.js';
import { logRevision, moveRevision, REVISION_BUILD_QUEUE, REVISION_DEPLOY_QUEUE } from '../services/deployments/revisions.service.js';
import { activateRevision, findControlDeployment, findRevision, setRevisionBuild } from '../services/deployments/revisions.store.js';
import { checkoutSource, installRevisionDependencies, locateGraphConfig, revisionDirectory, revisionGraphConfigPath } from '../launcher/source-checkout.js';
import { describeSandbox, sandboxFor } from '../launcher/sandbox.js';
import { countOtherRevisionRuntimes, setDeploymentStatus } from '../services/deployments/deployments.store.js';
import { deploymentDatabaseExists, deploymentTemplate, ensureDeploymentDatabase } from '../services/deployments/deployment-database.js';

type RevisionJob = { revisionId: string };

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

async function buildRevision(deps: Deps, boss: PgBoss, runtimes: DeployedRuntimes, revisionId: string, wakeDeploy: () => void = () => undefined): Promise<void> {
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
    // Fails the build at once where deployed code cannot be sandboxed (unless the operator allowed it).
    const sandbox = sandboxFor(deps, deployment);
    await log(describeSandbox(sandbox.status));
    const dir = revisionDirectory(deps.config.dataDir, revisionId);
    const { repo_ref: repoRef, graph_config_path: graphConfigPath } = revision.source_revision_config as { repo_ref: string; graph_config_path: string };
    const commitSha = await checkoutSource(dir, String(deployment.source_config.repo_url), repoRef, log, await deploymentGitCredentials(deps, deployment), sandbox.files.uid);
    await setRevisionBuild(deps.db, revisionId, { commitSha });
    // The config read here is the one the revision serves: its files are read-only to its sandbox.
    const config = locateGraphConfig(dir, graphConfigPath);
    for (const note of config.notes) await log(`langgraph.json: ${note}`);
    // From here on the repository's code runs: in the deployment's sandbox, as its own OS user (the
    // clone above already made its files that user's). A redeploy may take the packages of the
    // revision serving now, where they were installed from the same inputs.
    const serving = deployment.active_revision_id ? revisionDirectory(deps.config.dataDir, deployment.active_revision_id) : undefined;
    await installRevisionDependencies(dir, config, log, sandbox, serving ? { dir: serving } : undefined);
    await prepareDeploymentDatabase(deps, deployment.id, log);
    await log('Loading the graphs');
    const graphIds = await runtimes.prepare(deployment.id, revisionId, config.path);
    await setRevisionBuild(deps.db, revisionId, { graphIds, customAuth: config.auth !== undefined, platformKeys: config.auth?.allowPlatformKeys ?? false, cors: config.cors });
    await log(`Build succeeded: graphs ${graphIds.join(', ')}`);
    if (await moveRevision(deps, revisionId, 'AWAITING_DEPLOY', ['BUILDING'])) {
      await boss.send(REVISION_DEPLOY_QUEUE, { revisionId } satisfies RevisionJob, { singletonKey: revisionId });
      wakeDeploy();
    } else {
      await runtimes.discardPrepared(revisionId);
    }
  } catch (error) {
    await runtimes.discardPrepared(revisionId);
    await log(`Build failed: ${errorMessage(error)}`);
    await moveRevision(deps, revisionId, 'BUILD_FAILED', ['BUILDING']);
  }
}

async function deployRevision(deps: Deps, runtimes: DeployedRuntimes, revisionId: string): Promise<void> {
  if (!(await moveRevision(deps, revisionId, 'DEPLOYING', ['AWAITING_DEPLOY']))) {
    // SKIPPED or INTERRUPTED while it waited: the process its build loaded has nothing to serve.
    await runtimes.discardPrepared(revisionId);
    return;
  }
  const log = (message: string) => logRevision(deps, revisionId, 'deploy', message);
  try {
    const revision = await findRevision(deps.db, revisionId);
    const deployment = revision && (await findControlDeployment(deps.db, revision.deployment_id));
    if (!revision || !deployment) {
      await moveRevision(deps, revisionId, 'INTERRUPTED', ['DEPLOYING']);
      return;
    }
    await log('Starting the runtime');
    const configPath = revisionGraphConfigPath(deps.config.dataDir, revision);
    const runtime = await runtimes.start(deployment.id, revisionId, configPath);
    await log(`Runtime answering at ${runtime.url} (graphs ${runtime.graphIds.join(', ')})`);
    const replicas = replicasOf(deployment.source_config.resource_spec);
    if (replicas > 1) await log(`${await runtimes.startReplicas(deployment.id, revisionId, configPath, replicas)} of its ${replicas} replicas answering on this worker (others' on other workers, or at the next restore pass)`);
    // Switch only if nothing interrupted the revision meanwhile; the old runtime serves until then.
    if (!(await activateRevision(deps.db, deployment.id, revisionId, runtime.graphIds))) {
      await runtimes.stopRevision(revisionId);
      await moveRevision(deps, revisionId, 'INTERRUPTED', ['DEPLOYING']);
      return;
    }
    forgetDeploymentRow(deployment.id);
    // The previous revision's runtime stops (whichever worker runs it) before the revision is
    // DEPLOYED: a client that runs the graph once it sees DEPLOYED gets the new revision's.
    await deps.events.publish('deployments.stop-runtimes', { deploymentId: deployment.id, keepRevisionId: revisionId });
    if (!(await previousRuntimesGone(deps, deployment.id, revisionId))) await log('The previous runtime had not stopped after 30 s; deploying anyway');
    if (!(await moveRevision(deps, revisionId, 'DEPLOYED', ['DEPLOYING']))) {
      await runtimes.stopRevision(revisionId);
      return;
    }
    await log('Deployed');
  } catch (error) {
    await log(`Deploy failed: ${errorMessage(error)}`);
    await runtimes.stopRevision(revisionId);
    await moveRevision(deps, revisionId, 'DEPLOY_FAILED', ['DEPLOYING']);
  }
}

/**
 * The deployment's own database and login (deployment-database.ts), made at its first build: the
 * deployment is AWAITING_DATABASE meanwhile, READY after.
 */
async function prepareDeploymentDatabase(deps: Deps, deploymentId: string, log: (message: string) => Promise<void>): Promise<void> {
  if (!(await deploymentDatabaseExists(deps, deploymentId))) {
    await setDeploymentStatus(deps.db, deploymentId, 'AWAITING_DATABASE');
    await log("Making the deployment's database");
  }
  await ensureDeploymentDatabase(deps, deploymentId);
  await setDeploymentStatus(deps.db, deploymentId, 'READY');
}

/** Waits (up to 30 s) until no runtime of another revision of the deployment is live. */
async function previousRuntimesGone(deps: Deps, deploymentId: string, revisionId: string): Promise<boolean> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if ((await countOtherRevisionRuntimes(deps.db, deploymentId, revisionId)) === 0) return true;
  }
  return false;
}

/** Works both queues in this process, with its launcher of deployed runtimes; returns them (to stop). */
export async function workRevisionPipeline(deps: Deps, boss: PgBoss): Promise<DeployedRuntimes> {
  const runtimes = new DeployedRuntimes(deps);
  const deployWorker = await boss.work<RevisionJob>(REVISION_DEPLOY_QUEUE, { batchSize: 1, localConcurrency: 2, pollingIntervalSeconds: 0.5 }, async ([job]) => {
    await deployRevision(deps, runtimes, job!.data.revisionId);
  });
  // Builds are CPU and disk heavy: two at a time per worker.
  const buildWorker = await boss.work<RevisionJob>(REVISION_BUILD_QUEUE, { batchSize: 1, localConcurrency: 2, pollingIntervalSeconds: 0.5 }, async ([job]) => {
    await buildRevision(deps, boss, runtimes, job!.data.revisionId, () => boss.notifyWorker(deployWorker));
  });
  void wakeOnQueuedBuilds(deps, boss, buildWorker, runtimes.signal);
  void runtimes.superviseActive();
  // Made once, off any deploy's path (the first deploy waits for them otherwise): the template every
  // deployment's database is copied from, and the compile caches its runtime starts with.
  void deploymentTemplate(deps);
  runtimes.warmCaches();
  return runtimes;
}

/** Polls the build queue as soon as any process queued a build. */
async function wakeOnQueuedBuilds(deps: Deps, boss: PgBoss, buildWorker: string, signal: AbortSignal): Promise<void> {
  try {
    for await (const _ of deps.events.subscribe('revisions.queued', { signal })) boss.notifyWorker(buildWorker);
  } catch (error) {
    if (!signal.aborted) deps.logger.error({ err: error }, 'stopped listening for queued builds');
  }
}
