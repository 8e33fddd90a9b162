// Agent-server JSON, exactly as the official server (and so the langgraph SDK) names its fields.
import type { Response } from 'express';
import type { Assistant, AssistantVersion } from '../services/assistants/assistants.service.js';
import type { Cron } from '../services/crons/crons.service.js';
import type { Run } from '../services/runs/runs.service.js';
import { serializeJson } from '../../serialize.js';
import type { StoreItem } from '../services/store/store.service.js';
import type { Thread } from '../services/threads/threads.service.js';

export const presentAssistant = (assistant: Assistant) => ({
  assistant_id: assistant.assistantId,
  graph_id: assistant.graphId,
  config: assistant.config,
  context: assistant.context,
  metadata: assistant.metadata,
  version: assistant.version,
  name: assistant.name,
  description: assistant.description,
  created_at: assistant.createdAt.toISOString(),
  updated_at: assistant.updatedAt.toISOString(),
});

export const presentAssistantVersion = (version: AssistantVersion) => {
  const { updated_at: _updated, ...rest } = presentAssistant({ ...version, updatedAt: version.createdAt });
  return rest;
};

export const presentThread = (thread: Thread) => ({
  thread_id: thread.threadId,
  created_at: thread.createdAt.toISOString(),
  updated_at: thread.updatedAt.toISOString(),
  state_updated_at: thread.updatedAt.toISOString(),
  metadata: thread.metadata,
  status: thread.status,
  config: thread.config,
  values: thread.values ?? {},
  interrupts: thread.interrupts,
  error: thread.error,
});

export const presentRun = (run: Run) => ({
  run_id: run.runId,
  thread_id: run.threadId,
  assistant_id: run.assistantId,
  created_at: run.createdAt.toISOString(),
  updated_at: run.updatedAt.toISOString(),
  status: run.status,
  metadata: run.metadata,
  kwargs: run.kwargs,
  multitask_strategy: run.multitaskStrategy,
  cancel_reason: run.cancelReason,
});

export const presentCron = (cron: Cron) => ({
  cron_id: cron.cronId,
  assistant_id: cron.assistantId,
  thread_id: cron.threadId,
  on_run_completed: cron.onRunCompleted,
  end_time: cron.endTime?.toISOString() ?? null,
  schedule: cron.schedule,
  timezone: cron.timezone,
  created_at: cron.createdAt.toISOString(),
  updated_at: cron.updatedAt.toISOString(),
  payload: cron.payload,
  user_id: cron.userId,
  next_run_date: cron.nextRunDate?.toISOString() ?? null,
  metadata: cron.metadata,
  enabled: cron.enabled,
});

export const presentStoreItem = (item: StoreItem) => ({
  namespace: item.namespace,
  key: item.key,
  value: item.value,
  created_at: item.createdAt.toISOString(),
  updated_at: item.updatedAt.toISOString(),
  ...(item.score !== undefined ? { score: item.score } : {}),
});

/** Keeps only the `select`ed fields (all when none are named). */
export const selectFields = <T extends Record<string, unknown>>(value: T, select: readonly string[] | null | undefined): Partial<T> =>
  select?.length ? (Object.fromEntries(Object.entries(value).filter(([key]) => select.includes(key))) as Partial<T>) : value;

/**
 * JSON through the protocol serializer (LangChain messages as plain objects), ended in one socket
 * write: Node puts the headers and a string body that ends the response into one chunk. Not through
 * express's `res.send`, which turns the text into a Buffer (headers and body then go out as two
 * chunks) and hashes every body for an ETag that no agent-server client sends back.
 */
export function sendJson(res: Response, body: unknown, status = 200): void {
  const text = serializeJson(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
