// Start-up and shutdown of one platform process: its dependencies (wiring.ts), the job queue,
// first-start bootstrap and, for the roles this process runs, the HTTP server. Where the platform's
// tree and the agent server's meet: the agent server's jobs, routes and calls of the local
// deployments a platform process hosts (an operator's graph config, `admin deployments create`) are
// composed with the platform's here, and nowhere in either tree.
import type { Logger } from 'pino';
import { type AppOptions, buildApp } from './platform/app.js';
import type { Config } from './config.js';
import { createDeps } from './wiring.js';
import type { RunningRuntime } from './agent-server/runtime/role.js';
import type { PgBoss } from 'pg-boss';
import type { Deps } from './context.js';
import { platformTraceSink } from './platform/ingest/trace-batcher.js';
import { bootstrapInstallation } from './platform/services/tenancy/tenancy.service.js';
import { callLocally, streamRunLocally } from './agent-server/services/served-deployment/platform-calls.js';
import { runDeploymentId } from './agent-server/services/runs/run-reads.service.js';
import { deploymentExists, servedByOwnAgentServer } from './platform/services/deployments/deployments.service.js';
import { authenticateApiKey } from './platform/services/tenancy/authentication.service.js';
import { agentServerRouter } from './agent-server/rest/router.js';
import { threadStreamUpgrade } from './agent-server/rest/thread-stream.socket.js';
import { startBoss } from './agent-server/jobs/boss.js';
import { startIngestThreads } from './platform/ingest/ingest-threads.js';
import { workPlatformJobs } from './platform/jobs/platform-jobs.js';

export type RunningPlatform = {
  deps: Deps;
  /** Where the API role listens (undefined without the api role). */
  url: string | undefined;
  /** The first API key, on the installation's first start only. */
  firstApiKey: string | undefined;
  /** The deployment runtimes this process runs (runtime role). */
  runtimes: RunningRuntime[];
  stop(): Promise<void>;
};

export async function startPlatform(config: Config, logger: Logger): Promise<RunningPlatform> {
  const wiring = await createDeps(config, logger);
  const { deps } = wiring;
  startIngestThreads(wiring);
  try {
    const work = config.roles.includes('worker');
    const boss = await startPlatformBoss(deps, { work, maintain: work || config.roles.includes('runtime') });
    const localDeployments = hostLocalDeployments(deps);
    wiring.onStop(() => boss.stop({ graceful: true, timeout: 10_000 }));
    deps.boss = boss;
    // Registered after the queue's stop, so it runs before it: runtimes end while the database is up.
    wiring.onStop(async () => deps.deployedRuntimes?.stop());
    const bootstrap = await bootstrapInstallation(deps);
    // Loaded only here: the runtime's modules (LangGraph, the checkpointer) are not every command's business.
    const runtimes = config.roles.includes('runtime')
      ? await (await import('./agent-server/runtime/role.js')).startRuntimeRole(deps, boss, config.runtimeDeployments)
      : undefined;
    if (runtimes) wiring.onStop(() => runtimes.stop());
    let url: string | undefined;
    if (config.roles.includes('api')) {
      const app = buildApp(deps, { localDeployments });
      // Stopped first: no new requests while jobs and the bus wind down.
      wiring.onStop(() => app.stop());
      url = await app.start(config.port, config.host);
    }
    logger.info({ url, roles: config.roles }, 'agent platform started');
    return { deps, url: config.publicUrl ?? url, firstApiKey: bootstrap?.key, runtimes: runtimes?.runtimes ?? [], stop: wiring.stop };
  } catch (error) {
    await wiring.stop();
    throw error;
  }
}

/**
 * A platform process's job queue: the agent server's queues and jobs (for the local deployments it
 * hosts: their runs, crons and sweeps) and the platform's own. `work`: the worker role works them.
 */
export async function startPlatformBoss(deps: Deps, options: Parameters<typeof startBoss>[1]): Promise<PgBoss> {
  const boss = await startBoss(deps, options);
  await workPlatformJobs(deps, boss, options);
  return boss;
}

/**
 * Makes this platform process the host of local deployments (an operator's graph config, or `serve`'s):
 * the platform's GraphQL calls on their resources are answered here, their runtimes trace straight
 * into the platform's tables, and the returned routes (buildApp's `localDeployments`) answer their
 * agent servers at /deployments/<id>, for keys of the deployment's organization with a role in its
 * workspace, as at the gateway. Deployments with an agent server of their own are the gateway's,
 * their WebSockets included.
 */
export function hostLocalDeployments(deps: Deps): NonNullable<AppOptions['localDeployments']> {
  deps.localAgentCalls = { call: callLocally, streamRun: streamRunLocally, deploymentOfRun: runDeploymentId };
  deps.directTraceSink = () => platformTraceSink(deps);
  const target = {
    fromPath: 'deploymentId',
    platformKeys: (apiKey: string | undefined) => authenticateApiKey(deps, apiKey, undefined),
    // Even the public pages (the reference) answer only at the url of a deployment that exists.
    exists: (deploymentId: string) => deploymentExists(deps, deploymentId),
  } as const;
  return {
    router: agentServerRouter(deps, target),
    threadStream: (forward) => threadStreamUpgrade(deps, target, { forward, servedElsewhere: (deploymentId) => servedByOwnAgentServer(deps, deploymentId) }),
  };
}
