// MCP (Model Context Protocol) over the agent server: each assistant of the deployment is a tool whose
// input schema is its graph's input schema; calling the tool runs the graph as a stateless run and
// waits for its output. Transport-free: the MCP adapter (agent-server/rest/mcp.routes.ts) speaks the
// protocol through the official SDK and calls these.
import { AppError } from '../../../errors.js';
import { getAssistantSchemas, searchAssistants, type Assistant } from '../assistants/assistants.service.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { graphDescriptions } from '../served-deployment/served-deployment.js';
import { runResult } from '../runs/run-follow.service.js';
import { createRunAndWait } from '../runs/runs.service.js';

export type AgentTool = {
  name: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  assistantId: string;
};

// A deployment rarely has more assistants than this; past it, tools/list would grow without bound.
const MAX_TOOLS = 100;

/** Tool names allowed by MCP clients: letters, digits, `_` and `-`, at most 64 characters. */
const toolName = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'assistant';

/**
 * The deployment's assistants as MCP tools, oldest first (so each graph's default assistant keeps its
 * graph's name when a later assistant's name collides with it: the later one is left out).
 */
async function assistantTools(ctx: AgentServerContext): Promise<{ name: string; assistant: Assistant }[]> {
  const { items } = await searchAssistants(ctx, { limit: MAX_TOOLS, sort_by: 'created_at', sort_order: 'asc' });
  const seen = new Set<string>();
  const tools: { name: string; assistant: Assistant }[] = [];
  for (const assistant of items) {
    const name = toolName(assistant.name);
    if (seen.has(name)) continue;
    seen.add(name);
    tools.push({ name, assistant });
  }
  return tools;
}

/**
 * Lists the tools: description from the assistant, else the graph config's description of its graph;
 * input schema from the graph (asked of the runtime; an open object when the graph declares none).
 * UNAVAILABLE when the deployment's runtime is not running.
 */
export async function listAgentTools(ctx: AgentServerContext): Promise<AgentTool[]> {
  const [tools, descriptions] = await Promise.all([assistantTools(ctx), graphDescriptions(ctx, ctx.deployment.deploymentId)]);
  return Promise.all(
    tools.map(async ({ name, assistant }) => {
      const schemas = (await getAssistantSchemas(ctx, assistant.assistantId)) as { input_schema?: Record<string, unknown> | null };
      const input = schemas.input_schema && typeof schemas.input_schema === 'object' ? schemas.input_schema : {};
      return {
        name,
        description: assistant.description ?? descriptions[assistant.graphId] ?? `Runs the "${assistant.graphId}" graph and returns its output.`,
        inputSchema: { ...input, type: 'object' as const },
        assistantId: assistant.assistantId,
      };
    }),
  );
}

/**
 * Calls a tool: a stateless run of its assistant with `args` as input, waited for. Returns the run's
 * output and whether it failed. NOT_FOUND for a name that is no tool; VALIDATION_FAILED for arguments
 * that are not an object.
 */
export async function callAgentTool(
  ctx: AgentServerContext,
  name: string,
  args: unknown,
  signal?: AbortSignal,
): Promise<{ output: unknown; failed: boolean }> {
  const tool = (await assistantTools(ctx)).find((candidate) => candidate.name === name);
  if (!tool) throw AppError.notFound(`Unknown tool: ${name}`);
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
    throw new AppError('VALIDATION_FAILED', 'Tool arguments must be an object.', [{ loc: ['arguments'], msg: 'expected an object', type: 'object_type' }]);
  }
  const { run, done } = await createRunAndWait(ctx, null, { assistant_id: tool.assistant.assistantId, input: args ?? {} }, signal);
  const output = await runResult(ctx, done, run.kwargs.temporary ? null : run.threadId);
  return { output, failed: done?.status !== 'success' };
}
