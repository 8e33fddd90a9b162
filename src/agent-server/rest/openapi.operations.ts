// Every operation of the agent server (`serve`, and each deployment at /deployments/<id>), with the
// zod schemas its services parse. A new routes file exports its operations and joins OPERATIONS below
// in one line; the OpenAPI test fails for a mounted route missing here.
import type { RequestHandler } from 'express';
import { apiReferenceRouter } from '../../http/openapi/reference.routes.js';
import { JsonRpcRequest } from '../services/a2a/a2a.schemas.js';
import { CronCount, CronCreate, CronPatch, CronSearch } from '../services/crons/crons.schemas.js';
import {
  AssistantCountRequest,
  AssistantCreate,
  AssistantLatestVersion,
  AssistantPatch,
  AssistantSearchRequest,
  AssistantVersionsRequest,
} from '../services/assistants/assistants.schemas.js';
import { EventStreamRequest, ProtocolCommand } from '../services/runs/thread-stream.service.js';
import { RunBatchCreate, RunCancelQuery, RunCreate, RunListQuery, RunsCancelRequest } from '../services/runs/runs.schemas.js';
import {
  ThreadCountRequest,
  ThreadCreate,
  ThreadHistoryRequest,
  ThreadPatch,
  ThreadSearchRequest,
  ThreadStateCheckpointRequest,
  ThreadStateUpdate,
} from '../services/threads/threads.schemas.js';
import { StoreItemDelete, StoreItemGetQuery, StoreItemPut, StoreNamespacesRequest, StoreSearchRequest } from '../services/store/store.schemas.js';
import type { Operation, Surface } from '../../http/openapi/document.js';
import { referenceOperations } from '../../http/openapi/reference.routes.js';

const sse = { kind: 'sse', description: 'Server-sent events: one event per stream part, then the end.' } as const;
const empty = { status: 204, kind: 'empty', description: 'Done.' } as const;

const systemOperations: Operation[] = [
  { method: 'get', path: '/ok', tag: 'System', summary: 'Health: 200 while the server and each dependency (postgres, event_bus in `checks`) answer, 503 otherwise' },
  { method: 'get', path: '/info', tag: 'System', summary: 'Server version and feature flags' },
  { method: 'get', path: '/metrics', tag: 'System', summary: 'Prometheus metrics: runs by status, queue depth, run latency, ingested traces', response: { kind: 'text' } },
  {
    method: 'post',
    path: '/internal/platform-calls',
    tag: 'System',
    summary: "The platform's calls on this deployment's resources (its GraphQL's), signed by its gateway: only the platform makes them",
  },
];

const assistantsOperations: Operation[] = [
  { method: 'post', path: '/assistants', tag: 'Assistants', summary: 'Create an assistant', body: AssistantCreate },
  { method: 'post', path: '/assistants/search', tag: 'Assistants', summary: 'Search assistants', body: AssistantSearchRequest },
  { method: 'post', path: '/assistants/count', tag: 'Assistants', summary: 'Count assistants', body: AssistantCountRequest },
  { method: 'get', path: '/assistants/:assistantId', tag: 'Assistants', summary: 'Get an assistant (by id or graph name)' },
  { method: 'patch', path: '/assistants/:assistantId', tag: 'Assistants', summary: 'Update an assistant (a new version)', body: AssistantPatch },
  { method: 'delete', path: '/assistants/:assistantId', tag: 'Assistants', summary: 'Delete an assistant', response: empty },
  { method: 'post', path: '/assistants/:assistantId/latest', tag: 'Assistants', summary: 'Set the active version', body: AssistantLatestVersion },
  { method: 'post', path: '/assistants/:assistantId/versions', tag: 'Assistants', summary: 'List versions', body: AssistantVersionsRequest },
  { method: 'get', path: '/assistants/:assistantId/graph', tag: 'Assistants', summary: "The assistant's graph (nodes and edges)" },
  { method: 'get', path: '/assistants/:assistantId/schemas', tag: 'Assistants', summary: "The graph's input, output, state and config schemas" },
  { method: 'get', path: '/assistants/:assistantId/subgraphs{/:namespace}', tag: 'Assistants', summary: "The graph's subgraphs and their schemas" },
];

const threadsOperations: Operation[] = [
  { method: 'post', path: '/threads', tag: 'Threads', summary: 'Create a thread', body: ThreadCreate },
  { method: 'post', path: '/threads/search', tag: 'Threads', summary: 'Search threads', body: ThreadSearchRequest },
  { method: 'post', path: '/threads/count', tag: 'Threads', summary: 'Count threads', body: ThreadCountRequest },
  { method: 'get', path: '/threads/:threadId', tag: 'Threads', summary: 'Get a thread' },
  { method: 'patch', path: '/threads/:threadId', tag: 'Threads', summary: "Update a thread's metadata", body: ThreadPatch },
  { method: 'delete', path: '/threads/:threadId', tag: 'Threads', summary: 'Delete a thread', response: empty },
  { method: 'post', path: '/threads/:threadId/copy', tag: 'Threads', summary: 'Copy a thread with its history' },
  { method: 'get', path: '/threads/:threadId/state', tag: 'Threads', summary: "The thread's current state" },
  { method: 'post', path: '/threads/:threadId/state', tag: 'Threads', summary: "Update the thread's state", body: ThreadStateUpdate },
  { method: 'post', path: '/threads/:threadId/state/checkpoint', tag: 'Threads', summary: 'The state at a checkpoint', body: ThreadStateCheckpointRequest },
  { method: 'get', path: '/threads/:threadId/state/:checkpointId', tag: 'Threads', summary: 'The state at a checkpoint id' },
  { method: 'get', path: '/threads/:threadId/history', tag: 'Threads', summary: "The thread's past states" },
  { method: 'get', path: '/threads/:threadId/storage', tag: 'Threads', summary: "Bytes the thread's checkpoints occupy, as stored: checkpoints, channel values (by channel), pending writes" },
  { method: 'post', path: '/threads/:threadId/history', tag: 'Threads', summary: "The thread's past states, filtered", body: ThreadHistoryRequest },
  { method: 'get', path: '/threads/:threadId/stream', tag: 'Threads', summary: "Follow the thread's runs", response: sse },
];

// The thread streaming protocol (the SDK's ThreadStream): commands, SSE event streams, a WebSocket.
const threadStreamOperations: Operation[] = [
  {
    method: 'post',
    path: '/threads/:threadId/commands',
    tag: 'Thread stream',
    summary: 'A protocol command ({id, method, params}): run.start (resume, fork with config.configurable.checkpoint_id), input.respond, state.get, agent.getTree',
    body: ProtocolCommand,
  },
  {
    method: 'post',
    path: '/threads/:threadId/stream/events',
    tag: 'Thread stream',
    summary: "The thread's protocol events, filtered by channels, namespaces and depth, replayed after `since`, then live",
    body: EventStreamRequest,
    response: { kind: 'sse', description: 'Server-sent events: `id` the event id, `event` its method, `data` the protocol event; never ends on its own.' },
  },
  {
    method: 'get',
    path: '/threads/:threadId/stream/events',
    tag: 'Thread stream',
    summary: 'WebSocket (Upgrade: websocket): commands in, answers and the events of subscription.subscribe out; without an upgrade, 426',
    response: { status: 426, kind: 'text', description: 'Upgrade Required (the endpoint is a WebSocket).' },
  },
];

const runCreation = (base: string, where: string): Operation[] => [
  { method: 'post', path: base, tag: 'Runs', summary: `Create a background run ${where}`, body: RunCreate },
  { method: 'post', path: `${base}/stream`, tag: 'Runs', summary: `Create a run ${where} and stream its output`, body: RunCreate, response: sse },
  { method: 'post', path: `${base}/wait`, tag: 'Runs', summary: `Create a run ${where} and wait for its result`, body: RunCreate },
];

const runsOperations: Operation[] = [
  ...runCreation('/threads/:threadId/runs', 'on a thread'),
  ...runCreation('/runs', '(stateless)'),
  { method: 'post', path: '/runs/batch', tag: 'Runs', summary: 'Create several stateless runs', body: RunBatchCreate },
  { method: 'post', path: '/runs/cancel', tag: 'Runs', summary: 'Cancel runs by id, thread or status', body: RunsCancelRequest, response: empty },
  { method: 'get', path: '/runs/:runId/stream', tag: 'Runs', summary: "Join a run's stream", response: sse },
  { method: 'get', path: '/threads/:threadId/runs', tag: 'Runs', summary: "List a thread's runs", query: RunListQuery },
  { method: 'get', path: '/threads/:threadId/runs/:runId', tag: 'Runs', summary: 'Get a run' },
  { method: 'delete', path: '/threads/:threadId/runs/:runId', tag: 'Runs', summary: 'Delete a run', response: empty },
  { method: 'get', path: '/threads/:threadId/runs/:runId/join', tag: 'Runs', summary: 'Wait for a run and return its result' },
  { method: 'get', path: '/threads/:threadId/runs/:runId/stream', tag: 'Runs', summary: "Join a thread run's stream", response: sse },
  { method: 'post', path: '/threads/:threadId/runs/:runId/cancel', tag: 'Runs', summary: 'Cancel a run', query: RunCancelQuery, response: empty },
];

const cronsOperations: Operation[] = [
  { method: 'post', path: '/threads/:threadId/runs/crons', tag: 'Crons', summary: 'Create a cron that runs on a thread', body: CronCreate },
  { method: 'post', path: '/runs/crons', tag: 'Crons', summary: 'Create a stateless cron (a new thread each run)', body: CronCreate },
  { method: 'post', path: '/runs/crons/search', tag: 'Crons', summary: 'Search crons', body: CronSearch },
  { method: 'post', path: '/runs/crons/count', tag: 'Crons', summary: 'Count crons', body: CronCount },
  { method: 'patch', path: '/runs/crons/:cronId', tag: 'Crons', summary: 'Update a cron (schedule, end time, enabled, run fields)', body: CronPatch },
  { method: 'delete', path: '/runs/crons/:cronId', tag: 'Crons', summary: 'Delete a cron', response: empty },
];

const storeOperations: Operation[] = [
  { method: 'put', path: '/store/items', tag: 'Store', summary: 'Put an item (with optional TTL in minutes)', body: StoreItemPut, response: empty },
  { method: 'get', path: '/store/items', tag: 'Store', summary: 'Get an item by namespace and key', query: StoreItemGetQuery },
  { method: 'delete', path: '/store/items', tag: 'Store', summary: 'Delete an item', body: StoreItemDelete, response: empty },
  { method: 'post', path: '/store/items/search', tag: 'Store', summary: 'Search items under a namespace prefix', body: StoreSearchRequest },
  { method: 'post', path: '/store/namespaces', tag: 'Store', summary: 'List namespaces', body: StoreNamespacesRequest },
];

const protocolOperations: Operation[] = [
  { method: 'post', path: '/mcp', tag: 'MCP', summary: 'MCP over Streamable HTTP (stateless): each assistant is a tool', body: JsonRpcRequest },
  { method: 'get', path: '/mcp', tag: 'MCP', summary: 'Not served (stateless server): 405', response: { status: 405, kind: 'json' } },
  { method: 'delete', path: '/mcp', tag: 'MCP', summary: 'Not served (stateless server): 405', response: { status: 405, kind: 'json' } },
  {
    method: 'post',
    path: '/a2a/:assistantId',
    tag: 'A2A',
    summary: 'A2A 0.3 JSON-RPC: message/send, message/stream (SSE), tasks/get, tasks/cancel',
    body: JsonRpcRequest,
  },
  { method: 'get', path: '/.well-known/agent-card.json', tag: 'A2A', summary: "An assistant's A2A agent card (?assistant_id=)" },
];

const uiOperations: Operation[] = [
  { method: 'post', path: '/ui/:graphId', tag: 'UI', summary: "A graph's generative UI components (when the graph config has `ui`)", response: { kind: 'html' } },
  { method: 'get', path: '/ui/:graphId/:basename', tag: 'UI', summary: 'A UI bundle file' },
];

const OPERATIONS: Operation[] = [
  ...systemOperations,
  ...assistantsOperations,
  ...threadsOperations,
  ...threadStreamOperations,
  ...runsOperations,
  ...cronsOperations,
  ...storeOperations,
  ...protocolOperations,
  ...uiOperations,
  ...referenceOperations,
];

/** The agent server as a documented surface; `apiKey`: at /deployments/<id>, where callers send x-api-key. */
export const agentServerSurface = (options: { apiKey: boolean }): Surface => ({
  title: 'Agent Platform: agent server',
  version: '0.1.0',
  description:
    'The LangGraph agent server API (what the official `@langchain/langgraph-sdk` calls): assistants, threads, runs, crons, store, MCP, A2A and system endpoints. ' +
    'Served by `agent-platform serve` at its root and for each deployment at `/deployments/<id>`.',
  tags: [
    { name: 'Assistants', description: 'A graph plus configuration, versioned.' },
    { name: 'Threads', description: 'Conversations and their checkpointed state.' },
    { name: 'Thread stream', description: 'The thread streaming protocol (v2) of the SDK’s ThreadStream, over SSE and WebSocket.' },
    { name: 'Runs', description: "Invocations of an assistant's graph." },
    { name: 'Crons', description: 'Runs on a schedule, durable on PostgreSQL.' },
    { name: 'Store', description: 'Long-term memory shared with the graphs.' },
    { name: 'MCP', description: 'Model Context Protocol over Streamable HTTP.' },
    { name: 'A2A', description: 'Agent-to-agent protocol (0.3) over JSON-RPC.' },
    { name: 'UI', description: 'Generative UI bundles.' },
    { name: 'System', description: 'Health, info, metrics and this reference.' },
  ],
  operations: OPERATIONS,
  ...(options.apiKey ? { apiKeyHeader: 'x-api-key' } : {}),
});

/**
 * The agent server's API reference (/docs, /openapi.json) as a platform serves it at every
 * deployment's url, before and while its agent server runs: the same document, which names no
 * deployment's data, with the platform's API key as its credential.
 */
export const agentServerReference = (): RequestHandler => apiReferenceRouter(agentServerSurface({ apiKey: true }));
