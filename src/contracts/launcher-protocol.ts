// How a deployment's agent server (or only its runtime) is started, and what a launcher and the child
// it starts say to each other. One small interface, so a new launcher (a container, a Kubernetes
// Deployment) changes neither the platform nor the agent server: the platform's launcher runs a
// deployment's agent server in a sandboxed child (platform/launcher/child-launcher.ts); the agent server's own
// run its runtime in a worker thread or its own thread (agent-server/runtime/launcher.ts). Ground: both trees
// implement it.

/**
 * Where a runtime's runs are traced, unless tracing is off: a project of a workspace, sent to the
 * platform's public ingest API with `ingest`'s key (a deployed revision's agent server, which cannot
 * reach the trace tables; the key names the project), or written straight into the trace tables of
 * the platform's database at `store` (a local deployment's, which its platform process runs).
 */
export type RuntimeTracing = { workspaceId: string; project: string; ingest?: { url: string; apiKey: string }; store?: { databaseUrl: string } };

/** What a launcher is asked to run: a deployment's graph config, and the control-plane revision it is of (recorded with it). */
export type LaunchSpec = { deploymentId: string; configPath: string; tracing: RuntimeTracing | undefined; revisionId?: string };

export type LaunchedRuntime = {
  /** Where it answers graph requests. */
  url: string;
  graphIds: string[];
  /** Where its graphs execute, for people reading the logs. */
  where: 'worker thread' | 'server thread' | 'child process';
  /** Its OS process, when it has one of its own (child process launcher). */
  pid?(): number | undefined;
  stop(options?: RuntimeStopOptions): Promise<void>;
};

/**
 * How a runtime stops. Given `handOver`, another runtime takes its deployment over (a rolling
 * replacement): its runs still going after the drain go back to the queue for that one to execute
 * again, `released` is called once it has let go of the run queue (the other may start), and an agent
 * server goes on answering the requests it holds (a `runs.wait`, a join, a run's stream) until their
 * runs end, wherever they run, for up to HAND_OVER_FOLLOW_MS. Otherwise its runs still going end as errors.
 */
export type RuntimeStopOptions = { handOver?: { released(): Promise<void> } };

/**
 * How long an agent server handing over keeps answering the requests it holds after its runtime let
 * go: a runs.wait or join cut instead would be asked again, and a runs.wait asked again is a new run.
 */
export const HAND_OVER_FOLLOW_MS = 30_000;

/** A runtime whose graphs are loaded but that does not serve yet (see RuntimeLauncher.prepare). */
export type PreparedRuntime = {
  graphIds: string[];
  /** Starts serving: the same process, now connected to the database and working the run queue. */
  launch(): Promise<LaunchedRuntime>;
  /** Ends it unlaunched. */
  discard(): Promise<void>;
};

/**
 * Starts revisions' agent servers somewhere. What another launcher (a Kubernetes Deployment and Service
 * per revision) must keep of this one's contract: the README's "Another launcher".
 */
export interface RuntimeLauncher {
  launch(spec: LaunchSpec): Promise<LaunchedRuntime>;
  /**
   * Loads the graphs and stops there (rejects with the loader's error): a build's import check whose
   * process the deploy takes over, so a deploy starts one cold process, not two. Launchers that
   * cannot split the two leave it out.
   */
  prepare?(spec: LaunchSpec): Promise<PreparedRuntime>;
}

/** The advisory lock a live runtime holds while it runs: a row of a runtime whose lock is free is a dead one's. */
export const runtimeLockKey = (workerId: string) => `agent-platform:runtime:${workerId}`;

// ─── What a runtime child (agent-server/main.ts) and its launcher say over the child's IPC channel ───

/**
 * Launcher → child. `serve` comes with the listening socket the agent server serves on (made by the
 * launcher, in the host's network: the child's own network reaches nothing of the host's); `stop`
 * and `hand-over` stop it (RuntimeStopOptions: handing over, it reports `released` before it exits);
 * `platform-connection` with a socket connected to the platform's address (or why there is none),
 * answering the child's `connect-platform` of the same id.
 */
export type ChildCommand = 'serve' | 'stop' | 'hand-over' | { type: 'platform-connection'; id: number; error?: string };
/** Child → launcher. */
export type ChildReport =
  | { type: 'loaded'; graphIds: string[] }
  | { type: 'ready'; graphIds: string[]; runtimeId: string }
  /** Handing over (`hand-over`): its runtime has let go of the run queue; it still answers what it holds, then exits. */
  | { type: 'released' }
  | { type: 'failed'; message: string }
  | { type: 'connect-platform'; id: number };

/**
 * The host other processes reach a listener at: the bound address, or, when bound to every
 * interface, the host of the configured public URL (the machine's name as the api sees it), else loopback.
 */
export function advertisedHost(host: string, publicUrl: string | undefined): string {
  if (host !== '0.0.0.0' && host !== '::') return host.includes(':') ? `[${host}]` : host;
  return publicUrl ? new URL(publicUrl).hostname : '127.0.0.1';
}
