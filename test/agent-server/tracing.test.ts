// Agent runs are traced: a run through the official agent-server SDK shows up, as a tree, in the
// deployment's tracing project, readable with the official langsmith SDK.
import { Client as LangSmith } from 'langsmith';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../factories.js';
import { startTestPlatform, type TestPlatform } from '../helpers.js';
import { removeDir, startServe, type ServeProcess } from './serve.js';

let platform: TestPlatform;
let server: ServeProcess;
let tenant: Awaited<ReturnType<typeof buildTenant>>;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  server = await startServe({
    env: { AGENT_SERVER_TRACING: 'true', AGENT_SERVER_TRACE_WORKSPACE_ID: tenant.workspace.id, AGENT_SERVER_TRACING_PROJECT: 'weather-agent' },
  });
}, 90_000);
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
  await platform?.stop();
});

describe('agent runs traced', () => {
  it('records a run as a trace tree (graph, nodes, LLM calls, tool) in the deployment’s project', async () => {
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'agent', { input: { messages: [{ role: 'user', content: 'Weather in Paris?' }] } });
    await server.client.runs.join(thread.thread_id, run.run_id);

    const langsmith = new LangSmith({ apiUrl: platform.url, apiKey: tenant.adminKey });
    const runs = [];
    for await (const traced of langsmith.listRuns({ projectName: 'weather-agent', traceId: run.run_id })) runs.push(traced);

    expect(server.output()).toContain(`Runs are traced into project "weather-agent" of workspace ${tenant.workspace.id}`);
    const root = runs.find((r) => r.id === run.run_id);
    expect(root).toMatchObject({ run_type: 'chain', status: 'success', parent_run_id: null });
    expect(root!.trace_id).toBe(run.run_id);
    expect(runs.every((r) => r.trace_id === run.run_id)).toBe(true);

    const names = runs.map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining(['agent', 'tools', 'get_weather']));
    const llm = runs.filter((r) => r.run_type === 'llm');
    expect(llm.length).toBe(2); // the tool call, then the answer
    const tool = runs.find((r) => r.run_type === 'tool');
    expect(tool!.outputs).toBeDefined();
    expect(JSON.stringify(tool!.outputs)).toContain('It is sunny in Paris.');
    // Every child hangs under the root.
    for (const child of runs.filter((r) => r.id !== run.run_id)) expect(child.parent_run_ids ?? [child.parent_run_id]).toContain(run.run_id);

    // Another organization cannot read the project.
    const outsider = await buildTenant(platform.system);
    const foreign = new LangSmith({ apiUrl: platform.url, apiKey: outsider.adminKey });
    await expect(foreign.readRun(run.run_id)).rejects.toThrow(/404/);
  }, 60_000);
});
