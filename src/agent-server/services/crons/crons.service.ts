// Crons: schedules that create runs. A thread cron runs on its thread; a stateless cron on a new
// thread each time (kept when `on_run_completed: keep`). Each cron has one pg-boss schedule keyed by
// its id; its tick calls fireCron, which claims the occurrence in the cron's row (one run per tick,
// however many workers were handed it) and creates a normal run through the runs service.
import { withTransaction } from '../../../db.js';
import { AppError } from '../../../errors.js';
import { isUuid, newId } from '../../../ids.js';
import type { Deps } from '../../../context.js';
import { resolveAssistantId } from '../assistants/assistants.service.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { type AuthorizedContext, authConfigurable, authorize, filterDocument, matchesFilter } from '../custom-auth/custom-auth.js';
import { agentContext } from '../served-deployment/served-deployment.js';
import { assertWebhookAllowed, createRun, type Run } from '../runs/runs.service.js';
import { threadNotFound } from '../threads/threads.service.js';
import { parseInput } from '../../../validate.js';
import { assertSchedule, CRON_FIRE_QUEUE, nextOccurrence, syncSchedule } from './cron-schedule.js';
import { CronCount, CronCreate, CronPatch, CronSearch } from './crons.schemas.js';
import * as store from './crons.store.js';
import { openJson, sealJson, storedEncryptionContext, withEncryptionContext } from '../encryption/at-rest.js';
import type { CronRow } from './crons.store.js';
import type { Cron } from '../../../contracts/agent-server-api.js';

export type { Cron };

type Json = Record<string, unknown>;


const CRON_PAYLOAD = { model: 'cron', field: 'payload' } as const;
const CRON_METADATA = { model: 'cron', field: 'metadata' } as const;

// A row's JSON opened (when encrypted at rest: encryption/at-rest.ts).
const toCron = async (deps: Pick<Deps, 'config'>, row: CronRow): Promise<Cron> => ({
  cronId: row.id,
  assistantId: row.assistant_id,
  threadId: row.thread_id,
  schedule: row.schedule,
  timezone: row.timezone,
  endTime: row.end_time,
  enabled: row.enabled,
  onRunCompleted: row.on_run_completed,
  payload: await openJson(deps.config, CRON_PAYLOAD, row.payload),
  metadata: await openJson(deps.config, CRON_METADATA, row.metadata),
  userId: row.user_id,
  nextRunDate: row.next_run_date,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const CRON_NOT_FOUND = 'Cron not found';
const noAssistant = (assistantId: string) => `Assistant "${assistantId}" not found`;

/** The assistant a cron names, as an id in this deployment; NOT_FOUND unless it exists. */
async function assistantOf(ctx: AgentServerContext, idOrGraph: string): Promise<string> {
  if (!ctx.deployment.graphIds.includes(idOrGraph) && !isUuid(idOrGraph)) throw AppError.notFound(noAssistant(idOrGraph));
  const assistantId = resolveAssistantId(ctx, idOrGraph);
  const { rows } = await ctx.db.pool.query('SELECT 1 FROM agent_assistants WHERE id = $1 AND deployment_id = $2', [assistantId, ctx.deployment.deploymentId]);
  if (!rows[0]) throw AppError.notFound(noAssistant(idOrGraph));
  return assistantId;
}

async function ensureThread(ctx: AuthorizedContext, threadId: string, create: boolean, metadata: Json): Promise<string> {
  if (!isUuid(threadId)) throw AppError.notFound(threadNotFound(threadId));
  const id = threadId.toLowerCase();
  // Under custom auth, a cron runs only on a thread its creator may read.
  const filter = await authorize(ctx, 'threads', 'read', { thread_id: id });
  const { rows } = await ctx.db.pool.query<{ metadata: Json }>('SELECT metadata FROM agent_threads WHERE id = $1 AND deployment_id = $2', [id, ctx.deployment.deploymentId]);
  if (rows[0]) {
    if (!matchesFilter(await openJson(ctx.config, { model: 'thread', field: 'metadata' }, rows[0].metadata), filter)) throw AppError.notFound(threadNotFound(threadId));
    return id;
  }
  if (!create) throw AppError.notFound(threadNotFound(threadId));
  await ctx.db.pool.query(`INSERT INTO agent_threads (id, deployment_id, metadata, updated_at) VALUES ($1, $2, $3, now()) ON CONFLICT (id) DO NOTHING`, [id, ctx.deployment.deploymentId, await sealJson(ctx.config, { model: 'thread', field: 'metadata' }, metadata)]);
  return id;
}

const userIdOf = (ctx: AgentServerContext) => (ctx.viewer.kind === 'api-key' ? ctx.viewer.userId : null);
const dropUndefined = (value: Json): Json => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null));

/**
 * Creates a cron on a thread (`threadId`) or a stateless one (null) and schedules it. VALIDATION_FAILED
 * for a garbage expression, one firing more than once a minute or an unknown time zone; NOT_FOUND for
 * an unknown assistant or thread (unless `if_not_exists: create`).
 */
export async function createCron(ctx: AuthorizedContext, threadId: string | null, input: unknown): Promise<Cron> {
  const body = parseInput(CronCreate, input, 'body');
  const cronId = newId();
  // The project's handler may refuse, or change the cron's metadata (typically: stamp the owner on it).
  const asked = { payload: { ...body }, schedule: body.schedule, cron_id: cronId, thread_id: threadId, end_time: body.end_time ?? null, metadata: { ...(body.metadata ?? {}) } };
  await authorize(ctx, 'crons', 'create', asked);
  const metadata = (asked.metadata ?? {}) as Json;
  const { schedule, timezone: requestedZone, end_time: endTimeText, enabled: requestedEnabled, on_run_completed: onRunCompleted, ...runBody } = body;
  const timezone = requestedZone ?? 'UTC';
  assertSchedule(schedule, timezone);
  // Checked now rather than at each firing, where it would fail every tick.
  assertWebhookAllowed(ctx, body.webhook);
  const assistantId = await assistantOf(ctx, body.assistant_id);
  const thread = threadId === null ? null : await ensureThread(ctx, threadId, body.if_not_exists === 'create', metadata);
  // Each firing runs as the cron's creator: their identity rides in the run body's config.
  const identity = authConfigurable(ctx);
  const config = Object.keys(identity).length ? { ...(runBody.config ?? {}), configurable: { ...(runBody.config?.configurable ?? {}), ...identity } } : runBody.config;
  const endTime = endTimeText ? new Date(endTimeText) : null;
  const enabled = requestedEnabled ?? true;
  const row = await store.insertCron(ctx.db, {
    id: cronId,
    deployment_id: ctx.deployment.deploymentId,
    assistant_id: assistantId,
    thread_id: thread,
    schedule,
    timezone,
    end_time: endTime,
    enabled,
    on_run_completed: onRunCompleted ?? 'delete',
    // The run body without if_not_exists: the thread exists from now on (or is new each time).
    payload: await sealJson(ctx.config, CRON_PAYLOAD, dropUndefined({ ...runBody, config, metadata: Object.keys(metadata).length ? metadata : undefined, assistant_id: assistantId, if_not_exists: undefined })),
    metadata: await sealJson(ctx.config, CRON_METADATA, metadata),
    user_id: userIdOf(ctx),
    next_run_date: nextOccurrence(schedule, timezone, new Date(), endTime),
  });
  const cron = await toCron(ctx, row);
  try {
    await syncSchedule(ctx.boss, cron);
  } catch (error) {
    await store.deleteCron(ctx.db, ctx.deployment.deploymentId, cron.cronId);
    throw error;
  }
  return cron;
}

/**
 * One cron of this deployment; NOT_FOUND otherwise (also when the caller's custom-auth handler of
 * `crons:<action>` filters it out; FORBIDDEN when it refuses the action).
 */
export async function getCron(ctx: AuthorizedContext, cronId: string, action: 'read' | 'update' | 'delete' = 'read', value: Json = {}): Promise<Cron> {
  // The handler gets the caller's own object, so what it changes there (a stamped metadata) is what the
  // caller stores; a copy lost it (the Agent Server's advisory "auth mutations not applied").
  const filter = await authorize(ctx, 'crons', action, Object.assign(value, { cron_id: cronId }));
  const row = isUuid(cronId) ? await store.selectCron(ctx.db, ctx.deployment.deploymentId, cronId.toLowerCase()) : undefined;
  if (!row) throw AppError.notFound(CRON_NOT_FOUND);
  const cron = await toCron(ctx, row);
  if (!matchesFilter(cron.metadata, filter)) throw AppError.notFound(CRON_NOT_FOUND);
  return cron;
}

/**
 * Changes a cron's schedule, end, enabled flag or run fields, and its pg-boss schedule with them. The
 * cron's row stays locked until its schedule is set: concurrent updates (and a delete) take turns, each
 * from the row the one before left, and the schedule ends as the row does.
 */
export async function updateCron(ctx: AuthorizedContext, cronId: string, input: unknown): Promise<Cron> {
  const patch = parseInput(CronPatch, input ?? {}, 'body');
  const asked = { payload: { ...patch }, schedule: patch.schedule, metadata: patch.metadata ? { ...patch.metadata } : patch.metadata };
  const found = await getCron(ctx, cronId, 'update', asked);
  assertWebhookAllowed(ctx, patch.webhook);
  return withTransaction(ctx.db, async (client) => {
    const locked = await store.lockCron(client, ctx.deployment.deploymentId, found.cronId);
    if (!locked) throw AppError.notFound(CRON_NOT_FOUND);
    const cron = await toCron(ctx, locked);
    const schedule = patch.schedule ?? cron.schedule;
    const timezone = patch.timezone ?? cron.timezone;
    if (patch.schedule !== undefined || patch.timezone != null) assertSchedule(schedule, timezone);
    const endTime = patch.end_time === undefined ? cron.endTime : patch.end_time === null ? null : new Date(patch.end_time);
    const runFields = dropUndefined({
      input: patch.input,
      metadata: patch.metadata,
      config: patch.config,
      context: patch.context,
      webhook: patch.webhook,
      interrupt_before: patch.interrupt_before,
      interrupt_after: patch.interrupt_after,
    });
    const row = await store.updateCron(client, ctx.deployment.deploymentId, cron.cronId, {
      schedule,
      timezone,
      end_time: endTime,
      enabled: patch.enabled ?? cron.enabled,
      on_run_completed: patch.on_run_completed ?? cron.onRunCompleted,
      payload: await sealJson(ctx.config, CRON_PAYLOAD, { ...cron.payload, ...runFields }),
      metadata: await sealJson(ctx.config, CRON_METADATA, (asked.metadata as Json | null | undefined) ?? cron.metadata),
      next_run_date: nextOccurrence(schedule, timezone, new Date(), endTime),
    });
    const updated = await toCron(ctx, row!);
    await syncSchedule(ctx.boss, updated);
    return updated;
  });
}

/** Deletes a cron and its pg-boss schedule; runs it created stay. */
export async function deleteCron(ctx: AuthorizedContext, cronId: string): Promise<void> {
  const cron = await getCron(ctx, cronId, 'delete');
  if (!(await store.deleteCron(ctx.db, ctx.deployment.deploymentId, cron.cronId))) throw AppError.notFound(CRON_NOT_FOUND);
  await syncSchedule(ctx.boss, { ...cron, enabled: false });
}

/** An assistant filter as an id of this deployment (a graph name means its default assistant). */
const assistantFilter = (ctx: AgentServerContext, idOrGraph: string | null | undefined): string | null | undefined => {
  if (!idOrGraph) return undefined;
  if (ctx.deployment.graphIds.includes(idOrGraph)) return resolveAssistantId(ctx, idOrGraph);
  // Matches nothing, rather than failing: a search for an unknown assistant finds no crons.
  return isUuid(idOrGraph) ? idOrGraph.toLowerCase() : '00000000-0000-0000-0000-000000000000';
};

export async function searchCrons(ctx: AuthorizedContext, input: unknown): Promise<Cron[]> {
  const body = parseInput(CronSearch, input ?? {}, 'body');
  const owned = filterDocument(await authorize(ctx, 'crons', 'search', { ...body }));
  const rows = await store.searchCrons(ctx.db, ctx.deployment.deploymentId, {
    metadata: owned,
    assistantId: assistantFilter(ctx, body.assistant_id),
    threadId: body.thread_id,
    enabled: body.enabled,
    limit: body.limit,
    offset: body.offset,
    sortBy: body.sort_by,
    sortOrder: body.sort_order,
  });
  return Promise.all(rows.map((row) => toCron(ctx, row)));
}

export async function countCrons(ctx: AuthorizedContext, input: unknown): Promise<number> {
  const body = parseInput(CronCount, input ?? {}, 'body');
  const owned = filterDocument(await authorize(ctx, 'crons', 'search', { ...body, limit: 0, offset: 0 }));
  return store.countCrons(ctx.db, ctx.deployment.deploymentId, { assistantId: assistantFilter(ctx, body.assistant_id), threadId: body.thread_id, metadata: owned });
}

/**
 * Gives every cron that may still fire and has no pg-boss schedule in this database its schedule:
 * crons an earlier version kept in the platform's database come here without theirs (the platform
 * moves a deployment's rows into its own database: platform/services/deployments/shared-agent-rows.ts).
 * Run when the agent server starts; returns how many it scheduled.
 */
export async function scheduleUnscheduledCrons(deps: Deps): Promise<number> {
  const crons = await store.selectLiveCrons(deps.db);
  if (!crons.length || !deps.boss) return 0;
  const scheduled = new Set((await deps.boss.getSchedules(CRON_FIRE_QUEUE)).map((schedule) => schedule.key));
  let made = 0;
  for (const row of crons) {
    if (scheduled.has(row.id)) continue;
    await syncSchedule(deps.boss, await toCron(deps, row));
    made++;
  }
  return made;
}

/** How long after its occurrence a tick may arrive and still be that occurrence's. */
const EARLY_TICK_MS = 10_000;

/**
 * A tick of a cron's schedule (called by its pg-boss job; `now` is a parameter so tests drive the
 * clock): if an occurrence is due, claims it and creates its run. Returns the run, or undefined when
 * nothing was due, the tick was claimed already, or the cron has ended (then its schedule is removed).
 */
export async function fireCron(deps: Deps, cronId: string, now: Date = new Date()): Promise<Run | undefined> {
  const row = await store.selectCron(deps.db, null, cronId);
  if (!row) {
    await deps.boss?.unschedule(CRON_FIRE_QUEUE, cronId).catch(() => undefined);
    return undefined;
  }
  const cron = await toCron(deps, row);
  const ended = !!cron.endTime && cron.endTime <= now;
  if (ended || !cron.enabled || !cron.nextRunDate) {
    if (ended) {
      await store.disableCron(deps.db, cron.cronId);
      await syncSchedule(deps.boss, { ...cron, enabled: false });
    }
    return undefined;
  }
  // The tick may reach us a little before the occurrence by the clock here (skew with pg-boss's clock).
  if (cron.nextRunDate.getTime() > now.getTime() + EARLY_TICK_MS) return undefined;
  const next = nextOccurrence(cron.schedule, cron.timezone, new Date(Math.max(now.getTime(), cron.nextRunDate.getTime())), cron.endTime);
  if (!(await store.claimOccurrence(deps.db, cron.cronId, cron.nextRunDate, next))) return undefined;

  const ctx = await agentContext({ ...deps, viewer: { kind: 'system' } }, row.deployment_id);
  const payload = { ...cron.payload, metadata: { ...((cron.payload.metadata as Json | undefined) ?? {}), cron_id: cron.cronId } };
  try {
    // In the encryption context the cron was made in (stored with its payload), as its runs are.
    const create = () => (cron.threadId ? createRun(ctx, cron.threadId, payload) : createRun(ctx, null, { ...payload, on_completion: cron.onRunCompleted }));
    return await withEncryptionContext(storedEncryptionContext(row.payload), create);
  } catch (error) {
    if (error instanceof AppError && error.code !== 'NOT_FOUND') {
      // A run the runs service refuses (e.g. `reject` while the thread is busy) skips this tick only.
      deps.logger.warn({ cronId: cron.cronId, err: error }, 'cron tick skipped: its run was refused');
      return undefined;
    }
    if (error instanceof AppError && error.code === 'NOT_FOUND') {
      // Its thread or assistant is gone: the cron can never fire again.
      deps.logger.warn({ cronId: cron.cronId, err: error }, 'cron disabled: its thread or assistant no longer exists');
      await store.disableCron(deps.db, cron.cronId);
      await syncSchedule(deps.boss, { ...cron, enabled: false });
      return undefined;
    }
    throw error;
  } finally {
    if (!next) await syncSchedule(deps.boss, { ...cron, nextRunDate: null }).catch(() => undefined);
  }
}
