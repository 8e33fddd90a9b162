// The deployment an agent-server request acts in, as the API process holds it: its id and tenant, the
// graph names it serves, who may use it and where its runs are enqueued. It never holds the graphs:
// reads that need them are asked of the deployment's runtime (runtime-client.ts).
import type { ServiceContext } from '../../../context.js';
import type { RunQueue } from '../runs/run-queue.js';

export type DeploymentScope = {
  deploymentId: string;
  /** The workspace it belongs to, and that workspace's organization (whose keys may use it). */
  tenantId: string;
  organizationId: string;
  /** The graphs it serves, by name (from served_deployments). */
  graphIds: readonly string[];
  /** Where new runs are enqueued for the deployment's runtime. */
  queue: RunQueue;
  /** `serve --dev`: enables test-harness endpoints such as POST /internal/truncate. */
  dev: boolean;
};

/**
 * A service call on the agent server: the platform context plus the deployment it acts in, and the
 * caller's request headers that runs it creates pass to their graph in `config.configurable`.
 */
export type AgentServerContext = ServiceContext & { deployment: DeploymentScope; configurableHeaders?: Record<string, string> };
