// The runtimes of control-plane deployments that this process launched (the worker role): one per
// revision being deployed or active. Stops them when a deployment is deleted or a newer revision took
// over (the `deployments.stop-runtimes` event, whichever process published it), and on start-up brings
// back the active revision of every deployment.
import { existsSync } from 'node:fs';
import type { Deps } from '../services/context.js';
import { revisionGraphConfigPath } from '../services/deployments/source-checkout.js';
import { findRevision, listActiveRevisions } from '../services/deployments/revisions.store.js';
import { childProcessLauncher } from './child-launcher.js';
import type { LaunchedRuntime, RuntimeLauncher } from './launcher.js';

type Entry = { deploymentId: string; revisionId: string; runtime: LaunchedRuntime };

export class DeployedRuntimes {
  private readonly entries = new Map<string, Entry>();
  private readonly abort = new AbortController();

  constructor(
    private readonly deps: Deps,
    private readonly launcher: RuntimeLauncher = childProcessLauncher(deps),
  ) {
    void this.listen();
  }

  /** Starts the runtime of a built revision; resolves once its graphs are loaded and it answers. */
  async start(deploymentId: string, revisionId: string, configPath: string): Promise<LaunchedRuntime> {
    const existing = this.entries.get(revisionId);
    if (existing) return existing.runtime;
    const runtime = await this.launcher.launch({ deploymentId, revisionId, configPath, tracing: undefined });
    this.entries.set(revisionId, { deploymentId, revisionId, runtime });
    return runtime;
  }

  /** The runtime this process runs for a revision, if any. */
  runtimeOf(revisionId: string): LaunchedRuntime | undefined {
    return this.entries.get(revisionId)?.runtime;
  }

  /** Stops the deployment's runtimes here, except the one of `keepRevisionId`. */
  async stopDeployment(deploymentId: string, keepRevisionId?: string): Promise<void> {
    const stopping = [...this.entries.values()].filter((entry) => entry.deploymentId === deploymentId && entry.revisionId !== keepRevisionId);
    await Promise.all(stopping.map((entry) => this.stopEntry(entry)));
  }

  async stopRevision(revisionId: string): Promise<void> {
    const entry = this.entries.get(revisionId);
    if (entry) await this.stopEntry(entry);
  }

  /** Brings back the active revision of every deployment whose build is on this machine. */
  async restoreActive(): Promise<void> {
    for (const { deployment_id: deploymentId, revision_id: revisionId } of await listActiveRevisions(this.deps.db)) {
      const revision = await findRevision(this.deps.db, revisionId);
      const configPath = revision ? revisionGraphConfigPath(this.deps.config.dataDir, revision) : undefined;
      if (!configPath || !existsSync(configPath)) {
        this.deps.logger.warn({ deploymentId, revisionId }, 'the active revision has no build on this machine; redeploy it');
        continue;
      }
      try {
        await this.start(deploymentId, revisionId, configPath);
        this.deps.logger.info({ deploymentId, revisionId }, 'deployment runtime restored');
      } catch (error) {
        this.deps.logger.error({ err: error, deploymentId, revisionId }, 'could not restore a deployment runtime');
      }
    }
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all([...this.entries.values()].map((entry) => this.stopEntry(entry)));
  }

  private async stopEntry(entry: Entry): Promise<void> {
    this.entries.delete(entry.revisionId);
    await entry.runtime.stop().catch((error: unknown) => this.deps.logger.error({ err: error }, 'a deployment runtime did not stop cleanly'));
  }

  private async listen(): Promise<void> {
    try {
      for await (const event of this.deps.events.subscribe('deployments.stop-runtimes', { signal: this.abort.signal })) {
        await this.stopDeployment(event.deploymentId, event.keepRevisionId);
      }
    } catch (error) {
      if (!this.abort.signal.aborted) this.deps.logger.error({ err: error }, 'stopped listening for runtime stops');
    }
  }
}
