// SDK-shaped trace runs for the ingest benchmarks: 5-run traces (root chain, two nodes, an LLM call, a
// tool) with realistic inputs and outputs, as the langsmith SDK posts them (multipart, gzip).
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { v7 as uuid7 } from 'uuid';

export const RUNS_PER_REQUEST = 100;
export const RUNS_PER_TRACE = 5;

// ───────────────────────────── SDK-shaped runs ─────────────────────────────

const lorem = (words: number, seed: number) =>
  Array.from({ length: words }, (_, i) => ['trace', 'agent', 'tool', 'search', 'answer', 'context', 'model', 'token', 'graph', 'state'][(i * 7 + seed) % 10]).join(' ');

const stamp = (date: Date, id: string) => `${date.toISOString().replace(/[-:.]/g, '').replace('Z', '000Z')}${id}`;

/** One trace as the langsmith SDK posts a finished one: root chain, two nodes, an LLM call, a tool. */
function makeTrace(session: string, t0: number, seed: number): Record<string, unknown>[] {
  const ids = Array.from({ length: RUNS_PER_TRACE }, () => uuid7());
  const [root, planner, executor, llm, tool] = ids as [string, string, string, string, string];
  const starts = [0, 5, 400, 20, 410].map((ms) => new Date(t0 + ms));
  const ends = [900, 390, 880, 380, 870].map((ms) => new Date(t0 + ms).toISOString());
  const order = (i: number, parent?: string) => (parent ? `${stamp(starts[0]!, root)}.${stamp(starts[i]!, ids[i]!)}` : stamp(starts[0]!, root));
  const llmOrder = `${stamp(starts[0]!, root)}.${stamp(starts[1]!, planner)}.${stamp(starts[3]!, llm)}`;
  const toolOrder = `${stamp(starts[0]!, root)}.${stamp(starts[2]!, executor)}.${stamp(starts[4]!, tool)}`;
  const metadata = { user_id: `user-${seed % 50}`, thread_id: `thread-${seed % 200}`, ls_run_depth: 0, revision_id: 'bench' };
  const common = { session_name: session, trace_id: root, tags: ['bench', `shard-${seed % 8}`] };
  const runtime = { library: 'langsmith', runtime: 'nodejs', sdk: 'langsmith-js', sdk_version: '0.12.0' };
  return [
    {
      ...common, id: root, name: 'AgentExecutor', run_type: 'chain', start_time: starts[0]!.toISOString(), end_time: ends[0], dotted_order: order(0),
      inputs: { input: lorem(60, seed), chat_history: [{ role: 'user', content: lorem(30, seed + 1) }, { role: 'assistant', content: lorem(40, seed + 2) }] },
      outputs: { output: lorem(80, seed + 3) }, extra: { metadata, runtime },
    },
    {
      ...common, id: planner, name: 'planner', run_type: 'chain', parent_run_id: root, start_time: starts[1]!.toISOString(), end_time: ends[1], dotted_order: order(1, root),
      inputs: { messages: [{ role: 'user', content: lorem(60, seed + 4) }] }, outputs: { plan: [lorem(12, seed), lorem(12, seed + 5), lorem(12, seed + 6)] },
      extra: { metadata: { ...metadata, langgraph_node: 'planner' }, runtime },
    },
    {
      ...common, id: executor, name: 'executor', run_type: 'chain', parent_run_id: root, start_time: starts[2]!.toISOString(), end_time: ends[2], dotted_order: order(2, root),
      inputs: { step: lorem(12, seed + 7) }, outputs: { result: lorem(50, seed + 8) }, extra: { metadata: { ...metadata, langgraph_node: 'executor' }, runtime },
    },
    {
      ...common, id: llm, name: 'ChatModel', run_type: 'llm', parent_run_id: planner, start_time: starts[3]!.toISOString(), end_time: ends[3], dotted_order: llmOrder,
      inputs: { messages: [[{ lc: 1, type: 'constructor', id: ['langchain_core', 'messages', 'HumanMessage'], kwargs: { content: lorem(90, seed + 9) } }]] },
      outputs: {
        generations: [[{ text: lorem(70, seed + 10), message: { lc: 1, type: 'constructor', id: ['langchain_core', 'messages', 'AIMessage'], kwargs: { content: lorem(70, seed + 10) } } }]],
        usage_metadata: { input_tokens: 420 + (seed % 100), output_tokens: 96 + (seed % 30), total_tokens: 516 + (seed % 100) + (seed % 30) },
      },
      extra: { metadata: { ...metadata, ls_provider: 'openai', ls_model_name: 'gpt-4o-mini', ls_model_type: 'chat' }, invocation_params: { temperature: 0 }, runtime },
      events: [{ name: 'start', time: starts[3]!.toISOString() }, { name: 'new_token', time: new Date(t0 + 120).toISOString(), kwargs: { token: 'The' } }, { name: 'end', time: ends[3] }],
    },
    {
      ...common, id: tool, name: 'web_search', run_type: 'tool', parent_run_id: executor, start_time: starts[4]!.toISOString(), end_time: ends[4], dotted_order: toolOrder,
      inputs: { query: lorem(8, seed + 11) }, outputs: { results: [lorem(25, seed + 12), lorem(25, seed + 13)] }, extra: { metadata, runtime },
    },
  ];
}

/** The SDK's multipart body: post.<id> plus one part per large field, each with `length=N`. */
function multipartBody(runs: Record<string, unknown>[]): { body: Buffer; boundary: string } {
  const boundary = `----LangSmithFormBoundary${randomUUID().replace(/-/g, '')}`;
  const chunks: Buffer[] = [];
  const part = (name: string, data: Buffer) => {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\nContent-Type: application/json; length=${data.length}\r\n\r\n`), data, Buffer.from('\r\n'));
  };
  for (const run of runs) {
    const { inputs, outputs, events, extra, error, serialized, ...main } = run;
    part(`post.${run.id}`, Buffer.from(JSON.stringify(main)));
    for (const [field, value] of Object.entries({ inputs, outputs, events, extra, error, serialized })) {
      if (value !== undefined) part(`post.${run.id}.${field}`, Buffer.from(JSON.stringify(value)));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), boundary };
}

/** `requests` gzipped multipart bodies of RUNS_PER_REQUEST runs; the first run starts `startAgoMs` before now. */
export function makeRequests(session: string, requests: number, seedBase: number, startAgoMs = 3_600_000) {
  const t0 = Date.now() - startAgoMs;
  const out: { body: Buffer; boundary: string; rawBytes: number; runs: Record<string, unknown>[] }[] = [];
  for (let r = 0; r < requests; r++) {
    const runs: Record<string, unknown>[] = [];
    for (let t = 0; t < RUNS_PER_REQUEST / RUNS_PER_TRACE; t++) runs.push(...makeTrace(session, t0 + (r * 20 + t) * 1000, seedBase + r * 20 + t));
    const { body, boundary } = multipartBody(runs);
    out.push({ body: gzipSync(body, { level: 1 }), boundary, rawBytes: body.length, runs });
  }
  return out;
}
