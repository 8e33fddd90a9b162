// An agent run traced in-process: a LangGraph graph run with LangChain's tracer pointed at the
// platform's tracing client lands as one trace tree (graph → nodes → LLM call) in the deployment's
// project, through the same ingest path as the SDK.
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { LangChainTracer } from '@langchain/core/tracers/tracer_langchain';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { ChatResult } from '@langchain/core/outputs';
import { Annotation, END, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import type { ServiceContext } from '../../../src/services/context.js';
import { ensureProject } from '../../../src/services/traces/projects.service.js';
import { queryRuns } from '../../../src/services/traces/queries.service.js';
import { createTracingClient } from '../../../src/services/traces/tracing-client.js';
import { authenticateApiKey } from '../../../src/services/tenancy/tenancy.service.js';
import { buildTenant } from '../../factories.js';
import { startTestPlatform, type TestPlatform } from '../../helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let ctx: ServiceContext;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  ctx = { ...platform.deps, viewer: await authenticateApiKey(platform.deps, tenant.adminKey, undefined) };
});
afterAll(() => platform?.stop());

/** A chat model that reports token usage, as provider integrations do. */
class UsageReportingModel extends BaseChatModel {
  _llmType() {
    return 'usage-reporting-fake';
  }
  async _generate(): Promise<ChatResult> {
    const message = new AIMessage({ content: 'hello there', usage_metadata: { input_tokens: 7, output_tokens: 5, total_tokens: 12 } });
    return { generations: [{ text: 'hello there', message }] };
  }
}

function agentGraph() {
  const State = Annotation.Root({ messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }) });
  const model = new UsageReportingModel({});
  return new StateGraph(State)
    .addNode('prepare', async () => ({ messages: [new HumanMessage('be brief')] }))
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addEdge(START, 'prepare')
    .addEdge('prepare', 'agent')
    .addEdge('agent', END)
    .compile();
}

describe('in-process tracing client', () => {
  it('records an agent run as a trace tree in the deployment’s project', async () => {
    const deployment = `deployment-${newId().slice(-8)}`;
    const project = await ensureProject(ctx, deployment);
    expect((await ensureProject(ctx, deployment)).id).toBe(project.id); // idempotent
    const traces = createTracingClient(
      platform.deps,
      { workspaceId: tenant.workspace.id, apiKeyId: null, userId: tenant.admin.id },
      { projectName: deployment, flushDelayMs: 5 },
    );
    const runId = newId();
    const tracer = new LangChainTracer({ client: traces, projectName: deployment });
    const result = await agentGraph().invoke({ messages: [new HumanMessage('hi')] }, { callbacks: [tracer], runId });
    expect(result.messages.at(-1)?.content).toBe('hello there');
    await traces.awaitPendingTraceBatches();

    const { runs } = await queryRuns(ctx, { session: [project.id], limit: 100 });
    const root = runs.find((run) => run.isRoot)!;
    expect(root.id).toBe(runId);
    expect(runs.every((run) => run.traceId === runId && run.status === 'success')).toBe(true);
    const byName = (name: string) => runs.filter((run) => run.name === name);
    const agentNode = byName('agent')[0]!;
    expect(agentNode.parentRunId).toBe(root.id);
    expect(byName('prepare')[0]!.parentRunId).toBe(root.id);
    const llm = runs.find((run) => run.runType === 'llm')!;
    expect(llm.parentRunId).toBe(agentNode.id);
    expect(llm).toMatchObject({ promptTokens: 7, completionTokens: 5, totalTokens: 12 });
    expect(runs.every((run) => run.userId === tenant.admin.id)).toBe(true);
  });
});
