// The runtimes of control-plane deployments that this process launched (the worker role): one per
// revision being deployed or active. Stops them when a deployment is deleted or a newer revision took
// over (the `deployments.stop-runtimes` event, whichever process published it), and on start-up (and
// then every RESTORE_INTERVAL_MS) brings back the active revision of every deployment.
//
// With several workers, one runs each revision's runtime: a worker holds a session advisory lock per
// revision it runs (on a connection of its own), and starts or restores a runtime only once it took
// that lock. A worker that dies loses its connection and so its locks; another worker's next restore
// pass takes its revisions over. A worker that stops (SIGTERM: a rolling upgrade) hands them over
// instead: another worker loads each first, and serves it as soon as the stopping one has let go
// (`deployments.hand-over`), so the deployment is away for the time a loaded runtime takes to start,
// not for a cold start after the next restore pass.
import { existsSync } from 'node:fs';
import pg from 'pg';
import type { Deps } from '../../context.js';
import { isUuid } from '../../ids.js';
import { FINISHED_REVISION_STATUSES, MAX_REPLICAS } from '../services/deployments/deployments.schemas.js';
import { removeRevisionDirectory, revisionGraphConfigPath, revisionsOnDisk } from './source-checkout.js';
import { deletedDeploymentsAmong, findControlDeployment, findRevision, listActiveRevisions, retiredRevisionsAmong } from '../services/deployments/revisions.store.js';
import { deploymentsOnDisk, removeDeploymentFiles, sandboxFor } from './sandbox.js';
import { recordDeploymentUsage, setDeploymentStatus } from '../services/deployments/deployments.store.js';
import { logRevision } from '../services/deployments/revisions.service.js';
import { type MeasuredDeployment, measureDeployments, overLimits } from './deployment-usage.js';
import { childProcessLauncher } from './child-launcher.js';
import { warmAgentServerCaches } from './agent-server-caches.js';
import type { LaunchedRuntime, PreparedRuntime, RuntimeLauncher, RuntimeStopOptions } from '../../contracts/launcher-protocol.js';

/** A runtime running here: which of its deployment's replicas of which revision (`slot`, slotOf). */
type Entry = { deploymentId: string; revisionId: string; replica: number; slot: string; runtime: LaunchedRuntime };
type Prepared = { deploymentId: string; runtime: PreparedRuntime; timer: NodeJS.Timeout };

/** How long a build's loaded runtime waits for its deploy (in this process) before it is ended. */
const PREPARED_TTL_MS = 5 * 60_000;
/** How often a worker looks for active revisions whose runtime nobody runs (their worker died). */
const RESTORE_INTERVAL_MS = 15_000;
/** How long a stopping worker waits for another to say it takes a runtime over (none: it is the only worker). */
const HAND_OVER_ANSWER_MS = 1_000;
/** How long a stopping worker waits for the one taking a runtime over to have loaded it, before stopping it anyway. */
const HAND_OVER_WAIT_MS = 15_000;

/**
 * A runtime's slot: its revision, and which of the deployment's replicas it is. Each slot has its own
 * lock; replica 0's is the revision's own (as before replicas), so one worker's lock per replica.
 */
const slotOf = (revisionId: string, replica: number) => (replica === 0 ? revisionId : `${revisionId}#${replica}`);

/** How many agent servers a deployment runs: `resource_spec.replicas` (or `min_scale`, the hosted platform's name), 1 by default. */
export function replicasOf(resourceSpec: unknown): number {
  const spec = (resourceSpec && typeof resourceSpec === 'object' ? resourceSpec : {}) as { replicas?: unknown; min_scale?: unknown };
  const asked = spec.replicas ?? spec.min_scale;
  return typeof asked === 'number' && Number.isInteger(asked) && asked >= 1 ? Math.min(asked, MAX_REPLICAS) : 1;
}

export class DeployedRuntimes {
  private readonly entries = new Map<string, Entry>();
  /** Runtimes a build loaded (its import check), by revision, kept for that revision's deploy. */
  private readonly prepared = new Map<string, Prepared>();
  private readonly abort = new AbortController();
  /** The session whose advisory locks say which revisions' runtimes this instance runs. */
  private lockSession: Promise<pg.Client> | undefined;
  private readonly claimed = new Set<string>();
  /** Starts in progress, by revision. */
  private readonly starting = new Map<string, Promise<LaunchedRuntime>>();
  private restoring: Promise<void> | undefined;
  private restoreTimer: NodeJS.Timeout | undefined;
  private warming: Promise<unknown> | undefined;
  private removing: Promise<void> | undefined;
  private removeAgain: Promise<void> | undefined;
  private usageTimer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly deps: Deps,
    private readonly launcher: RuntimeLauncher & Required<Pick<RuntimeLauncher, 'prepare'>> = childProcessLauncher(deps),
  ) {
    void this.listen();
    void this.listenForHandOvers();
  }

  /**
   * The build's import check: loads the revision's graphs in the process that will run them and
   * returns their ids (rejects with the loader's error). The process waits for the revision's deploy;
   * when that runs elsewhere, or not at all, it is ended after a while.
   */
  async prepare(deploymentId: string, revisionId: string, configPath: string): Promise<string[]> {
    await this.discardPrepared(revisionId);
    const runtime = await this.launcher.prepare({ deploymentId, revisionId, configPath, tracing: undefined });
    const timer = setTimeout(() => void this.discardPrepared(revisionId), PREPARED_TTL_MS).unref();
    this.prepared.set(revisionId, { deploymentId, runtime, timer });
    return runtime.graphIds;
  }

  /**
   * Starts the runtime of a built revision (in the process its build loaded, when here); resolves once
   * it answers. One start per revision at a time: a restore pass and a hand-over asking at once share it.
   */
  start(deploymentId: string, revisionId: string, configPath: string, replica = 0): Promise<LaunchedRuntime> {
    const slot = slotOf(revisionId, replica);
    const existing = this.entries.get(slot);
    if (existing) return Promise.resolve(existing.runtime);
    let starting = this.starting.get(slot);
    if (!starting) {
      starting = this.startClaimed(deploymentId, revisionId, configPath, replica).finally(() => this.starting.delete(slot));
      this.starting.set(slot, starting);
    }
    return starting;
  }

  private async startClaimed(deploymentId: string, revisionId: string, configPath: string, replica: number): Promise<LaunchedRuntime> {
    const slot = slotOf(revisionId, replica);
    if (!(await this.claim(slot))) {
      if (replica === 0) await this.discardPrepared(revisionId);
      throw new Error(`another worker runs replica ${replica} of revision ${revisionId}`);
    }
    // A runtime loaded for the revision (its build's, or one handed over) serves whichever replica starts first.
    const prepared = this.prepared.get(revisionId);
    this.prepared.delete(revisionId);
    if (prepared) clearTimeout(prepared.timer);
    try {
      const runtime = prepared ? await prepared.runtime.launch() : await this.launcher.launch({ deploymentId, revisionId, configPath, tracing: undefined });
      this.entries.set(slot, { deploymentId, revisionId, replica, slot, runtime });
      return runtime;
    } catch (error) {
      await this.release(slot);
      throw error;
    }
  }

  /**
   * Starts the deployment's other replicas of a revision (`resource_spec.replicas` in all), those no
   * other worker runs; resolves with how many run here. A replica that fails to start is logged and
   * left to the next restore pass.
   */
  async startReplicas(deploymentId: string, revisionId: string, configPath: string, replicas: number): Promise<number> {
    let here = this.entries.has(revisionId) ? 1 : 0;
    for (let replica = 1; replica < replicas; replica++) {
      await this.start(deploymentId, revisionId, configPath, replica).then(
        () => here++,
        (error: unknown) => this.deps.logger.warn({ err: error, deploymentId, revisionId, replica }, 'a replica did not start here; the next restore pass tries again'),
      );
    }
    return here;
  }

  /** Ends the runtime a build loaded for a revision that will not deploy here. */
  async discardPrepared(revisionId: string): Promise<void> {
    const prepared = this.prepared.get(revisionId);
    if (!prepared) return;
    this.prepared.delete(revisionId);
    clearTimeout(prepared.timer);
    await prepared.runtime.discard().catch((error: unknown) => this.deps.logger.error({ err: error }, 'a loaded runtime did not stop cleanly'));
  }

  /** The runtime this process runs for a revision, if any. */
  runtimeOf(revisionId: string): LaunchedRuntime | undefined {
    return this.entries.get(revisionId)?.runtime;
  }

  /** Stops the deployment's runtimes here, except the one of `keepRevisionId` (and, then, those loaded for a deploy). */
  async stopDeployment(deploymentId: string, keepRevisionId?: string): Promise<void> {
    const stopping = [...this.entries.values()].filter((entry) => entry.deploymentId === deploymentId && entry.revisionId !== keepRevisionId);
    // A revision deploying (keepRevisionId) leaves newer builds waiting for their own deploy.
    const discarding = keepRevisionId ? [] : [...this.prepared].filter(([, prepared]) => prepared.deploymentId === deploymentId);
    await Promise.all([...stopping.map((entry) => this.stopEntry(entry)), ...discarding.map(([revisionId]) => this.discardPrepared(revisionId))]);
  }

  async stopRevision(revisionId: string): Promise<void> {
    await this.discardPrepared(revisionId);
    await Promise.all([...this.entries.values()].filter((entry) => entry.revisionId === revisionId).map((entry) => this.stopEntry(entry)));
  }

  /**
   * Brings back the active revision of every deployment whose build is on this machine and whose
   * runtime no other worker runs. One pass at a time.
   */
  restoreActive(): Promise<void> {
    // A pass that cannot read (the database is away) is the next one's to do: never a crash of the process.
    this.restoring ??= this.restorePass()
      .catch((error: unknown) => this.deps.logger.error({ err: error }, 'could not restore the runtimes of active revisions; tried again later'))
      .finally(() => (this.restoring = undefined));
    return this.restoring;
  }

  /**
   * Restores now and then every RESTORE_INTERVAL_MS, until stopped (the worker role); each time also
   * removes the files of retired revisions and deleted deployments from this machine.
   */
  superviseActive(intervalMs = RESTORE_INTERVAL_MS): Promise<void> {
    this.restoreTimer ??= setInterval(() => void this.restoreActive().then(() => this.removeRetired()), intervalMs).unref();
    this.usageTimer ??= setInterval(() => void this.checkUsage(), this.deps.config.usageCheckSeconds * 1000).unref();
    return this.restoreActive().then(() => this.removeRetired());
  }

  /**
   * Measures what each deployment running here uses of its limits (deployment-usage.ts), records it,
   * and stops those whose files or database outgrew theirs: OVER_LIMIT, said in the active revision's
   * deploy log, until a restore pass finds it fits again. One pass at a time.
   */
  checkUsage(): Promise<void> {
    this.checking ??= this.checkUsagePass()
      .catch((error: unknown) => this.deps.logger.error({ err: error }, "could not measure deployments' usage"))
      .finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkUsagePass(): Promise<void> {
    const running = new Map([...this.entries.values()].map((entry) => [entry.deploymentId, entry.revisionId]));
    const usage = await this.measure([...running.keys()]);
    for (const [deploymentId, figures] of usage) {
      await recordDeploymentUsage(this.deps.db, deploymentId, figures);
      const over = overLimits(figures);
      if (!over || this.abort.signal.aborted) continue;
      await this.stopDeployment(deploymentId);
      if (await setDeploymentStatus(this.deps.db, deploymentId, 'OVER_LIMIT')) {
        this.deps.logger.warn({ deploymentId, usage: figures }, 'a deployment outgrew its disk limits: its agent server is stopped');
        await logRevision(this.deps, running.get(deploymentId)!, 'deploy', `Stopped: ${over}. It starts again once it fits: raise its limit (PATCH source_config.resource_spec).`);
      }
    }
  }

  /** What the deployments use now (those deleted meanwhile are left out). */
  private async measure(deploymentIds: string[]) {
    const measured: MeasuredDeployment[] = [];
    for (const id of deploymentIds) {
      const row = await findControlDeployment(this.deps.db, id);
      if (row) measured.push({ id, resourceSpec: row.source_config.resource_spec, files: sandboxFor(this.deps, row).files });
    }
    return measureDeployments(this.deps, measured);
  }

  /**
   * Removes from this machine what no runtime starts from again: the checkouts and dependencies of
   * retired revisions (superseded, failed, or of a deleted deployment) and the folders and cgroups of
   * deleted deployments, none of them running here. Runs after each deletion and on every restore
   * pass, which finishes what a build still writing there, or a worker down meanwhile, left. What the
   * database does not know (another installation's, sharing the folder) stays. One pass at a time.
   */
  removeRetired(): Promise<void> {
    if (this.removing) {
      // A deletion made while a pass runs may have come after its reads: one more pass follows.
      this.removeAgain ??= this.removing.then(() => {
        this.removeAgain = undefined;
        return this.removeRetired();
      });
      return this.removeAgain;
    }
    this.removing = this.removeRetiredPass()
      .catch((error: unknown) => this.deps.logger.error({ err: error }, 'could not look for retired revisions and deleted deployments'))
      .finally(() => (this.removing = undefined));
    return this.removing;
  }

  private async removeRetiredPass(): Promise<void> {
    const { dataDir } = this.deps.config;
    const retired = await retiredRevisionsAmong(this.deps.db, revisionsOnDisk(dataDir).filter(isUuid), FINISHED_REVISION_STATUSES);
    const deleted = await deletedDeploymentsAmong(this.deps.db, deploymentsOnDisk(dataDir).filter(isUuid));
    // What a runtime here (or a build's loaded one) still starts from stays until a later pass.
    const running = [...this.entries.values(), ...this.prepared.values()];
    const runningHere = new Set([...this.entries.values()].map((entry) => entry.revisionId));
    const revisions = retired.filter((revisionId) => !runningHere.has(revisionId) && !this.prepared.has(revisionId));
    const deployments = deleted.filter((deploymentId) => !running.some((runtime) => runtime.deploymentId === deploymentId));
    const removals = [
      ...revisions.map((revisionId) => ({ what: { revisionId }, remove: () => removeRevisionDirectory(dataDir, revisionId) })),
      ...deployments.map((deploymentId) => ({ what: { deploymentId }, remove: () => removeDeploymentFiles(dataDir, deploymentId) })),
    ];
    for (const { what, remove } of removals) {
      if (this.abort.signal.aborted) return;
      try {
        if (await remove()) this.deps.logger.info(what, 'removed files no runtime starts from again from this machine');
      } catch (error) {
        this.deps.logger.warn({ err: error, ...what }, 'could not remove all of these files yet (something still writes there); tried again later');
      }
    }
  }

  private async restorePass(): Promise<void> {
    await this.reclaimRunning();
    for (const { deployment_id: deploymentId, revision_id: revisionId, status, resource_spec: resourceSpec } of await listActiveRevisions(this.deps.db)) {
      const missing = [...Array(replicasOf(resourceSpec)).keys()].filter((replica) => !this.entries.has(slotOf(revisionId, replica)));
      if (this.abort.signal.aborted) return;
      if (!missing.length) continue;
      if (status === 'OVER_LIMIT' && !(await this.fitsAgain(deploymentId, revisionId))) continue;
      const revision = await findRevision(this.deps.db, revisionId);
      const configPath = revision ? revisionGraphConfigPath(this.deps.config.dataDir, revision) : undefined;
      if (!configPath || !existsSync(configPath)) {
        this.deps.logger.warn({ deploymentId, revisionId }, 'the active revision has no build on this machine; redeploy it');
        continue;
      }
      for (const replica of missing) {
        const slot = slotOf(revisionId, replica);
        // Another worker runs it (its lock is held): nothing to do here.
        if (this.abort.signal.aborted || !(await this.claim(slot))) continue;
        try {
          await this.start(deploymentId, revisionId, configPath, replica);
          this.deps.logger.info({ deploymentId, revisionId, replica }, 'deployment runtime restored');
        } catch (error) {
          this.deps.logger.error({ err: error, deploymentId, revisionId, replica }, 'could not restore a deployment runtime');
        } finally {
          // start() took the lock once more for itself (session locks count): give back this pass's hold.
          await this.release(slot, { once: true });
        }
      }
    }
  }

  /**
   * Takes again the locks of the runtimes running here that lost theirs with the lock session's
   * connection (a database outage); a runtime whose lock another worker took meanwhile, having
   * started the revision there, is stopped here: one runtime per revision.
   */
  private async reclaimRunning(): Promise<void> {
    for (const entry of [...this.entries.values()]) {
      if (this.abort.signal.aborted || this.claimed.has(entry.slot)) continue;
      if (await this.claim(entry.slot)) continue;
      this.deps.logger.warn({ deploymentId: entry.deploymentId, revisionId: entry.revisionId }, 'another worker runs this revision now: its runtime here stops');
      await this.stopEntry(entry);
    }
  }

  /** Whether a deployment stopped OVER_LIMIT fits its limits now (they were raised, say): READY again, said in its log. */
  private async fitsAgain(deploymentId: string, revisionId: string): Promise<boolean> {
    const figures = (await this.measure([deploymentId])).get(deploymentId);
    if (!figures) return false;
    await recordDeploymentUsage(this.deps.db, deploymentId, figures);
    if (overLimits(figures)) return false;
    if (await setDeploymentStatus(this.deps.db, deploymentId, 'READY')) await logRevision(this.deps, revisionId, 'deploy', 'Within its limits again: starting');
    return true;
  }

  /** Warms the compile caches deployments' agent servers start with, off any deploy's path; `stop` ends a warm-up still running. */
  warmCaches(): void {
    this.warming ??= warmAgentServerCaches(this.deps, this.abort.signal);
  }

  /** Aborted when these runtimes stop: ends what listens on their behalf. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    clearInterval(this.restoreTimer);
    clearInterval(this.usageTimer);
    await Promise.all([this.restoring, this.warming, this.removeAgain ?? this.removing, this.checking]);
    await Promise.all([...this.entries.values()].map((entry) => this.handOver(entry)));
    await Promise.all([...this.prepared.keys()].map((revisionId) => this.discardPrepared(revisionId)));
    // Ending the session releases every lock it still holds.
    const session = this.lockSession;
    this.lockSession = undefined;
    await session?.then((client) => client.end()).catch(() => undefined);
  }

  /**
   * Stops a runtime this worker gives up while the deployment stays (this worker stops): offers it to
   * the other workers, waits (a while) until one has loaded it, stops it here, then says its lock is free.
   */
  private async handOver(entry: Entry): Promise<void> {
    const { revisionId, deploymentId, replica } = entry;
    const done = new AbortController();
    let taking = false;
    // A worker alone hears no answer within a second: it stops its runtime without waiting.
    let timer = setTimeout(() => done.abort(), HAND_OVER_ANSWER_MS);
    try {
      const answers = this.deps.events.subscribe('deployments.hand-over', { signal: done.signal });
      // 'taking' at once from a worker that has the build; 'ready' once it has loaded it.
      const ready = (async () => {
        for await (const event of answers) {
          if (event.revisionId !== revisionId) continue;
          if (event.phase === 'ready') return true;
          if (event.phase === 'taking' && !taking) {
            taking = true;
            clearTimeout(timer);
            timer = setTimeout(() => done.abort(), HAND_OVER_WAIT_MS);
          }
        }
        return false;
      })().catch(() => false);
      await this.deps.events.publish('deployments.hand-over', { revisionId, deploymentId, replica, phase: 'offered' });
      if (!(await ready) && taking) this.deps.logger.warn({ deploymentId, revisionId }, 'the worker taking this runtime over had not loaded it in time; it starts it cold');
    } catch (error) {
      this.deps.logger.warn({ err: error, deploymentId, revisionId }, 'could not hand this runtime over; the next restore pass of another worker brings it back');
    } finally {
      clearTimeout(timer);
      done.abort();
    }
    // Its lock is given back, and the one taking over told, as soon as the runtime has let go of the
    // run queue: the agent server stopping here still answers what it holds (runs.wait, joins) while
    // their runs go on, or start again, on the one taking over.
    let released: Promise<void> | undefined;
    const release = () =>
      (released ??= (async () => {
        await this.release(entry.slot);
        await this.deps.events.publish('deployments.hand-over', { revisionId, deploymentId, replica, phase: 'released' }).catch(() => undefined);
      })());
    await this.stopEntry(entry, { handOver: { released: release } });
    // A launcher that does not hand over (or a stop that failed) has let go once stopped.
    await release();
  }

  /** Takes over the runtimes other workers hand over (they stop): loads each, then serves it once its lock is free. */
  private async listenForHandOvers(): Promise<void> {
    try {
      for await (const event of this.deps.events.subscribe('deployments.hand-over', { signal: this.abort.signal })) {
        if (event.phase === 'offered') void this.loadHandedOver(event.deploymentId, event.revisionId);
        if (event.phase === 'released') void this.startHandedOver(event.deploymentId, event.revisionId, event.replica);
      }
    } catch (error) {
      if (!this.abort.signal.aborted) this.deps.logger.error({ err: error }, 'stopped listening for runtimes handed over');
    }
  }

  private async loadHandedOver(deploymentId: string, revisionId: string): Promise<void> {
    if ([...this.entries.values()].some((entry) => entry.revisionId === revisionId) || this.prepared.has(revisionId)) return;
    const revision = await findRevision(this.deps.db, revisionId).catch(() => undefined);
    const configPath = revision ? revisionGraphConfigPath(this.deps.config.dataDir, revision) : undefined;
    // Its build is not on this machine: another worker's to take.
    if (!configPath || !existsSync(configPath)) return;
    try {
      await this.deps.events.publish('deployments.hand-over', { revisionId, deploymentId, replica: 0, phase: 'taking' });
      await this.prepare(deploymentId, revisionId, configPath);
      await this.deps.events.publish('deployments.hand-over', { revisionId, deploymentId, replica: 0, phase: 'ready' });
    } catch (error) {
      this.deps.logger.warn({ err: error, deploymentId, revisionId }, 'could not load a runtime handed over; the next restore pass brings it back');
    }
  }

  private async startHandedOver(deploymentId: string, revisionId: string, replica: number): Promise<void> {
    if (this.entries.has(slotOf(revisionId, replica))) return;
    const revision = await findRevision(this.deps.db, revisionId).catch(() => undefined);
    const configPath = revision ? revisionGraphConfigPath(this.deps.config.dataDir, revision) : undefined;
    // Its build is not on this machine: another worker's to take.
    if (!configPath || !existsSync(configPath)) return this.discardPrepared(revisionId);
    // Several workers may start it: the one that takes the lock serves it (with what it loaded, if
    // anything), the others give up (start() ends what they loaded for replica 0).
    await this.start(deploymentId, revisionId, configPath, replica)
      .then(() => this.deps.logger.info({ deploymentId, revisionId, replica }, 'deployment runtime taken over from a stopping worker'))
      .catch(() => undefined);
  }

  private async stopEntry(entry: Entry, options?: RuntimeStopOptions): Promise<void> {
    this.entries.delete(entry.slot);
    await entry.runtime.stop(options).catch((error: unknown) => this.deps.logger.error({ err: error }, 'a deployment runtime did not stop cleanly'));
    await this.release(entry.slot);
  }

  private session(): Promise<pg.Client> {
    if (!this.lockSession) {
      const session = this.openLockSession(() => {
        if (this.lockSession === session) this.lockSession = undefined;
        this.claimed.clear();
      });
      this.lockSession = session;
      // A session that could not connect is not kept: the next claim tries a new one.
      session.catch(() => {
        if (this.lockSession === session) this.lockSession = undefined;
      });
    }
    return this.lockSession;
  }

  private async openLockSession(onLost: () => void): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.deps.db.url, application_name: 'agent-platform-runtime-locks', keepAlive: true });
    client.on('error', (error) => {
      // The locks went with the connection (a database outage): the next restore pass takes those of
      // the runtimes still running here again, or stops those another worker took over meanwhile.
      this.deps.logger.error({ err: error }, 'lost the connection holding the runtime locks');
      onLost();
    });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  /** Takes a runtime slot's lock (slotOf; again, if held: session locks count); whether it is ours. */
  private async claim(revisionId: string): Promise<boolean> {
    const client = await this.session();
    const { rows } = await client.query<{ claimed: boolean }>(
      "SELECT pg_try_advisory_lock(hashtext('agent-platform:revision-runtime'), hashtext($1)) AS claimed",
      [revisionId],
    );
    if (rows[0]!.claimed) this.claimed.add(revisionId);
    return rows[0]!.claimed;
  }

  /** Gives back the revision's runtime lock: every hold of it, or one (`once`). */
  private async release(revisionId: string, options: { once?: boolean } = {}): Promise<void> {
    if (!this.claimed.has(revisionId) || !this.lockSession) return;
    const client = await this.lockSession;
    for (;;) {
      const { rows } = await client
        .query<{ released: boolean }>("SELECT pg_advisory_unlock(hashtext('agent-platform:revision-runtime'), hashtext($1)) AS released", [revisionId])
        .catch(() => ({ rows: [{ released: false }] }));
      if (!rows[0]!.released || options.once) break;
    }
    if (!options.once) this.claimed.delete(revisionId);
  }

  private async listen(): Promise<void> {
    try {
      for await (const event of this.deps.events.subscribe('deployments.stop-runtimes', { signal: this.abort.signal })) {
        await this.stopDeployment(event.deploymentId, event.keepRevisionId);
        // What the stopped runtimes started from (a superseded revision's, a deleted deployment's) goes too.
        void this.removeRetired();
      }
    } catch (error) {
      if (!this.abort.signal.aborted) this.deps.logger.error({ err: error }, 'stopped listening for runtime stops');
    }
  }
}
