// The runtime role's entry point: runs the runtimes of the deployments assigned to this process
// (`start --role runtime --deployment <id>`, or `serve`'s one), each through the launcher.
import type { PgBoss } from 'pg-boss';
import type { Deps } from '../../context.js';
import { localDeploymentConfig } from '../services/served-deployment/served-deployment.js';
import type { LaunchedRuntime, RuntimeLauncher, RuntimeTracing } from '../../contracts/launcher-protocol.js';
import { inProcessLauncher, threadLauncher } from './launcher.js';

export type RunningRuntime = LaunchedRuntime & { deploymentId: string; tracing: RuntimeTracing | undefined };
export type RunningRuntimes = { runtimes: RunningRuntime[]; stop(): Promise<void> };

/** Starts the runtime of each deployment; resolves once all of them work their queues. */
export async function startRuntimeRole(
  deps: Deps,
  boss: PgBoss,
  deploymentIds: readonly string[],
  launcher: RuntimeLauncher = deps.config.runtimeThread ? threadLauncher(deps, boss) : inProcessLauncher(deps, boss),
): Promise<RunningRuntimes> {
  const runtimes: RunningRuntimes['runtimes'] = [];
  const stop = async () => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop().catch((error: unknown) => deps.logger.error({ err: error }, 'a runtime did not stop cleanly'))));
  };
  try {
    for (const deploymentId of deploymentIds) {
      const deployment = await localDeploymentConfig(deps, deploymentId);
      const { enabled, project } = deps.config.agentServerTracing;
      const sent = deps.config.deploymentTraces;
      // Runs are traced into the deployment's workspace, in a project named after it unless configured;
      // a deployed revision's are sent to the platform with its trace key, into that key's project.
      const tracing: RuntimeTracing | undefined = sent
        ? { workspaceId: deployment.tenantId, project: sent.project, ingest: { url: sent.url, apiKey: sent.apiKey } }
        : enabled
          ? { workspaceId: deployment.tenantId, project: project ?? deployment.name }
          : undefined;
      const launched = await launcher.launch({ deploymentId, configPath: deployment.configPath, tracing });
      runtimes.push({ ...launched, deploymentId, tracing });
      deps.logger.info({ deploymentId, url: launched.url, where: launched.where }, 'deployment runtime started');
    }
    return { runtimes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
