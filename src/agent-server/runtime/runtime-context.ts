// What the runtime of one deployment holds: the deployment's graphs, LangGraph's checkpointer and
// store, and the queue it works. Only a runtime (its thread or process) ever has these; the API side
// of a deployment is agent-server/services/served-deployment/deployment-scope.ts.
import type { Deps } from '../../context.js';
import type { RunQueue } from '../services/runs/run-queue.js';
import type { TraceSink } from '../../contracts/trace-wire.js';
import type { GraphRegistry } from './graph-registry.js';
import type { RuntimePersistence } from './persistence.js';

type RuntimeDeployment = {
  deploymentId: string;
  /** The graphs this deployment serves, loaded in this runtime. */
  graphs: GraphRegistry;
  persistence: RuntimePersistence;
  queue: RunQueue;
  /** Where its runs' traces go (queued off the run's path), when tracing is on. */
  traces?: TraceSink;
  /** Delivers a request to the project's `http.app` (webhooks given as a path), once loaded. */
  loopback?: AppLoopback;
};

/** Sends a request to the project's `http.app` where the agent server serves it. */
export type AppLoopback = (path: string, init: RequestInit) => Promise<Response>;

/** A runtime's calls: the process's dependencies plus the deployment it runs. */
export type RuntimeContext = Deps & { deployment: RuntimeDeployment };
