// A2A (agent-to-agent protocol 0.3) over the agent server, mapped as the reference server maps it:
// an assistant is an agent; a message's text parts become a user message in `messages` and its data
// parts are merged into the input; `contextId` is a thread (created on first use); a task is a run
// on that thread. The task's artifact is the last AI message of the output (or the output itself as
// data when the graph has no messages). Transport-free: agent-server/rest/a2a.routes.ts speaks JSON-RPC.
import { AppError } from '../../../errors.js';
import { newId } from '../../../ids.js';
import { getAssistant, type Assistant } from '../assistants/assistants.service.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { isTerminalStatus } from '../runs/run-stream.js';
import { runResult, streamRun, waitForRun } from '../runs/run-follow.service.js';
import { getRun } from '../runs/run-reads.service.js';
import { cancelRunIds, createRun, createRunAndWait, type Run } from '../runs/runs.service.js';
import { parseInput } from '../../../validate.js';
import { MessageSendParams, TaskIdParams, TaskQueryParams } from './a2a.schemas.js';

type TaskState = 'submitted' | 'working' | 'input-required' | 'completed' | 'canceled' | 'failed';
type A2APart = { kind: 'text'; text: string } | { kind: 'data'; data: Record<string, unknown> };
type TaskStatus = { state: TaskState; timestamp: string };
type Artifact = { artifactId: string; name: string; parts: A2APart[] };
export type Task = { kind: 'task'; id: string; contextId: string; status: TaskStatus; artifacts?: Artifact[]; metadata: Record<string, unknown> };
type TaskStatusUpdate = { kind: 'status-update'; taskId: string; contextId: string; status: TaskStatus; final: boolean };
type TaskArtifactUpdate = { kind: 'artifact-update'; taskId: string; contextId: string; artifact: Artifact; lastChunk: boolean };
export type TaskEvent = Task | TaskStatusUpdate | TaskArtifactUpdate;

/** Why a task cannot be cancelled (A2A's TaskNotCancelableError). */
export const TASK_NOT_CANCELABLE = 'Task cannot be canceled: it has already ended.';
export const TASK_NOT_FOUND = 'Task not found';

const STATES: Record<Run['status'], TaskState> = {
  pending: 'submitted',
  running: 'working',
  success: 'completed',
  error: 'failed',
  timeout: 'failed',
  interrupted: 'input-required',
};

const PROTOCOL_VERSION = '0.3.0';

/**
 * The agent card of an assistant: where to send JSON-RPC (`baseUrl` is the agent server's own url),
 * its name and description, one skill (the assistant itself). NOT_FOUND for an unknown assistant.
 */
export async function agentCard(ctx: AgentServerContext, assistantId: string, baseUrl: string) {
  const assistant = await getAssistant(ctx, assistantId);
  const description = assistant.description ?? `The "${assistant.graphId}" graph of this agent server.`;
  return {
    protocolVersion: PROTOCOL_VERSION,
    name: assistant.name,
    description,
    url: `${baseUrl}/a2a/${assistant.assistantId}`,
    preferredTransport: 'JSONRPC',
    version: String(assistant.version),
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: `${assistant.graphId}-main`, name: assistant.name, description, tags: [assistant.graphId], examples: [] }],
  };
}

/** The run body a message makes: text parts as one user message, data parts merged into the input. */
function runBody(assistant: Assistant, params: MessageSendParams) {
  const text = params.message.parts.flatMap((part) => (part.kind === 'text' ? [part.text] : [])).join('\n');
  const input: Record<string, unknown> = {};
  for (const part of params.message.parts) if (part.kind === 'data') Object.assign(input, part.data);
  if (text) input.messages = [...((input.messages as unknown[] | undefined) ?? []), { role: params.message.role === 'agent' ? 'assistant' : 'user', content: text }];
  return {
    assistant_id: assistant.assistantId,
    input,
    if_not_exists: 'create' as const,
    metadata: { a2a_message_id: params.message.messageId },
  };
}

/** The text of a message content (a string, or LangChain content blocks). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((block) => (typeof block === 'string' ? block : typeof block?.text === 'string' ? block.text : '')).join('');
}

/** What a finished run gives back: its last AI message as text, else its output as data. */
function artifactOf(runId: string, output: unknown): Artifact | undefined {
  if (!output || typeof output !== 'object' || Array.isArray(output)) return undefined;
  const messages = (output as { messages?: unknown }).messages;
  const ai = Array.isArray(messages)
    ? [...messages].reverse().find((message) => ['ai', 'AIMessage', 'AIMessageChunk'].includes(message?.type) || message?.role === 'assistant')
    : undefined;
  const parts: A2APart[] = ai ? [{ kind: 'text', text: contentText(ai.content) }] : [{ kind: 'data', data: output as Record<string, unknown> }];
  return { artifactId: `${runId}-result`, name: 'Assistant Response', parts };
}

async function taskOf(ctx: AgentServerContext, run: Run): Promise<Task> {
  const task: Task = {
    kind: 'task',
    id: run.runId,
    contextId: run.threadId,
    status: { state: STATES[run.status], timestamp: run.updatedAt.toISOString() },
    metadata: { assistant_id: run.assistantId, graph_status: run.status },
  };
  if (isTerminalStatus(run.status)) {
    const artifact = artifactOf(run.runId, await runResult(ctx, run, run.threadId));
    if (artifact) task.artifacts = [artifact];
  }
  return task;
}

/**
 * message/send: runs the assistant on the message's context (thread) and waits for the run's end;
 * returns the task. VALIDATION_FAILED for malformed params; NOT_FOUND for an unknown assistant.
 */
export async function sendMessage(ctx: AgentServerContext, assistantId: string, input: unknown, signal?: AbortSignal): Promise<Task> {
  const params = parseInput(MessageSendParams, input, 'params');
  const assistant = await getAssistant(ctx, assistantId);
  const threadId = params.message.contextId ?? newId();
  const { run, done } = await createRunAndWait(ctx, threadId, runBody(assistant, params), signal);
  return taskOf(ctx, done ?? run);
}

/**
 * message/stream: starts the run and yields the task (submitted), `working` when the graph starts
 * producing, then the artifact and the final status once the run has ended. Validation and lookup
 * errors are thrown before anything is yielded.
 */
export async function streamMessage(ctx: AgentServerContext, assistantId: string, input: unknown, signal?: AbortSignal): Promise<AsyncIterable<TaskEvent>> {
  const params = parseInput(MessageSendParams, input, 'params');
  const assistant = await getAssistant(ctx, assistantId);
  const threadId = params.message.contextId ?? newId();
  const run = await createRun(ctx, threadId, { ...runBody(assistant, params), stream_mode: ['values'] });
  return (async function* events(): AsyncGenerator<TaskEvent> {
    yield await taskOf(ctx, run);
    const ids = { taskId: run.runId, contextId: run.threadId };
    let working = false;
    for await (const event of streamRun(ctx, run.runId, { modes: ['values'], signal })) {
      if (!working && event.event === 'values') {
        working = true;
        yield { kind: 'status-update', ...ids, status: { state: 'working', timestamp: new Date().toISOString() }, final: false };
      }
    }
    if (signal?.aborted) return;
    const done = (await waitForRun(ctx, run.runId, signal)) ?? run;
    const task = await taskOf(ctx, done);
    for (const artifact of task.artifacts ?? []) yield { kind: 'artifact-update', ...ids, artifact, lastChunk: true };
    yield { kind: 'status-update', ...ids, status: task.status, final: true };
  })();
}

async function assistantRun(ctx: AgentServerContext, assistantId: string, runId: string): Promise<Run> {
  const assistant = await getAssistant(ctx, assistantId);
  const run = await getRun(ctx, null, runId).catch((error: unknown) => {
    throw error instanceof AppError && error.code === 'NOT_FOUND' ? AppError.notFound(TASK_NOT_FOUND) : error;
  });
  // A task is only visible through the agent it was sent to.
  if (run.assistantId !== assistant.assistantId) throw AppError.notFound(TASK_NOT_FOUND);
  return run;
}

/** tasks/get: the task (run) as it stands. NOT_FOUND for an unknown task or one of another assistant. */
export async function getTask(ctx: AgentServerContext, assistantId: string, input: unknown): Promise<Task> {
  const params = parseInput(TaskQueryParams, input, 'params');
  return taskOf(ctx, await assistantRun(ctx, assistantId, params.id));
}

/** tasks/cancel: cancels a task still pending or running. CONFLICT (not cancelable) once it has ended. */
export async function cancelTask(ctx: AgentServerContext, assistantId: string, input: unknown): Promise<Task> {
  const params = parseInput(TaskIdParams, input, 'params');
  const run = await assistantRun(ctx, assistantId, params.id);
  if (isTerminalStatus(run.status)) throw AppError.conflict(TASK_NOT_CANCELABLE);
  await cancelRunIds(ctx, [run.runId], 'interrupt', 'user');
  return { ...(await taskOf(ctx, run)), status: { state: 'canceled', timestamp: new Date().toISOString() } };
}
