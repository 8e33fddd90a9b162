// Input schemas of the threads area, named after the API nouns.
import { z } from 'zod';
import { THREAD_STATUSES } from '../../../contracts/agent-server-api.js';

export type { ThreadStatus } from '../../../contracts/agent-server-api.js';

const JsonObject = z.record(z.string(), z.unknown());
const CheckpointRef = z.object({
  thread_id: z.string().nullish(),
  checkpoint_ns: z.string().nullish(),
  checkpoint_id: z.string().nullish(),
  checkpoint_map: JsonObject.nullish(),
});

/**
 * A thread's time to live as the SDKs send it: minutes, or `{ttl: minutes, strategy: "delete"}`
 * (the only strategy). Normalised to minutes.
 */
const ThreadTtl = z
  .union([z.number().positive().max(525_600_00), z.object({ ttl: z.number().positive().max(525_600_00), strategy: z.literal('delete').optional() })])
  .transform((ttl) => (typeof ttl === 'number' ? ttl : ttl.ttl));

export const ThreadCreate = z.object({
  thread_id: z.uuid().nullish(),
  metadata: JsonObject.nullish(),
  if_exists: z.enum(['raise', 'do_nothing']).nullish(),
  supersteps: z
    .array(z.object({ updates: z.array(z.object({ values: z.unknown().optional(), command: z.unknown().optional(), as_node: z.string() })) }))
    .nullish(),
  ttl: ThreadTtl.nullish(),
});

export const ThreadPatch = z.object({ metadata: JsonObject.nullish(), ttl: ThreadTtl.nullish() });

const THREAD_SORT_FIELDS = ['thread_id', 'status', 'created_at', 'updated_at'] as const;
const THREAD_FIELDS = ['thread_id', 'created_at', 'updated_at', 'metadata', 'config', 'status', 'values', 'interrupts'] as const;

export const ThreadSearchRequest = z.object({
  metadata: JsonObject.nullish(),
  values: JsonObject.nullish(),
  ids: z.array(z.uuid()).nullish(),
  status: z.enum(THREAD_STATUSES).nullish(),
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  sort_by: z.enum(THREAD_SORT_FIELDS).nullish(),
  sort_order: z.enum(['asc', 'desc']).nullish(),
  select: z.array(z.enum(THREAD_FIELDS)).nullish(),
});

export const ThreadCountRequest = z.object({
  metadata: JsonObject.nullish(),
  values: JsonObject.nullish(),
  status: z.enum(THREAD_STATUSES).nullish(),
});

export const ThreadStateUpdate = z.object({
  values: z.unknown().optional(),
  as_node: z.string().nullish(),
  checkpoint_id: z.string().nullish(),
  checkpoint: CheckpointRef.nullish(),
});

export const ThreadStateCheckpointRequest = z.object({ checkpoint: CheckpointRef, subgraphs: z.boolean().nullish() });

export const ThreadHistoryRequest = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  before: z.union([z.string(), z.object({ configurable: CheckpointRef.optional() }).passthrough(), CheckpointRef]).nullish(),
  metadata: JsonObject.nullish(),
  checkpoint: CheckpointRef.nullish(),
});
