// `build_on_push: true`: every minute, the ref of each such deployment is looked up in its repository
// (`git ls-remote`); when its commit differs from the one the latest revision built, a new revision is
// made. Deployments whose latest revision is still in the pipeline wait for the next sweep.
import type { Deps } from '../../context.js';
import { deploymentGitCredentials } from '../services/deployments/deployments.service.js';
import { createRevision } from '../services/deployments/revisions.service.js';
import { findControlDeployment, listBuildOnPush, whileWatchingRefs } from '../services/deployments/revisions.store.js';
import { sandboxFor } from '../launcher/sandbox.js';
import { remoteRefCommit } from '../launcher/source-checkout.js';
import { SYSTEM_VIEWER } from '../../viewer.js';

/** Returns the ids of the deployments that got a new revision. One pass at a time, whichever process asks (whileWatchingRefs). */
export function watchPushedRefs(deps: Deps): Promise<string[]> {
  return whileWatchingRefs(deps.db, () => watchPass(deps));
}

async function watchPass(deps: Deps): Promise<string[]> {
  const rebuilt: string[] = [];
  for (const watched of await listBuildOnPush(deps.db)) {
    try {
      const deployment = await findControlDeployment(deps.db, watched.id);
      if (!deployment) continue;
      // As the deployment's own OS user, like its clone: a local path reaches only what that user may
      // read. Its home for git is the deployment's folder that the platform owns (git's config is written there).
      const { uid, root } = sandboxFor(deps, deployment).files;
      const commit = await remoteRefCommit(watched.repo_url, watched.repo_ref, await deploymentGitCredentials(deps, deployment), { uid, home: root });
      if (!commit || commit === watched.commit_sha) continue;
      await createRevision({ ...deps, viewer: SYSTEM_VIEWER }, deployment, deployment.source_revision_config);
      deps.logger.info({ deploymentId: watched.id, commit }, 'the watched ref moved: new revision');
      rebuilt.push(watched.id);
    } catch (error) {
      deps.logger.warn({ err: error, deploymentId: watched.id }, 'could not check the ref of a build_on_push deployment');
    }
  }
  return rebuilt;
}
