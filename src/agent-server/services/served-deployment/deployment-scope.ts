// The deployment an agent-server request acts in, as the API process holds it: its id and tenant, the
// graph names it serves, who may use it and where its runs are enqueued. It never holds the graphs:
// reads that need them are asked of the deployment's runtime (runtime-client.ts).
import { resolve } from 'node:path';
import { v5 } from 'uuid';
import type { ServiceContext } from '../../../context.js';
import type { RunQueue } from '../runs/run-queue.js';

export type DeploymentScope = {
  deploymentId: string;
  /** The workspace it belongs to, and that workspace's organization (whose keys may use it). */
  tenantId: string;
  organizationId: string;
  /** The graphs it serves, by name (from the deployments table). */
  graphIds: readonly string[];
  /** Where new runs are enqueued for the deployment's runtime. */
  queue: RunQueue;
  /** `serve --dev`: enables test-harness endpoints such as POST /internal/truncate. */
  dev: boolean;
};

/** A service call on the agent server: the platform context plus the deployment it acts in. */
export type AgentServerContext = ServiceContext & { deployment: DeploymentScope };

// Fixed namespace for serve-mode deployment ids (uuid5 of the config's absolute path).
const SERVE_NAMESPACE = 'f1b8a7c2-3d4e-5f60-8a9b-0c1d2e3f4a5b';

/** The stable deployment id `serve` uses for a config file: the same path gives the same rows back. */
export const serveDeploymentId = (configPath: string): string => v5(resolve(configPath), SERVE_NAMESPACE);
