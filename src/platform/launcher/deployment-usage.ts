// What a deployment uses of what it may, measured by the worker that runs it: processes and memory
// (its cgroups), its own files (its HOME and caches: the folders it writes at will) and its database
// (size on disk, open sessions). Recorded on the deployment (`usage`, which the platform's /metrics
// reads). Processes, memory, connections and temporary files are bounded where they are made
// (cgroups, its login's limits); files and the database grow without a bound of their own, so they
// are watched here: a deployment over either is stopped (OVER_LIMIT) until it fits again.
import { spawn } from 'node:child_process';
import type { Deps } from '../../context.js';
import { deploymentDatabaseName } from '../services/deployments/deployment-database.js';
import type { DeploymentUsage } from '../services/deployments/deployments.store.js';
import type { DeploymentFiles } from './sandbox.js';
import { cgroupUsage, limitsOf } from './sandbox-cgroups.js';

/** A deployment's disk limits: `resource_spec.disk_mb` and `database_mb` over the installation's defaults. */
function diskLimits(config: Deps['config'], resourceSpec: unknown): { filesBytes: number; databaseBytes: number } {
  const spec = (resourceSpec && typeof resourceSpec === 'object' ? resourceSpec : {}) as { disk_mb?: unknown; database_mb?: unknown };
  const megabytes = (value: unknown, fallback: number) => (Number.isFinite(Number(value)) && Number(value) >= 1 ? Math.floor(Number(value) * 1024 * 1024) : fallback);
  return { filesBytes: megabytes(spec.disk_mb, config.deploymentFilesLimitBytes), databaseBytes: megabytes(spec.database_mb, config.deploymentDatabaseLimitBytes) };
}

/**
 * Bytes its folders hold on disk, counted by `du` as the deployment's own OS user: what it placed
 * there (links, folders it may not list) reaches no further than it could itself.
 */
function filesBytes(files: DeploymentFiles): Promise<number | undefined> {
  return new Promise((resolve) => {
    const du = spawn('du', ['-s', '-B1', '-c', files.home, files.cache], { uid: files.uid, gid: files.uid, stdio: ['ignore', 'pipe', 'ignore'], timeout: 60_000 });
    let output = '';
    du.stdout!.on('data', (chunk: Buffer) => (output += String(chunk)));
    du.once('error', () => resolve(undefined));
    // The total's line; `du` exits 1 when some folder could not be read, and counts the rest.
    du.once('close', () => {
      const total = /^(\d+)\s+total$/m.exec(output);
      resolve(total ? Number(total[1]) : undefined);
    });
  });
}

export type MeasuredDeployment = { id: string; resourceSpec: unknown; files: DeploymentFiles };

/** Measures each deployment (at once for the databases); the figures it could not read are left out. */
export async function measureDeployments(deps: Deps, deployments: MeasuredDeployment[]): Promise<Map<string, DeploymentUsage>> {
  if (deployments.length === 0) return new Map();
  const databases = await deps.adminLogin.databaseUsage(deployments.map((deployment) => deploymentDatabaseName(deployment.id))).catch((error: unknown) => {
    deps.logger.warn({ err: error }, "could not measure deployments' databases");
    return new Map<string, { bytes: number; connections: number }>();
  });
  const measuredAt = new Date().toISOString();
  const usage = await Promise.all(
    deployments.map(async (deployment): Promise<[string, DeploymentUsage]> => {
      const cgroups = limitsOf(deps.config.sandbox, deployment.resourceSpec);
      const disk = diskLimits(deps.config, deployment.resourceSpec);
      const database = databases.get(deploymentDatabaseName(deployment.id));
      const { pids, memoryBytes } = cgroupUsage(deployment.id);
      return [
        deployment.id,
        {
          measuredAt,
          pids,
          pidsLimit: cgroups.pids,
          memoryBytes,
          memoryLimitBytes: cgroups.memoryBytes,
          filesBytes: await filesBytes(deployment.files),
          filesLimitBytes: disk.filesBytes,
          databaseBytes: database?.bytes,
          databaseLimitBytes: disk.databaseBytes,
          databaseConnections: database?.connections,
          databaseConnectionsLimit: deps.config.deploymentDatabaseConnections,
        },
      ];
    }),
  );
  return new Map(usage);
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Why a deployment may not run as it is (its files or database over their limits), or undefined. */
export function overLimits(usage: DeploymentUsage): string | undefined {
  const over: string[] = [];
  if (usage.filesBytes !== undefined && usage.filesBytes > usage.filesLimitBytes) {
    over.push(`its files hold ${megabytes(usage.filesBytes)}, over their limit of ${megabytes(usage.filesLimitBytes)} (resource_spec.disk_mb)`);
  }
  if (usage.databaseBytes !== undefined && usage.databaseBytes > usage.databaseLimitBytes) {
    over.push(`its database holds ${megabytes(usage.databaseBytes)}, over its limit of ${megabytes(usage.databaseLimitBytes)} (resource_spec.database_mb)`);
  }
  return over.length ? over.join('; ') : undefined;
}
