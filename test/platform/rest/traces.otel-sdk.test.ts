// The langsmith SDK in its OpenTelemetry mode (`tracingMode: 'otel'`, what LANGSMITH_TRACING_MODE=otel or
// the older LANGSMITH_OTEL_ENABLED=true select), set up with its own initializeOTEL and exporter pointed
// at the platform's /otel/v1/traces: a traced pipeline comes back as runs with the right tree, names,
// run types, tokens and project. In that mode the SDK sends no multipart at all: its runs become spans
// (langsmith.* and gen_ai.* attributes) exported as OTLP protobuf by a BatchSpanProcessor. In a file of
// its own: initializeOTEL sets OpenTelemetry's global tracer provider and context manager.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
const tracingBefore = process.env.LANGSMITH_TRACING;
let shutdown: (() => Promise<void>) | undefined;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  // The SDK's OTLP exporter sends nothing unless tracing is on in the environment.
  process.env.LANGSMITH_TRACING = 'true';
});
afterAll(async () => {
  await shutdown?.();
  if (tracingBefore === undefined) delete process.env.LANGSMITH_TRACING;
  else process.env.LANGSMITH_TRACING = tracingBefore;
  await platform?.stop();
});

type Run = Record<string, any>;

async function runsOf(projectName: string): Promise<Run[]> {
  const call = async (path: string, body?: unknown) =>
    (await fetch(`${platform.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })).json();
  const [project] = await call(`/sessions?name=${encodeURIComponent(projectName)}`);
  if (!project) return [];
  return (await call('/runs/query', { session: [project.id], limit: 100 })).runs;
}

it("sends a traced pipeline through the SDK's OpenTelemetry mode as one tree of runs in its project", async () => {
  const { initializeOTEL } = await import('langsmith/experimental/otel/setup');
  const { Client } = await import('langsmith');
  const { traceable } = await import('langsmith/traceable');
  const projectName = `sdk-otel-${randomUUID().slice(0, 8)}`;
  const otel = initializeOTEL({ exporterConfig: { url: `${platform.url}/otel/v1/traces`, headers: { 'x-api-key': tenant.adminKey } } });
  shutdown = () => otel.DEFAULT_LANGSMITH_SPAN_PROCESSOR.shutdown();
  // No request of the SDK's own wire reaches the platform in this mode: any would be recorded here.
  const direct: string[] = [];
  const client = new Client({
    apiUrl: platform.url,
    apiKey: tenant.adminKey,
    tracingMode: 'otel',
    fetchImplementation: (async (input: RequestInfo | URL, init?: RequestInit) => {
      direct.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
      return fetch(input, init);
    }) as typeof fetch,
  });
  const config = { client, project_name: projectName, tracingEnabled: true };
  const search = traceable(async (query: string) => [`doc about ${query}`], { ...config, name: 'search', run_type: 'tool' });
  const llm = traceable(
    async (prompt: string) => ({ content: `answer to ${prompt}`, usage_metadata: { input_tokens: 12, output_tokens: 30, total_tokens: 42 } }),
    { ...config, name: 'fake-llm', run_type: 'llm', metadata: { ls_model_name: 'fake-1', ls_provider: 'openai' } },
  );
  const agent = traceable(
    async (question: string) => {
      const docs = await search(question);
      return { answer: (await llm(`${docs.join(' ')} ${question}`)).content };
    },
    { ...config, name: 'agent', run_type: 'chain', tags: ['otel-mode'], metadata: { customer: 'acme' } },
  );

  expect(await agent('why?')).toEqual({ answer: 'answer to doc about why? why?' });
  await client.awaitPendingTraceBatches();
  // The SDK's BatchSpanProcessor exports on a timer: flush it now.
  await otel.DEFAULT_LANGSMITH_SPAN_PROCESSOR.forceFlush();

  const runs = await runsOf(projectName);
  expect(runs.map((run) => run.name).sort()).toEqual(['agent', 'fake-llm', 'search']);
  const byName = Object.fromEntries(runs.map((run) => [run.name, run]));
  const root = byName.agent!;
  expect([root.parent_run_id, root.trace_id]).toEqual([null, root.id]);
  for (const child of [byName.search!, byName['fake-llm']!]) {
    expect([child.parent_run_id, child.trace_id, child.parent_run_ids]).toEqual([root.id, root.id, [root.id]]);
    expect(child.dotted_order.startsWith(`${root.dotted_order}.`)).toBe(true);
  }
  expect([root.run_type, byName.search!.run_type, byName['fake-llm']!.run_type]).toEqual(['chain', 'tool', 'llm']);
  expect(runs.every((run) => run.status === 'success')).toBe(true);
  expect(root.inputs).toEqual({ input: 'why?' });
  expect(root.outputs).toEqual({ answer: 'answer to doc about why? why?' });
  expect(root.tags).toEqual(['otel-mode']);
  expect(root.extra.metadata.customer).toBe('acme');
  const llmRun = byName['fake-llm']!;
  expect([llmRun.prompt_tokens, llmRun.completion_tokens, llmRun.total_tokens]).toEqual([12, 30, 42]);
  expect(llmRun.extra.metadata).toMatchObject({ ls_model_name: 'fake-1' });
  expect(direct.filter((request) => /\/runs/.test(request))).toEqual([]);
});
