// Input schemas of the A2A (agent-to-agent, protocol 0.3) JSON-RPC methods the agent server answers.
import { z } from 'zod';

const Metadata = z.record(z.string(), z.unknown());

const TextPart = z.object({ kind: z.literal('text'), text: z.string(), metadata: Metadata.nullish() });
const DataPart = z.object({ kind: z.literal('data'), data: z.record(z.string(), z.unknown()), metadata: Metadata.nullish() });
const Part = z.discriminatedUnion('kind', [TextPart, DataPart], {
  error: 'expected a text part ({"kind": "text", "text": …}) or a data part ({"kind": "data", "data": {…}}); file parts are not supported',
});

const A2AMessage = z.object({
  kind: z.literal('message').optional(),
  messageId: z.string().min(1),
  role: z.enum(['user', 'agent']),
  parts: z.array(Part).min(1).max(100),
  /** The conversation: maps to a thread of the deployment (a new one when absent). */
  contextId: z.uuid().nullish(),
  taskId: z.string().nullish(),
  metadata: Metadata.nullish(),
});

export const MessageSendParams = z.object({
  message: A2AMessage,
  configuration: z.object({ blocking: z.boolean().nullish(), historyLength: z.number().int().min(0).nullish() }).passthrough().nullish(),
  metadata: Metadata.nullish(),
});
export type MessageSendParams = z.output<typeof MessageSendParams>;

export const TaskQueryParams = z.object({ id: z.uuid(), historyLength: z.number().int().min(0).nullish(), metadata: Metadata.nullish() });
export const TaskIdParams = z.object({ id: z.uuid(), metadata: Metadata.nullish() });

/** The JSON-RPC 2.0 envelope of a request. */
export const JsonRpcRequest = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number().int(), z.null()]).optional(),
  method: z.string().min(1),
  params: z.unknown().optional(),
});
