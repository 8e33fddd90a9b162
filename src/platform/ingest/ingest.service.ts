// Trace ingestion: the one write path for runs. REST (the langsmith SDK's wire formats) and the agent
// server's in-process tracer both end here.
//
// Contract of `ingestRunBatch(deps, who, batch)`:
// - `who` = { workspaceId, apiKeyId?, userId? }. The caller has already checked workspaces:write in
//   that workspace; the ids are stored on every run (usage groups by them).
// - `batch.post`: run creates, snake_case exactly as the langsmith SDK sends them (`RunCreate`):
//   id, name, run_type, start_time, end_time, inputs, outputs, extra (metadata in extra.metadata),
//   error, events, serialized, tags, parent_run_id, trace_id, dotted_order, session_id or
//   session_name, reference_example_id. A missing id is minted; missing trace_id and dotted_order are
//   derived (from the parent, in the batch or already stored). Unknown session names create projects;
//   neither session_id nor session_name means the project "default".
// - `who.project` (a deployment's trace key): the one project it writes. Its runs that name no project
//   go there; one naming another is FORBIDDEN before anything is looked up, created or written; its
//   patches, parents and adoptions reach only runs of that project (a patch kept for a run not stored
//   yet applies only if that run is stored in that project).
// - `batch.patch`: run updates (`RunUpdate`: id plus any of end_time, outputs, error, events, extra,
//   tags, inputs). A patch for a run that is not stored yet is kept and merged when its post arrives,
//   so posts and patches may come in any order.
// - `batch.attachments`: files keyed by run id and name (they may precede the run).
// - Everything valid is stored; posts whose id is already stored (or repeated in the batch) are left
//   unchanged and returned in `duplicates` (REST answers 409). A malformed run rejects the whole batch
//   with VALIDATION_FAILED (`loc` like ["post", 3, "start_time"]) before anything is written; an
//   unknown session_id or parent run is NOT_FOUND.
// - `batch.parentsMayFollow` (OTLP, whose exporters send spans as they end, children first): a run
//   whose parent is neither in the batch nor stored is stored anyway, in a provisional trace rooted at
//   the parent's id (trace_id = that id, dotted order starting with it), its parent recorded first as
//   awaited (trace_run_awaited_parents). When the parent arrives, it finds itself awaited and adopts
//   its provisional descendants: their trace id, dotted order and ancestors are rewritten under the
//   parent's (adoptOrphans). Either side checks after its own commit, so whichever of the two commits
//   last sees the other; a run nobody awaits costs one probe of the awaited table, not a search of
//   trace_runs.
// - Token and cost roll-ups: a run's usage columns hold its own usage (an LLM run's) plus its stored
//   descendants'. Storing a run with usage, a patch changing it, and an adoption (its runs gain
//   ancestors) add the change to the ancestors in parent_run_ids in the same transaction; what an
//   ancestor not stored yet is owed waits with the early patches and is swept with them
//   (usage-rollups.store.ts). A duplicate post adds nothing; a patch adds its difference only.
// - Posts alone (the SDK's usual batch) are one statement: an INSERT (ids claimed in trace_run_ids in the same statement, duplicates left out) from per-column
//   arrays that also appends usage's trace deltas (the seam, ingest-hooks.ts), shared with the
//   concurrent requests of the same ingester (run-writer.ts: group commit; each request is answered
//   after the statement holding its runs commits). With patches or
//   attachments, one transaction: that INSERT, one UPDATE … FROM (VALUES) for patches, the deferred
//   patches and the attachments. Then a sweep applies patches that raced ahead of their posts in a
//   concurrent request (one indexed probe when, as almost always, none wait).
import type pg from 'pg';
import { inTransaction, retryingDeadlocks } from '../../db.js';
import { AppError } from '../../errors.js';
import type { Deps } from '../../context.js';
import { dottedOrderSegment, jsonValue } from './derive.js';
import { DEFAULT_PROJECT_NAME, resolveProjectIds } from '../services/traces/projects.service.js';
import type { Ingester, IngestResult, NormalizedPatch, NormalizedRun, RunAttachment, RunBatch } from './ingest-types.js';
import { normalizePatch, normalizeRunCreate } from './ingest.schemas.js';
import { createRunWriter, type RunWriter } from './run-writer.js';
import {
  adoptOrphans,
  type Adopter,
  applyPatches,
  awaitedParents,
  awaitParents,
  deferPatches,
  findParentRuns,
  hasPendingPatches,
  insertAttachments,
  insertRuns,
  RUNS_PER_INSERT,
  takePendingPatchesOfStoredRuns,
} from './ingest.store.js';
import { addWaitingUsage, foldUsageIntoAncestors, hasUsage, rollUpUsage, settleFolds } from './usage-rollups.store.js';

export type { Ingester, IngestResult, RunBatch, RunCreate } from './ingest-types.js';

// Requests that post or patch the same runs at once may deadlock (PostgreSQL then ends one of them):
// how often a batch's transaction or statement is tried in all.
const INGEST_DEADLOCK_ATTEMPTS = 3;

// ───────────────────────────── entry point ─────────────────────────────

/** Stores a batch of run creates, updates and attachments (see the contract at the top of this file). */
export function ingestRunBatch(deps: Pick<Deps, 'db' | 'config'>, who: Ingester, batch: RunBatch): Promise<IngestResult> {
  // Validated here, outside the async function that stores it: an async function's arguments live as
  // long as it does, and the batch (parsed runs, their parsed extra) would survive collections while
  // its runs wait for their INSERT. Only the normalised runs are kept.
  let valid: ValidBatch;
  try {
    valid = validateBatch(deps, batch);
  } catch (error) {
    return Promise.reject(error);
  }
  return storeBatch(deps, who, valid);
}

type ValidBatch = { posts: NormalizedRun[]; patches: NormalizedPatch[]; attachments: RunAttachment[]; parentsMayFollow: boolean };

function validateBatch(deps: Pick<Deps, 'config'>, batch: RunBatch): ValidBatch {
  const posts = (batch.post ?? []).map((raw, index) => normalizeRunCreate(raw, ['post', index]));
  const parentsMayFollow = batch.parentsMayFollow ?? false;
  if (parentsMayFollow) for (const run of posts) run.adopts = true;
  const patches = (batch.patch ?? []).map((raw, index) => normalizePatch(raw, ['patch', index]));
  const attachments = batch.attachments ?? [];
  for (const attachment of attachments) {
    if (attachment.data.length > deps.config.attachmentLimitBytes) {
      throw new AppError('PAYLOAD_TOO_LARGE', `Attachment ${attachment.name} of run ${attachment.runId} exceeds ${deps.config.attachmentLimitBytes} bytes.`);
    }
  }
  return { posts, patches, attachments, parentsMayFollow };
}

async function storeBatch(deps: Pick<Deps, 'db' | 'config'>, who: Ingester, { posts, patches, attachments, parentsMayFollow }: ValidBatch): Promise<IngestResult> {
  if (!posts.length && !patches.length && !attachments.length) return { accepted: 0, duplicates: [], patched: 0, deferredPatches: 0 };
  const onlySessionId = await confineToProject(deps.db.pool, who, posts);

  // Repeated ids inside one batch are duplicates too; the first one wins.
  const seen = new Set<string>();
  const duplicates: string[] = [];
  const unique = posts.filter((run) => {
    if (seen.has(run.id)) {
      duplicates.push(run.id);
      return false;
    }
    seen.add(run.id);
    return true;
  });

  // The common batch (the SDK's posts): its runs join the next INSERT of this ingester (run-writer.ts:
  // group commit), one statement that stores them with their usage deltas in its own implicit
  // transaction. Project and parent lookups are cached or rare: they take a connection only when they query.
  if (!patches.length && !attachments.length && unique.length <= RUNS_PER_INSERT) {
    await deriveHierarchy(deps.db.pool, who.workspaceId, unique, parentsMayFollow, onlySessionId);
    await resolveProjects(deps.db.pool, who.workspaceId, unique);
    const inserted = await runWriter(deps).write(who, unique).catch((error: unknown) => {
      throw asClientError(error);
    });
    for (const run of unique) if (!inserted.has(run.id)) duplicates.push(run.id);
    return { accepted: inserted.size, duplicates, patched: 0, deferredPatches: 0 };
  }

  // Otherwise one connection for the whole request, and one transaction.
  const client = await deps.db.pool.connect();
  try {
    await deriveHierarchy(client, who.workspaceId, unique, parentsMayFollow, onlySessionId);
    await resolveProjects(client, who.workspaceId, unique);
    const merged = mergePatches(patches);
    const { inserted, patched, deferred, waiting } = await retryingDeadlocks(INGEST_DEADLOCK_ATTEMPTS, () =>
      inTransaction(client, async () => {
        await recordAwaitedParents(client, who.workspaceId, unique);
        const folds = foldUsageIntoAncestors(unique);
        const inserted = await insertRuns(client, who, unique);
        const { patched, contributions } = await applyPatches(client, who.workspaceId, merged, onlySessionId);
        const waiting = await rollUpUsage(client, who.workspaceId, [...settleFolds(unique, inserted, folds), ...contributions], onlySessionId);
        const deferred = merged.filter((patch) => !patched.has(patch.id));
        if (deferred.length) await deferPatches(client, who.workspaceId, deferred, onlySessionId);
        if (attachments.length) await insertAttachments(client, who.workspaceId, attachments);
        return { inserted, patched, deferred, waiting };
      }),
    ).catch((error: unknown) => {
      throw asClientError(error);
    });
    for (const run of unique) if (!inserted.has(run.id)) duplicates.push(run.id);

    // Early patches: ours may have been deferred while a concurrent request stored the post, or a
    // concurrent request deferred a patch for a run we just stored. Whichever request commits last
    // sees both, so each sweeps its own ids after commit. Usage left waiting for an ancestor not
    // stored is swept the same way.
    const sweepIds = [...inserted, ...deferred.map((patch) => patch.id), ...waiting];
    if (sweepIds.length) await applyPendingPatches(client, who.workspaceId, sweepIds);
    await adoptAfterInsert(client, who.workspaceId, unique, inserted, onlySessionId);

    return { accepted: inserted.size, duplicates, patched: patched.size, deferredPatches: deferred.length };
  } finally {
    client.release();
  }
}

/**
 * A project-bound ingester's runs (see `who.project` at the top): those naming no project get its
 * project; any naming another is FORBIDDEN, checked before a name is looked up or a project made.
 * Returns that project's id (made if it was deleted), which confines the rest of the batch; undefined
 * for any other ingester.
 */
async function confineToProject(db: pg.Pool, who: Ingester, runs: NormalizedRun[]): Promise<string | undefined> {
  const project = who.project;
  if (project === undefined) return undefined;
  const refuse = (run: NormalizedRun) =>
    AppError.forbidden(`This key writes traces into project "${project}" only; run ${run.id} names another project.`);
  for (const run of runs) {
    if (run.sessionName !== null && run.sessionName !== project) throw refuse(run);
    if (!run.sessionId) run.sessionName = project;
  }
  const projectId = (await resolveProjectIds(db, who.workspaceId, { ids: [], names: [project] })).byName.get(project)!;
  for (const run of runs) {
    if (run.sessionId && run.sessionId !== projectId) throw refuse(run);
    run.sessionId = projectId;
  }
  return projectId;
}

/** Sets each run's project id (unknown session names create projects). */
async function resolveProjects(db: pg.Pool | pg.PoolClient, workspaceId: string, runs: NormalizedRun[]): Promise<void> {
  // Sets filled in one pass (every run of every batch comes here; a batch names one project or two).
  const ids = new Set<string>();
  const names = new Set<string>();
  for (const run of runs) {
    if (run.sessionId) ids.add(run.sessionId);
    else names.add(run.sessionName ?? DEFAULT_PROJECT_NAME);
  }
  const projects = await resolveProjectIds(db, workspaceId, { ids: [...ids], names: [...names] });
  for (const run of runs) run.sessionId ??= projects.byName.get(run.sessionName ?? DEFAULT_PROJECT_NAME)!;
}

// Runs per grouped statement (a request with more is written alone). Sized by measurement (bench:ingest's
// breakdown, 32 requests of 100 runs at once, bench/results/ingest-group-commit-loaded.txt): groups of
// 1,500 runs cost PostgreSQL 18-41% more CPU per run than a statement per request, 200 about the same,
// and 200 cost the ingest thread the least JS per request (4.4-5.1 ms against 6.5 for 1,500).
const RUNS_PER_GROUP = 200;

// One writer per pool: per ingest thread, or per process without threads.
const writers = new WeakMap<pg.Pool, RunWriter>();

function runWriter(deps: Pick<Deps, 'db' | 'config'>): RunWriter {
  let writer = writers.get(deps.db.pool);
  if (!writer) {
    writer = createRunWriter(deps.db.pool, insertRunsThenSweep, { connections: deps.config.ingestWriteConnections, maxRuns: RUNS_PER_GROUP });
    writers.set(deps.db.pool, writer);
  }
  return writer;
}

/**
 * Awaited parents, one grouped INSERT (with the roll-up of its runs' usage when they carry any), then
 * the sweep for patches and usage that raced ahead of these posts (see below), then adoptions.
 */
async function insertRunsThenSweep(client: pg.PoolClient, who: Ingester, runs: NormalizedRun[]): Promise<Set<string>> {
  await recordAwaitedParents(client, who.workspaceId, runs);
  // A project-bound ingester's runs were all put in its project (confineToProject).
  const onlySessionId = who.project === undefined ? undefined : runs[0]?.sessionId ?? undefined;
  // The deadlock's victim is simply run again. Runs without usage owed to an ancestor (most batches)
  // are one statement in a transaction of its own.
  const { inserted, waiting } = await retryingDeadlocks(INGEST_DEADLOCK_ATTEMPTS, async () => {
    if (!runs.some((run) => run.parentRunIds.length && hasUsage(run.usage))) return { inserted: await insertRuns(client, who, runs), waiting: [] };
    return inTransaction(client, async () => {
      // Usage owed to ancestors in this INSERT goes into their totals as they are written.
      const folds = foldUsageIntoAncestors(runs);
      const inserted = await insertRuns(client, who, runs);
      return { inserted, waiting: await rollUpUsage(client, who.workspaceId, settleFolds(runs, inserted, folds), onlySessionId) };
    });
  });
  if (inserted.size || waiting.length) await applyPendingPatches(client, who.workspaceId, [...inserted, ...waiting]);
  await adoptAfterInsert(client, who.workspaceId, runs, inserted, onlySessionId);
  return inserted;
}

/**
 * Before runs stored provisionally (their parent neither in their batch nor stored) are written: their
 * parents are recorded as awaited, committed first (see adoptAfterInsert).
 */
async function recordAwaitedParents(client: pg.PoolClient, tenantId: string, runs: NormalizedRun[]): Promise<void> {
  const parents = new Set<string>();
  for (const run of runs) if (run.awaitsParent) parents.add(run.parentRunId!);
  if (parents.size) await awaitParents(client, tenantId, [...parents]);
}

/**
 * After runs of a batch whose parents may follow are stored (and committed): those that provisional
 * runs wait for (trace_run_awaited_parents names them: almost never, and one cheap probe to know)
 * adopt them, and each of them stored provisionally is adopted by its parent if that has been stored
 * meanwhile (by a concurrent request). The awaited row is committed before the provisional run and
 * each side checks after its own commit, so whichever commits last sees the other.
 */
async function adoptAfterInsert(client: pg.PoolClient, tenantId: string, runs: NormalizedRun[], inserted: Set<string>, onlySessionId?: string): Promise<void> {
  const stored: NormalizedRun[] = [];
  const awaited: string[] = [];
  for (const run of runs) {
    if (!run.adopts || !inserted.has(run.id)) continue;
    stored.push(run);
    if (run.awaitsParent) awaited.push(run.parentRunId!);
  }
  if (!stored.length) return;
  const adopters: Adopter[] = [];
  const waitedFor = await awaitedParents(client, tenantId, stored.map((run) => run.id));
  for (const run of stored) {
    if (waitedFor.has(run.id)) adopters.push({ id: run.id, trace_id: run.traceId!, dotted_order: run.dottedOrder!, parent_run_ids: run.parentRunIds });
  }
  if (awaited.length) {
    for (const row of await findParentRuns(client, tenantId, [...new Set(awaited)], onlySessionId)) {
      adopters.push({ id: row.id, trace_id: row.trace_id, dotted_order: row.dotted_order, parent_run_ids: row.parent_run_ids ?? [] });
    }
  }
  if (!adopters.length) return;
  // The adopted runs' usage is owed to the ancestors they gain, in the adoption's transaction.
  const composed = composeAdopters(adopters);
  const waiting = await retryingDeadlocks(INGEST_DEADLOCK_ATTEMPTS, () =>
    inTransaction(client, async () => rollUpUsage(client, tenantId, await adoptOrphans(client, tenantId, composed, onlySessionId), onlySessionId)),
  );
  if (waiting.length) await applyPendingPatches(client, tenantId, waiting);
}

/**
 * One statement sees the rows as they were before it, so an adopter that is itself adopted in the same
 * statement (a provisional run whose parent came with it) would hand its descendants its provisional
 * place. Each adopter is first placed where its own adopter puts it, until nothing moves.
 */
function composeAdopters(adopters: Adopter[]): Adopter[] {
  const byId = new Map<string, Adopter>();
  for (const adopter of adopters) byId.set(adopter.id, { ...adopter });
  for (let round = 0; round < byId.size; round++) {
    let moved = false;
    for (const adopter of byId.values()) {
      const parent = byId.get(adopter.trace_id);
      if (!parent || parent.id === adopter.id || adopter.dotted_order.startsWith(`${parent.dotted_order}.`)) continue;
      const at = adopter.dotted_order.indexOf(parent.id);
      if (at < 0) continue;
      adopter.dotted_order = parent.dotted_order + adopter.dotted_order.slice(at + 36);
      adopter.parent_run_ids = [...parent.parent_run_ids, ...adopter.parent_run_ids];
      adopter.trace_id = parent.trace_id;
      moved = true;
    }
    if (!moved) break;
  }
  return [...byId.values()];
}

/**
 * Fills trace_id, dotted_order and parent_run_ids for runs that came without a dotted order (plain
 * `POST /runs` clients), from their parent in this batch or already stored. NOT_FOUND for an unknown
 * parent (with `onlySessionId`, a parent in another project is unknown).
 */
async function deriveHierarchy(db: pg.Pool | pg.PoolClient, tenantId: string, runs: NormalizedRun[], parentsMayFollow = false, onlySessionId?: string): Promise<void> {
  const pending = runs.filter((run) => run.dottedOrder === null);
  if (!pending.length) return;
  const known = new Map<string, { traceId: string; dottedOrder: string; parentRunIds: string[] }>();
  for (const run of runs) if (run.dottedOrder) known.set(run.id, { traceId: run.traceId!, dottedOrder: run.dottedOrder, parentRunIds: run.parentRunIds });
  const pendingIds = new Set(pending.map((run) => run.id));
  const missingParents = [...new Set(pending.flatMap((run) => (run.parentRunId && !known.has(run.parentRunId) && !pendingIds.has(run.parentRunId) ? [run.parentRunId] : [])))];
  if (missingParents.length) {
    for (const row of await findParentRuns(db, tenantId, missingParents, onlySessionId)) known.set(row.id, { traceId: row.trace_id, dottedOrder: row.dotted_order, parentRunIds: row.parent_run_ids ?? [] });
  }
  // Parents may follow their children in the batch: resolve in passes.
  let remaining = pending;
  while (remaining.length) {
    const next: NormalizedRun[] = [];
    for (const run of remaining) {
      const segment = dottedOrderSegment(run.startTime, run.id);
      if (!run.parentRunId) {
        run.dottedOrder = segment;
        run.traceId = run.id;
        run.parentRunIds = [];
      } else {
        const parent = known.get(run.parentRunId);
        if (!parent) {
          next.push(run);
          continue;
        }
        run.dottedOrder = `${parent.dottedOrder}.${segment}`;
        run.traceId = parent.traceId;
        run.parentRunIds = [...parent.parentRunIds, run.parentRunId];
      }
      known.set(run.id, { traceId: run.traceId!, dottedOrder: run.dottedOrder, parentRunIds: run.parentRunIds });
    }
    if (next.length === remaining.length) {
      // Runs whose parent is not coming in this batch start a provisional trace under the parent's id
      // (their descendants here then resolve from them); see parentsMayFollow at the top.
      const waiting = new Set(next.map((run) => run.id));
      const orphans = parentsMayFollow ? next.filter((run) => !waiting.has(run.parentRunId!)) : [];
      if (!orphans.length) throw AppError.notFound(`Parent run ${next[0]!.parentRunId} of run ${next[0]!.id} not found.`);
      for (const run of orphans) {
        run.dottedOrder = `${dottedOrderSegment(run.startTime, run.parentRunId!)}.${dottedOrderSegment(run.startTime, run.id)}`;
        run.traceId = run.parentRunId;
        run.parentRunIds = [run.parentRunId!];
        run.awaitsParent = true;
        known.set(run.id, { traceId: run.traceId!, dottedOrder: run.dottedOrder, parentRunIds: run.parentRunIds });
      }
      remaining = next.filter((run) => !run.awaitsParent);
      continue;
    }
    remaining = next;
  }
}

/** Folds several patches of one run into one, in arrival order (later fields win; extra is merged). */
function mergePatches(patches: NormalizedPatch[]): NormalizedPatch[] {
  const byId = new Map<string, NormalizedPatch>();
  for (const patch of patches) {
    const previous = byId.get(patch.id);
    if (!previous) {
      byId.set(patch.id, patch);
      continue;
    }
    const pick = <K extends keyof NormalizedPatch>(key: K) => (patch[key] ?? previous[key]) as NormalizedPatch[K];
    byId.set(patch.id, {
      id: patch.id,
      endTime: pick('endTime'),
      inputs: pick('inputs'),
      outputs: pick('outputs'),
      error: pick('error'),
      extra: patch.extra && previous.extra ? JSON.stringify({ ...JSON.parse(previous.extra), ...JSON.parse(patch.extra) }) : pick('extra'),
      events: pick('events'),
      serialized: pick('serialized'),
      tags: pick('tags'),
      usage: patch.usage.totalTokens !== null ? patch.usage : previous.usage,
      firstTokenTime: pick('firstTokenTime'),
      threadId: pick('threadId'),
      raw: { ...previous.raw, ...patch.raw, ...(patch.raw.extra && previous.raw.extra ? { extra: { ...(jsonValue(previous.raw.extra, ['patch', 'extra']) as object), ...(jsonValue(patch.raw.extra, ['patch', 'extra']) as object) } } : {}) },
    });
  }
  return [...byId.values()];
}

/**
 * Merges kept patches into runs that are now stored (in arrival order) and drops them; adds the usage
 * their descendants left waiting for them. A patch that changes a run's usage owes the change to its
 * ancestors, and what of it waits for one not stored is swept again (until nothing is taken).
 */
async function applyPendingPatches(client: pg.PoolClient, tenantId: string, runIds: string[]): Promise<void> {
  let ids = runIds;
  // Almost always nothing waits: one cheap indexed probe instead of a transaction.
  while (ids.length && (await hasPendingPatches(client, tenantId, ids))) {
    const sweep = ids;
    ids = await retryingDeadlocks(INGEST_DEADLOCK_ATTEMPTS, () =>
      inTransaction(client, async () => {
        // Only patches whose run exists: the others keep waiting for their post.
        const rows = await takePendingPatchesOfStoredRuns(client, tenantId, sweep);
        const usage = rows.flatMap((row) => (row.usage_delta ? [{ runId: row.run_id, usageDelta: row.usage_delta }] : []));
        if (usage.length) await addWaitingUsage(client, tenantId, usage);
        const patches = rows.filter((row) => !row.usage_delta);
        if (!patches.length) return [];
        const { contributions } = await applyPatches(client, tenantId, mergePatches(patches.map((row) => normalizePatch(row.payload, ['patch'], row.run_id))));
        // A patch kept for a project-bound key's run owes its usage only within that project.
        const projectOf = new Map(patches.map((row) => [row.run_id, row.session_id ?? undefined]));
        const waiting: string[] = [];
        for (const project of new Set(projectOf.values())) {
          const owed = contributions.filter((contribution) => projectOf.get(contribution.from) === project);
          waiting.push(...(await rollUpUsage(client, tenantId, owed, project)));
        }
        return waiting;
      }),
    );
  }
}

/**
 * PostgreSQL data errors (class 22: a value out of range, an invalid escape in JSON) are the client's
 * input, not our failure: 422 instead of 500.
 */
function asClientError(error: unknown): unknown {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && code.startsWith('22')) {
    return new AppError('VALIDATION_FAILED', `A run value was rejected: ${(error as Error).message}`, [
      { loc: ['body'], msg: (error as Error).message, type: 'value_error' },
    ]);
  }
  return error;
}
