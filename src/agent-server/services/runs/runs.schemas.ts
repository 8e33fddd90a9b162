// Input schemas of the runs area, named after the API nouns.
import { z } from 'zod';
import { MULTITASK_STRATEGIES, RUN_STATUSES } from '../../../contracts/agent-server-api.js';

export { RUN_STATUSES };
export type { MultitaskStrategy, RunKwargs, RunStatus } from '../../../contracts/agent-server-api.js';

/**
 * The parts of a run's kwargs the caller gave, sealed at rest (encryption/at-rest.ts); the rest are the
 * server's own flags (temporary, stream_mode, …), which its SQL and the runtime read as they are.
 */
export const RUN_KWARGS_SEALED = ['input', 'command', 'config', 'context', 'webhook'] as const;
export const RUN_KWARGS = { model: 'run', field: 'kwargs' } as const;

/** The stream modes a run may ask for (the runtime translates each, agent-server/runtime/stream-modes.ts). */
export const STREAM_MODES = ['values', 'updates', 'messages', 'messages-tuple', 'events', 'debug', 'custom', 'tasks', 'checkpoints'] as const;
export type StreamMode = (typeof STREAM_MODES)[number];

const JsonObject = z.record(z.string(), z.unknown());
const StreamModeList = z
  .union([z.enum(STREAM_MODES), z.array(z.enum(STREAM_MODES))])
  .nullish()
  .transform((value) => (value == null ? undefined : Array.isArray(value) ? value : [value]));

const NodeList = z.union([z.literal('*'), z.array(z.string())]).nullish();

export const RunCreate = z.object({
  assistant_id: z.string().min(1),
  input: z.unknown().optional(),
  command: z
    .object({ resume: z.unknown().optional(), update: z.unknown().optional(), goto: z.unknown().optional() })
    .passthrough()
    .nullish(),
  config: z
    .object({ configurable: JsonObject.nullish(), tags: z.array(z.string()).nullish(), recursion_limit: z.number().int().positive().nullish() })
    .passthrough()
    .nullish(),
  context: JsonObject.nullish(),
  metadata: JsonObject.nullish(),
  checkpoint_id: z.string().nullish(),
  checkpoint: z.object({ checkpoint_id: z.string().nullish(), checkpoint_ns: z.string().nullish(), checkpoint_map: JsonObject.nullish() }).passthrough().nullish(),
  interrupt_before: NodeList,
  interrupt_after: NodeList,
  stream_mode: StreamModeList,
  stream_subgraphs: z.boolean().nullish(),
  stream_resumable: z.boolean().nullish(),
  // Presigned feedback urls for these keys end the run's stream (a 'feedback' event), when its runs are traced.
  feedback_keys: z.array(z.string().trim().min(1).max(180)).max(20).nullish(),
  multitask_strategy: z.enum(MULTITASK_STRATEGIES).nullish(),
  // The SDK's type names 'complete' | 'continue'; the servers read 'delete' | 'keep'. Only 'keep' keeps the thread.
  on_completion: z.enum(['delete', 'keep', 'complete', 'continue']).nullish(),
  on_disconnect: z.enum(['cancel', 'continue']).nullish(),
  after_seconds: z.number().min(0).nullish(),
  if_not_exists: z.enum(['create', 'reject']).nullish(),
  // An http(s) URL, or a path of this agent server (`/custom/webhook`), which the reference server
  // delivers to itself: here, to the project's `http.app`.
  webhook: z.union([z.url({ protocol: /^https?$/ }), z.string().regex(/^\/(?![/\\])/, 'a URL or a path starting with /')]).nullish(),
  checkpoint_during: z.boolean().nullish(),
  durability: z.enum(['sync', 'async', 'exit']).nullish(),
  langsmith_tracer: z.unknown().optional(),
});
export type RunCreate = z.infer<typeof RunCreate>;

export const RunBatchCreate = z.array(RunCreate).min(1).max(100);

export const RunListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  status: z.enum(RUN_STATUSES).nullish(),
});

export const RunCancelQuery = z.object({
  wait: z
    .union([z.boolean(), z.string()])
    .optional()
    .transform((value) => value === true || value === '1' || value === 'true'),
  action: z.enum(['interrupt', 'rollback']).default('interrupt'),
  // The SDK's `reason: "taken"`: the run's input was absorbed by the thread's running run (steering).
  reason: z.literal('taken').optional(),
});

export const RunsCancelRequest = z.object({
  thread_id: z.uuid().nullish(),
  run_ids: z.array(z.uuid()).nullish(),
  status: z.enum(['pending', 'running', 'all']).nullish(),
});

