// The deployment an agent-server request acts in. The same services and router serve one graph config
// at the root of `agent-platform serve` and each deployment under /deployments/:id on the platform.
import { resolve } from 'node:path';
import { v5 } from 'uuid';
import type { ServiceContext } from '../context.js';
import type { GraphRegistry } from './graph-registry.js';
import type { RuntimePersistence } from './persistence.js';
import type { RunQueue } from './run-queue.js';

/**
 * How requests to this deployment authenticate: `none` for local `serve` (like `langgraph dev`), or an
 * API key of the deployment's organization on the platform.
 */
export type AgentServerAuth = { kind: 'none' } | { kind: 'organization-key'; organizationId: string };

export type DeploymentScope = {
  deploymentId: string;
  /** The graphs this deployment serves, loaded in this process. */
  graphs: GraphRegistry;
  persistence: RuntimePersistence;
  /** Where new runs are enqueued for the deployment's runtime. */
  queue: RunQueue;
  auth: AgentServerAuth;
  /** `serve --dev`: enables test-harness endpoints such as POST /internal/truncate. */
  dev: boolean;
};

/** A service call on the agent server: the platform context plus the deployment it acts in. */
export type AgentServerContext = ServiceContext & { deployment: DeploymentScope };

// Fixed namespace for serve-mode deployment ids (uuid5 of the config's absolute path).
const SERVE_NAMESPACE = 'f1b8a7c2-3d4e-5f60-8a9b-0c1d2e3f4a5b';

/** The stable deployment id `serve` uses for a config file: the same path gives the same rows back. */
export const serveDeploymentId = (configPath: string): string => v5(resolve(configPath), SERVE_NAMESPACE);
