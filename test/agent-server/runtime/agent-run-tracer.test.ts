// An agent run traced in-process, as the runtime does it: a LangGraph graph run with the agent-run
// tracer's callbacks lands, through the runtime's trace batcher and ingest's path, as one trace tree
// (graph → nodes → LLM call) in the deployment's project; a run cut short keeps the part it ran.
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { ChatResult } from '@langchain/core/outputs';
import { Annotation, END, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import type { ServiceContext } from '../../../src/context.js';
import { ensureProject } from '../../../src/platform/services/traces/projects.service.js';
import { queryRuns } from '../../../src/platform/services/traces/queries.service.js';
import { createAgentRunTracer } from '../../../src/agent-server/runtime/agent-run-tracer.js';
import { TraceBatcher } from '../../../src/platform/ingest/trace-batcher.js';
import { startTenantPlatform, type Tenant, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Tenant;
let ctx: ServiceContext;

beforeAll(async () => {
  ({ platform, tenant, ctx } = await startTenantPlatform());
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

function agentGraph(prepare: () => Promise<unknown> = async () => undefined) {
  const State = Annotation.Root({ messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }) });
  const model = new UsageReportingModel({});
  return new StateGraph(State)
    .addNode('prepare', async () => {
      await prepare();
      return { messages: [new HumanMessage('be brief')] };
    })
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addEdge(START, 'prepare')
    .addEdge('prepare', 'agent')
    .addEdge('agent', END)
    .compile();
}

describe('agent-run tracer', () => {
  it('queues an agent run as one trace tree by the run’s end, stored in the deployment’s project', async () => {
    const deployment = `deployment-${newId().slice(-8)}`;
    const project = await ensureProject(ctx, deployment);
    expect((await ensureProject(ctx, deployment)).id).toBe(project.id); // idempotent
    // Written only when told (flush), so the test sees what the run's end left queued.
    const batcher = new TraceBatcher(platform.deps, { capacity: 1000, flushIntervalMs: 60_000 });
    const tracer = createAgentRunTracer(platform.deps, { workspaceId: tenant.workspace.id, apiKeyId: null, userId: tenant.admin.id }, deployment, batcher);
    const runId = newId();
    const tracing = tracer({ runId, threadId: runId, assistantId: runId, graphId: 'agent', deploymentId: runId })!;
    const result = await agentGraph().invoke({ messages: [new HumanMessage('hi')] }, { callbacks: tracing.callbacks, runId });
    expect(result.messages.at(-1)?.content).toBe('hello there');
    await tracing.onEnd?.({ status: 'success' });
    // The whole finished tree is queued once, one insert per traced run (no separate ends to apply).
    const queued = batcher.stats().queued;
    await batcher.flush();

    const { runs } = await queryRuns(ctx, { session: [project.id], limit: 100 });
    expect(queued).toBe(runs.length);
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
    await batcher.close();
  });

  it('keeps the trace of a run cut short, once', async () => {
    const deployment = `deployment-${newId().slice(-8)}`;
    const batcher = new TraceBatcher(platform.deps, { capacity: 1000, flushIntervalMs: 60_000 });
    const tracer = createAgentRunTracer(platform.deps, { workspaceId: tenant.workspace.id }, deployment, batcher);
    const runId = newId();
    const tracing = tracer({ runId, threadId: runId, assistantId: runId, graphId: 'agent', deploymentId: runId })!;
    const controller = new AbortController();
    const graph = agentGraph(async () => {
      controller.abort();
      await new Promise((resolve) => setTimeout(resolve, 10));
    });
    await expect(graph.invoke({ messages: [new HumanMessage('hi')] }, { callbacks: tracing.callbacks, runId, signal: controller.signal })).rejects.toThrow();
    await tracing.onEnd?.({ status: 'interrupted' });
    await batcher.close();

    const { runs } = await queryRuns(ctx, { session: [(await ensureProject(ctx, deployment)).id], limit: 100 });
    expect(runs.filter((run) => run.isRoot).map((run) => run.id)).toEqual([runId]);
    expect(runs.every((run) => run.traceId === runId)).toBe(true);
    expect(runs.some((run) => run.name === 'agent')).toBe(false); // it never ran
  });
});
