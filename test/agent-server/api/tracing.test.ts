// Agent runs are traced: a run through the official agent-server SDK shows up, as a tree, in the
// deployment's tracing project, readable with the official langsmith SDK. Traces are stored by the
// runtime's batcher after the run is reported done, so readers poll, as a LangSmith user does; a
// SIGTERM under load loses none of them.
import { Client as LangSmith } from 'langsmith';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { atDeployed, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let platform: TestPlatform;
let server: ServeProcess;
let tenant: Awaited<ReturnType<typeof buildTenant>>;

// Serve's tracing settings (AGENT_SERVER_TRACE_*), its log and its SIGTERM: a deployed revision traces
// into its deployment's project with a trace key of its launcher's (test/platform/control-plane/deployed-traces.test.ts).
const serveOnly = describe.skipIf(atDeployed);

beforeAll(async () => {
  if (atDeployed) return;
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

serveOnly('agent runs traced', () => {
  it('records a run as a trace tree (graph, nodes, LLM calls, tool) in the deployment’s project', async () => {
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'agent', { input: { messages: [{ role: 'user', content: 'Weather in Paris?' }] } });
    await server.client.runs.join(thread.thread_id, run.run_id);

    const langsmith = new LangSmith({ apiUrl: platform.url, apiKey: tenant.adminKey });
    // The trace is stored shortly after the run (the batcher's interval): wait for its root's end. Until
    // its first batch is stored, the project itself may not exist yet (the SDK throws "not found").
    const listTrace = async () => {
      const found = [];
      try {
        for await (const traced of langsmith.listRuns({ projectName: 'weather-agent', traceId: run.run_id })) found.push(traced);
      } catch (error) {
        if (!/not found/i.test(String(error))) throw error;
      }
      return found;
    };
    let runs = await listTrace();
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && !runs.some((traced) => traced.id === run.run_id && traced.status === 'success'); ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      runs = await listTrace();
    }

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

serveOnly('agent-run traces at shutdown', () => {
  it('stores, after a SIGTERM under load, exactly one trace for every run that completed', async () => {
    // The batcher never writes on its interval here and holds far more than the runs make before the
    // signal: their traces are stored by the shutdown alone.
    const env = {
      AGENT_SERVER_TRACING: 'true',
      AGENT_SERVER_TRACE_WORKSPACE_ID: tenant.workspace.id,
      AGENT_SERVER_TRACING_PROJECT: 'shutdown-agent',
      AGENT_SERVER_TRACE_FLUSH_MS: '60000',
      AGENT_SERVER_TRACE_QUEUE: '10000',
    };
    const loaded = await startServe({ env });
    let restarted: ServeProcess | undefined;
    try {
      const created: string[] = [];
      let completedBeforeSignal = 0;
      let signalled = false;
      const input = { messages: [{ role: 'user', content: 'Weather in Paris?' }] };
      // 8 clients, each running runs one after another until the server goes away.
      const clients = Array.from({ length: 8 }, async () => {
        while (created.length < 400) {
          try {
            const thread = await loaded.client.threads.create();
            const run = await loaded.client.runs.create(thread.thread_id, 'agent', { input });
            created.push(run.run_id);
            await loaded.client.runs.join(thread.thread_id, run.run_id);
            if (!signalled) completedBeforeSignal++;
          } catch {
            return; // the server stopped
          }
        }
      });
      while (completedBeforeSignal < 12) await new Promise((resolve) => setTimeout(resolve, 20));

      const metrics = await (await fetch(`${loaded.url}/metrics`)).text();
      const queued = Number(/^agent_server_trace_batcher_queued (\d+)/m.exec(metrics)?.[1]);
      expect(queued).toBeGreaterThan(0); // traces waiting in the batcher, none stored yet

      signalled = true;
      expect(await loaded.stop('SIGTERM')).toBe(0);
      await Promise.all(clients);
      restarted = await loaded.restart();

      // Every run that completed (before or during the shutdown) has its trace, once.
      // The runs in its agent server's own database, their traces in the platform's.
      const agentDb = new pg.Client({ connectionString: restarted.databaseUrl });
      await agentDb.connect();
      const { rows: completed } = await agentDb.query<{ id: string }>(`SELECT id FROM agent_runs WHERE id = ANY($1::uuid[]) AND status = 'success'`, [created]).finally(() => agentDb.end());
      expect(completed.length).toBeGreaterThanOrEqual(12);
      const { rows: traces } = await platform.deps.db.pool.query<{ trace_id: string; runs: number; roots: number }>(
        `SELECT trace_id, count(*)::int AS runs, (count(*) FILTER (WHERE parent_run_id IS NULL))::int AS roots FROM trace_runs WHERE trace_id = ANY($1::uuid[]) GROUP BY trace_id`,
        [completed.map((run) => run.id)],
      );
      expect(traces.map((trace) => trace.trace_id).sort()).toEqual(completed.map((run) => run.id).sort());
      // The same graph each time: one root and the same tree, not a part stored twice or missing.
      expect(traces.every((trace) => trace.roots === 1 && trace.runs === traces[0]!.runs)).toBe(true);
      expect(traces[0]!.runs).toBeGreaterThan(5);
    } finally {
      await (restarted ?? loaded).stop();
      removeDir(loaded.dir);
    }
  }, 180_000);
});
