// Token and cost roll-ups as LangSmith shows them: a run's total, prompt and completion tokens and
// costs include its descendants' (only LLM runs have usage of their own), kept current whatever order
// runs and patches arrive in, through the official langsmith SDK (multipart batches and POST/PATCH
// /runs) and OTLP (children before their parents, adopted when those come), and read back through the SDK's read endpoints and GraphQL. Re-sent runs and patches add
// nothing twice.
import { randomUUID } from 'node:crypto';
import { Client, type Run } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dottedOrderSegment } from '../../../src/platform/ingest/derive.js';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
});
afterAll(() => platform?.stop());

const T0 = Date.parse('2026-03-10T09:00:00Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

/** A run of a trace: its place (trace id, dotted order) from its ancestors, as the SDK's RunTree makes it. */
type Node = { id: string; startTime: string; dottedOrder: string; traceId: string };
function node(parent: Node | null, offsetMs: number): Node {
  const id = randomUUID();
  const startTime = at(offsetMs);
  const segment = dottedOrderSegment(startTime, id);
  return { id, startTime, dottedOrder: parent ? `${parent.dottedOrder}.${segment}` : segment, traceId: parent?.traceId ?? id };
}

const usage = (input: number, output: number, cost?: [number, number]) => ({
  usage_metadata: { input_tokens: input, output_tokens: output, total_tokens: input + output, ...(cost ? { input_cost: cost[0], output_cost: cost[1] } : {}) },
});

const direct = () => new Client({ apiUrl: platform.url, apiKey: tenant.adminKey, autoBatchTracing: false });

function clients() {
  // Multipart batches (the SDK's default with trace ids and dotted orders), and one request per call.
  const batched = new Client({ apiUrl: platform.url, apiKey: tenant.adminKey, autoBatchTracing: true });
  const direct = new Client({ apiUrl: platform.url, apiKey: tenant.adminKey, autoBatchTracing: false });
  return { batched, direct };
}

function create(client: Client, project: string, run: Node, parent: Node | null, fields: { name: string; run_type: string; outputs?: Record<string, unknown>; end?: number }) {
  return client.createRun({
    id: run.id,
    name: fields.name,
    run_type: fields.run_type,
    inputs: { q: fields.name },
    start_time: run.startTime,
    ...(fields.end !== undefined ? { end_time: at(fields.end) } : {}),
    ...(fields.outputs ? { outputs: fields.outputs } : {}),
    parent_run_id: parent?.id,
    trace_id: run.traceId,
    dotted_order: run.dottedOrder,
    project_name: project,
  });
}

// The SDK's Run type has no cost fields; LangSmith's run objects (and this platform's) do.
type Costed = Run & { total_cost?: number | string | null; prompt_cost?: number | string | null; completion_cost?: number | string | null };
const money = (value: number | string | null | undefined) => (value === null || value === undefined ? null : Number(value));
const totals = (run: Costed) => ({
  total_tokens: run.total_tokens ?? null,
  prompt_tokens: run.prompt_tokens ?? null,
  completion_tokens: run.completion_tokens ?? null,
  total_cost: money(run.total_cost),
  prompt_cost: money(run.prompt_cost),
  completion_cost: money(run.completion_cost),
});

describe('token and cost roll-ups', () => {
  it('sums LLM descendants into parents and the root, children before and after parents, late patches, re-sends', async () => {
    const project = `rollups-${randomUUID().slice(0, 8)}`;
    const { batched, direct } = clients();
    const root = node(null, 0);
    const mid = node(root, 10);
    const first = node(mid, 20);
    const second = node(root, 500);
    const third = node(mid, 700);

    // The deepest LLM run first, alone in its batch: neither its parent nor the root is stored yet.
    await create(batched, project, first, mid, { name: 'llm-1', run_type: 'llm', end: 400, outputs: usage(10, 5, [0.01, 0.02]) });
    await batched.awaitPendingTraceBatches();
    // Then the root, then its child chain: each finds what its descendants left for it.
    await create(batched, project, root, null, { name: 'agent', run_type: 'chain' });
    await batched.awaitPendingTraceBatches();
    await create(batched, project, mid, root, { name: 'step', run_type: 'chain', end: 450 });
    await batched.awaitPendingTraceBatches();

    const read = async (id: string) => totals(await direct.readRun(id));
    expect(await read(root.id)).toEqual({ total_tokens: 15, prompt_tokens: 10, completion_tokens: 5, total_cost: 0.03, prompt_cost: 0.01, completion_cost: 0.02 });
    expect(await read(mid.id)).toEqual(await read(root.id));
    expect(await read(first.id)).toEqual(await read(root.id));

    // An LLM run posted after its parents without usage, which a later PATCH adds (POST and PATCH /runs).
    await create(direct, project, second, root, { name: 'llm-2', run_type: 'llm' });
    expect((await read(root.id)).total_tokens).toBe(15);
    await direct.updateRun(second.id, { end_time: at(600), outputs: usage(3, 4), trace_id: root.id, dotted_order: second.dottedOrder });
    expect(await read(root.id)).toMatchObject({ total_tokens: 22, prompt_tokens: 13, completion_tokens: 9, total_cost: 0.03 });
    expect((await read(mid.id)).total_tokens).toBe(15);

    // Re-sent: the same post (a duplicate, stored once) and the same patch add nothing.
    await create(batched, project, first, mid, { name: 'llm-1', run_type: 'llm', end: 400, outputs: usage(10, 5, [0.01, 0.02]) });
    await batched.awaitPendingTraceBatches();
    await direct.updateRun(second.id, { end_time: at(600), outputs: usage(3, 4), trace_id: root.id, dotted_order: second.dottedOrder });
    expect(await read(root.id)).toMatchObject({ total_tokens: 22, prompt_tokens: 13, completion_tokens: 9 });
    // A patch that corrects the usage passes on the difference only.
    await direct.updateRun(second.id, { end_time: at(600), outputs: usage(3, 6), trace_id: root.id, dotted_order: second.dottedOrder });
    expect(await read(root.id)).toMatchObject({ total_tokens: 24, prompt_tokens: 13, completion_tokens: 11 });
    expect(await read(second.id)).toMatchObject({ total_tokens: 9, prompt_tokens: 3, completion_tokens: 6 });

    // A patch before its post (kept, merged when the post comes), in one multipart batch of the SDK.
    await batched.updateRun(third.id, { end_time: at(800), outputs: usage(1, 1), trace_id: root.id, dotted_order: third.dottedOrder });
    await batched.awaitPendingTraceBatches();
    await create(batched, project, third, mid, { name: 'llm-3', run_type: 'llm' });
    await batched.awaitPendingTraceBatches();
    expect(await read(third.id)).toMatchObject({ total_tokens: 2 });
    expect(await read(mid.id)).toMatchObject({ total_tokens: 17, prompt_tokens: 11, completion_tokens: 6 });
    expect(await read(root.id)).toMatchObject({ total_tokens: 26, prompt_tokens: 14, completion_tokens: 12, total_cost: 0.03 });

    // listRuns (POST /runs/query) returns the same totals, and the filter language reads them.
    const roots: Run[] = [];
    for await (const run of direct.listRuns({ projectName: project, isRoot: true })) roots.push(run);
    expect(roots.map((run) => [run.id, run.total_tokens, run.prompt_tokens, run.completion_tokens])).toEqual([[root.id, 26, 14, 12]]);
    const big: string[] = [];
    for await (const run of direct.listRuns({ projectName: project, filter: 'gte(total_tokens, 17)' })) big.push(run.name);
    expect(big.sort()).toEqual(['agent', 'step']);

    // GraphQL: the trace list's root and the trace's runs.
    const { rows } = await platform.deps.db.pool.query('SELECT id FROM tracing_projects WHERE workspace_id = $1 AND name = $2', [tenant.workspace.id, project]);
    const list = await graphql(platform.url, 'query($p: ID!) { runs(projectId: $p, isRoot: true) { edges { node { id totalTokens promptTokens completionTokens totalCost } } } }', {
      key: tenant.adminKey,
      variables: { p: rows[0].id },
    });
    expect(list.body.errors).toBeUndefined();
    expect(list.body.data.runs.edges.map((edge: { node: unknown }) => edge.node)).toEqual([{ id: root.id, totalTokens: 26, promptTokens: 14, completionTokens: 12, totalCost: 0.03 }]);
    const trace = await graphql(platform.url, 'query($t: ID!) { traceRuns(traceId: $t) { name totalTokens } }', { key: tenant.adminKey, variables: { t: root.id } });
    expect(trace.body.errors).toBeUndefined();
    expect(Object.fromEntries(trace.body.data.traceRuns.map((run: { name: string; totalTokens: number }) => [run.name, run.totalTokens]))).toEqual({
      agent: 26,
      step: 17,
      'llm-1': 15,
      'llm-2': 9,
      'llm-3': 2,
    });
  });

  it('keeps a run’s roll-up within one trace and counts only LLM runs’ own usage', async () => {
    const project = `rollups-${randomUUID().slice(0, 8)}`;
    const { batched, direct } = clients();
    const root = node(null, 0);
    const tool = node(root, 10);
    const llm = node(tool, 20);
    const other = node(null, 5);
    // A tool run's outputs that look like usage are not usage: only LLM runs have their own.
    await create(batched, project, root, null, { name: 'agent', run_type: 'chain', end: 900 });
    await create(batched, project, tool, root, { name: 'tool', run_type: 'tool', end: 800, outputs: usage(100, 100) });
    await create(batched, project, llm, tool, { name: 'model', run_type: 'llm', end: 700, outputs: usage(4, 2) });
    await create(batched, project, other, null, { name: 'other', run_type: 'chain', end: 100 });
    await batched.awaitPendingTraceBatches();
    expect((await direct.readRun(root.id)).total_tokens).toBe(6);
    expect((await direct.readRun(tool.id)).total_tokens).toBe(6);
    expect((await direct.readRun(other.id)).total_tokens ?? null).toBeNull();
  });

  it('adds usage into ancestors written by the same request, re-sent runs beside them counted once', async () => {
    const project = `rollups-batch-${randomUUID().slice(0, 8)}`;
    // A request that re-sends a stored run answers 409 naming it, and stores the rest.
    const post = async (runs: [Node, Node | null, string, Record<string, unknown>?][], resent?: Node) => {
      const response = await fetch(`${platform.url}/runs/batch`, {
        method: 'POST',
        headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json' },
        body: JSON.stringify({
          post: runs.map(([run, parent, runType, outputs]) => ({
            id: run.id, name: runType, run_type: runType, inputs: {}, start_time: run.startTime, end_time: at(900), session_name: project,
            trace_id: run.traceId, dotted_order: run.dottedOrder, ...(parent ? { parent_run_id: parent.id } : {}), ...(outputs ? { outputs } : {}),
          })),
        }),
      });
      const text = await response.text();
      if (resent) expect([response.status, text]).toEqual([409, expect.stringContaining(resent.id)]);
      else expect(response.status, text).toBeLessThan(300);
    };
    const tokens = async (id: string) => (await direct().readRun(id)).total_tokens ?? null;

    // A whole trace in one request: the LLM runs' usage is in their ancestors' totals as they are written.
    const root = node(null, 0);
    const step = node(root, 10);
    const model = node(step, 20);
    const other = node(root, 30);
    await post([[root, null, 'chain'], [step, root, 'chain'], [model, step, 'llm', usage(10, 5)], [other, root, 'llm', usage(1, 2)]]);
    expect([await tokens(root.id), await tokens(step.id), await tokens(model.id), await tokens(other.id)]).toEqual([18, 15, 15, 3]);
    // Its own usage stays its own: a patch of the model's usage passes on the difference only.
    await direct().updateRun(model.id, { end_time: at(950), outputs: usage(10, 7), trace_id: root.id, dotted_order: model.dottedOrder });
    expect([await tokens(root.id), await tokens(step.id), await tokens(model.id)]).toEqual([20, 17, 17]);

    // An LLM run stored before its parent, re-sent with the parent: the parent counts it once.
    const parent = node(null, 100);
    const early = node(parent, 110);
    await post([[early, parent, 'llm', usage(4, 4)]]);
    await post([[parent, null, 'chain'], [early, parent, 'llm', usage(4, 4)]], early);
    expect([await tokens(parent.id), await tokens(early.id)]).toEqual([8, 8]);

    // A stored root re-sent with a new LLM run under it: the stored root gets the run's usage.
    const stored = node(null, 200);
    const late = node(stored, 210);
    await post([[stored, null, 'chain']]);
    await post([[stored, null, 'chain'], [late, stored, 'llm', usage(2, 1)]], stored);
    expect([await tokens(stored.id), await tokens(late.id)]).toEqual([3, 3]);
  });

  it('rolls OTLP spans up in any order, through parents stored after their children', async () => {
    const project = `rollups-otlp-${randomUUID().slice(0, 8)}`;
    const hex = (bytes: number) => randomUUID().replaceAll('-', '').slice(0, bytes * 2);
    const nanos = (ms: number) => String(BigInt(T0 + ms) * 1_000_000n);
    const attribute = (key: string, value: string | number) => ({ key, value: typeof value === 'number' ? { intValue: value } : { stringValue: value } });
    const post = async (spans: unknown[]) => {
      const response = await fetch(`${platform.url}/otel/v1/traces`, {
        method: 'POST',
        headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json', 'langsmith-project': project },
        body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 't' }, spans }] }] }),
      });
      expect(response.status, await response.text()).toBe(200);
    };
    /** agent → step → two chat spans (3+4 and 5+6 tokens); span ids are run ids' last 8 bytes. */
    const trace = () => {
      const traceId = hex(16);
      const span = (name: string, kind: string, parent: { spanId: string } | null, offset: number, tokens?: [number, number]) => ({
        traceId,
        spanId: hex(8),
        ...(parent ? { parentSpanId: parent.spanId } : {}),
        name,
        kind: 1,
        startTimeUnixNano: nanos(offset),
        endTimeUnixNano: nanos(offset + 50),
        attributes: [
          attribute('langsmith.span.kind', kind),
          ...(tokens ? [attribute('gen_ai.usage.input_tokens', tokens[0]), attribute('gen_ai.usage.output_tokens', tokens[1])] : []),
        ],
      });
      const root = span('agent', 'chain', null, 0);
      const step = span('step', 'chain', root, 10);
      return { root, step, chat1: span('chat', 'llm', step, 20, [3, 4]), chat2: span('chat', 'llm', step, 30, [5, 6]) };
    };
    const orders: ((t: ReturnType<typeof trace>) => unknown[][])[] = [
      (t) => [[t.chat1], [t.chat2], [t.step], [t.root]], // leaves first, each alone: adoption twice
      (t) => [[t.chat1, t.step], [t.root, t.chat2]], // mixed within and across requests
      (t) => [[t.root], [t.step], [t.chat1, t.chat2]], // parents first
      (t) => [[t.step], [t.root], [t.chat1], [t.chat2], [t.chat1]], // a chat span re-sent
    ];
    const traces = orders.map(() => trace());
    for (const [index, order] of orders.entries()) for (const request of order(traces[index]!)) await post(request);

    const roots: Run[] = [];
    for await (const run of direct().listRuns({ projectName: project, isRoot: true })) roots.push(run);
    expect(roots.map((run) => [run.name, run.total_tokens, run.prompt_tokens, run.completion_tokens])).toEqual(orders.map(() => ['agent', 18, 8, 10]));
    const steps: Run[] = [];
    for await (const run of direct().listRuns({ projectName: project, filter: 'eq(name, "step")' })) steps.push(run);
    expect(steps.map((run) => run.total_tokens)).toEqual(orders.map(() => 18));
  });
});
