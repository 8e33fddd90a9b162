// The agent server's resources as its API returns them (assistants, threads and their state, runs and
// their stream events, crons, store items) and the values their fields take. Ground: the agent server
// makes them, and the platform's GraphQL presents them (it receives them through the platform's calls).

type Json = Record<string, unknown>;

export const RUN_STATUSES = ['pending', 'running', 'success', 'error', 'timeout', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const MULTITASK_STRATEGIES = ['reject', 'interrupt', 'rollback', 'enqueue'] as const;
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];

/** What the runtime needs to execute a run, stored on the run row. */
export type RunKwargs = {
  input?: unknown;
  command?: { resume?: unknown; update?: unknown; goto?: unknown } | null;
  config: { configurable?: Record<string, unknown>; tags?: string[]; recursion_limit?: number; [key: string]: unknown };
  context?: Record<string, unknown> | null;
  stream_mode: string[];
  interrupt_before?: '*' | string[] | null;
  interrupt_after?: '*' | string[] | null;
  webhook?: string | null;
  subgraphs: boolean;
  resumable: boolean;
  durability?: 'sync' | 'async' | 'exit' | null;
  /** Stateless run whose thread is thrown away afterwards: no thread row, no checkpoints. */
  temporary: boolean;
  /**
   * Nobody can read the run's stream (a temporary run created by runs/wait, whose caller only waits
   * for the outcome): its events are neither stored nor signalled, only its status and output.
   */
  outcome_only?: boolean;
  /** Started through the thread streaming protocol: its stream is the protocol's events (agent-server/runtime/stream-modes.ts). */
  protocol?: boolean;
  /** Latest root checkpoint before the run started, for rollback. */
  start_checkpoint_id?: string | null;
};

export const THREAD_STATUSES = ['idle', 'busy', 'interrupted', 'error'] as const;
export type ThreadStatus = (typeof THREAD_STATUSES)[number];

/** A checkpoint as the API presents it (null id when it names no checkpoint yet). */
export type Checkpoint = { thread_id: string; checkpoint_ns: string; checkpoint_id: string | null; checkpoint_map: Record<string, unknown> | null };

/** A thread's state as the API presents it: the runtime's answer to `thread-state` and `thread-history`. */
export type ThreadState = {
  values: unknown;
  next: string[];
  tasks: unknown[];
  metadata: unknown;
  created_at: string | null;
  checkpoint: Checkpoint | null;
  parent_checkpoint: Checkpoint | null;
  /** Absent from a subgraph's state inside a task, as the reference sends it. */
  interrupts?: unknown[];
};

export type Assistant = {
  assistantId: string;
  graphId: string;
  name: string;
  description: string | null;
  config: Json;
  context: Json;
  metadata: Json;
  version: number;
  createdAt: Date;
  updatedAt: Date;
};

export type Thread = {
  threadId: string;
  createdAt: Date;
  updatedAt: Date;
  metadata: Json;
  status: ThreadStatus;
  config: Json;
  values: Json | null;
  interrupts: Json;
  error: Json | null;
};

export type Run = {
  runId: string;
  threadId: string;
  assistantId: string;
  status: RunStatus;
  metadata: Json;
  kwargs: RunKwargs;
  multitaskStrategy: MultitaskStrategy;
  output: unknown;
  attempt: number;
  /** Why it was cancelled, while its status is `interrupted` because it was; null otherwise. */
  cancelReason: string | null;
  createdAt: Date;
  updatedAt: Date;
};

export type Cron = {
  cronId: string;
  assistantId: string;
  threadId: string | null;
  schedule: string;
  timezone: string;
  endTime: Date | null;
  enabled: boolean;
  onRunCompleted: 'delete' | 'keep';
  /** The run body each firing creates a run with. */
  payload: Json;
  metadata: Json;
  userId: string | null;
  nextRunDate: Date | null;
  createdAt: Date;
  updatedAt: Date;
};

export type StoreItem = {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  /** Search relevance, when searched with a query. */
  score?: number;
};

export type AssistantVersion = Omit<Assistant, 'updatedAt'>;

export type RunEvent = {
  /** Position in the run's stream, from 1; the SSE `id`. */
  seq: number;
  /** SSE event name: a stream mode (`values`, `updates|child:1`…), `metadata` or `error`. */
  event: string;
  /** The event's data as JSON text. */
  data: string;
};

/** The stream mode an event belongs to (`updates|sub:1` → `updates`, `messages/partial` → `messages`). */
export const eventMode = (event: string): string => event.split('|')[0]!.split('/')[0]!;
