// Input schemas of the crons area, named after the API nouns. A cron's run fields are the runs area's.
import { z } from 'zod';
import { RunCreate } from '../runs/runs.schemas.js';

const JsonObject = z.record(z.string(), z.unknown());

/** The fields of a cron itself; everything else in a create body is the run each firing creates. */
const CronFields = {
  /** A cron expression (minute hour day-of-month month day-of-week), at most once a minute. */
  schedule: z.string().min(1).max(200),
  /** IANA time zone the schedule is read in. */
  timezone: z.string().min(1).max(100).nullish(),
  end_time: z.iso.datetime({ offset: true }).nullish(),
  enabled: z.boolean().nullish(),
  on_run_completed: z.enum(['delete', 'keep']).nullish(),
};

export const CronCreate = RunCreate.extend(CronFields);
export type CronCreate = z.infer<typeof CronCreate>;

export const CronPatch = z.object({
  schedule: CronFields.schedule.optional(),
  timezone: CronFields.timezone,
  end_time: CronFields.end_time,
  enabled: CronFields.enabled,
  on_run_completed: CronFields.on_run_completed,
  input: z.unknown().optional(),
  metadata: JsonObject.nullish(),
  config: RunCreate.shape.config,
  context: JsonObject.nullish(),
  webhook: RunCreate.shape.webhook,
  interrupt_before: RunCreate.shape.interrupt_before,
  interrupt_after: RunCreate.shape.interrupt_after,
});
export type CronPatch = z.infer<typeof CronPatch>;

const CRON_SORT_FIELDS = ['cron_id', 'assistant_id', 'thread_id', 'created_at', 'updated_at', 'next_run_date', 'end_time'] as const;
const CRON_FIELDS = [
  'cron_id',
  'assistant_id',
  'thread_id',
  'on_run_completed',
  'end_time',
  'schedule',
  'timezone',
  'created_at',
  'updated_at',
  'payload',
  'user_id',
  'next_run_date',
  'metadata',
  'enabled',
] as const;

export const CronCount = z.object({
  assistant_id: z.string().min(1).nullish(),
  thread_id: z.uuid().nullish(),
});

export const CronSearch = CronCount.extend({
  enabled: z.boolean().nullish(),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
  sort_by: z.enum(CRON_SORT_FIELDS).nullish(),
  sort_order: z.enum(['asc', 'desc']).nullish(),
  select: z.array(z.enum(CRON_FIELDS)).nullish(),
});
export type CronSearch = z.infer<typeof CronSearch>;

/** The job a cron's pg-boss schedule sends each tick. */
export const CronFireJob = z.object({ cronId: z.uuid() });
