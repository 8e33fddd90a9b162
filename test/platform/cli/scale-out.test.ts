// Scale out, shown: two `start --role api` and two `start --role worker` processes on one external
// PostgreSQL, behind no balancer. A deployment made through one api process deploys (its build job
// runs once, on one worker; one agent server serves it), and every surface answers alike from either
// api process: the control plane, the gateway's runs and streams, trace ingest and reads, usage and a
// bulk export whose job runs once (one file per export run, nothing written twice).
import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import { Client as LangSmith } from 'langsmith';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Api, controlPlaneApi, deploymentBody, echoGraph, makeGitRepo, waitForDeployed } from '../../support/deployments.js';
import { listKeys, type S3Server, startS3 } from '../../support/exports.js';
import { startBalancer } from '../../support/balancer.js';
import { adminLoginUrl, databaseUrl, graphql } from '../../support/helpers.js';
import { type PlatformProcess, spawnPlatform } from '../../support/processes.js';

const env = {
  DATABASE_URL: databaseUrl(),
  AGENT_PLATFORM_ADMIN_DATABASE_URL: adminLoginUrl(),
  // One installation: every process seals and reads secrets with the same key.
  AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
  AGENT_PLATFORM_DATA_DIR: inject('dataDir'),
  AGENT_PLATFORM_CONTROL_PLANE_WORKER: 'true',
  AGENT_PLATFORM_INGEST_THREADS: '1',
  // On SIGTERM an api process serves on for a while as not ready, closing each connection after its answer.
  AGENT_PLATFORM_SHUTDOWN_DRAIN_SECONDS: '6',
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
};
const WORKER_READY = /(Agent Platform is running) \(roles: worker/;

let apis: PlatformProcess[] = [];
let workers: PlatformProcess[] = [];
let s3: S3Server;
let key: string;
let workspaceId: string;

beforeAll(async () => {
  s3 = await startS3();
  // The first api process makes the installation's first tenant and key (its database is new).
  const first = await spawnPlatform(['start', '--role', 'api', '--port', '0'], env, 150_000);
  apis = [first];
  key = /^API key: (\S+)$/m.exec(first.output())![1]!;
  const [second, ...started] = await Promise.all([
    spawnPlatform(['start', '--role', 'api', '--port', '0'], env, 150_000),
    spawnPlatform(['start', '--role', 'worker'], env, 150_000, WORKER_READY),
    spawnPlatform(['start', '--role', 'worker'], env, 150_000, WORKER_READY),
  ]);
  apis.push(second);
  workers = started;
  workspaceId = (await graphql(second.url, '{ viewer { workspaces { id } } }', { key })).body.data.viewer.workspaces[0].id;
}, 240_000);
afterAll(async () => {
  await Promise.all([...workers, ...apis].map((process) => process.stop()));
  await s3?.stop();
});

const controlPlane = (index: number): Api => controlPlaneApi(apis[index]!.url, { key, tenant: workspaceId });

async function rest(index: number, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${apis[index]!.url}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, 'x-tenant-id': workspaceId, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  expect(response.status, JSON.stringify(json)).toBe(200);
  return json;
}

/** What the test's clients met during a roll, printed with its counts: statuses the SDK retried, by status. */
function retriedStatuses(): { seen: Record<string, number>; hook: (response?: Response) => Promise<boolean> } {
  const seen: Record<string, number> = {};
  return {
    seen,
    hook: async (response?: Response) => {
      const status = String(response?.status ?? 'no answer');
      seen[status] = (seen[status] ?? 0) + 1;
      return false;
    },
  };
}

async function onDatabase<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

describe('two api and two worker processes on one PostgreSQL', () => {
  it('deploy through one api, run and stream through either, one agent server, one build', async () => {
    const created = await controlPlane(0)('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(echoGraph('v1')).url, { name: 'scaled' }) });
    expect(created.status).toBe(201);
    const deploymentId: string = created.body.id;
    // Followed through the other api process.
    await waitForDeployed(controlPlane(1), deploymentId, created.body.latest_revision_id);

    const [a, b] = apis.map((api) => new Client({ apiUrl: `${api.url}/deployments/${deploymentId}`, defaultHeaders: { 'x-api-key': key } }));
    const thread = await a!.threads.create();
    const run = await a!.runs.create(thread.thread_id, 'agent', { input: { input: 'from a' } });
    // Its stream joined through the other api process, from the start.
    const events = [];
    for await (const part of b!.runs.joinStream(thread.thread_id, run.run_id)) events.push(part.event);
    expect(events).toContain('values');
    expect((await b!.threads.getState(thread.thread_id)).values).toMatchObject({ reply: 'v1: from a' });
    expect(await b!.runs.wait(thread.thread_id, 'agent', { input: { input: 'from b' } })).toMatchObject({ reply: 'v1: from b' });

    const counts = await onDatabase(async (client) => ({
      // One agent server serves it, on one of the two workers.
      runtimes: (await client.query('SELECT count(*)::int AS n FROM deployment_runtimes WHERE deployment_id = $1', [deploymentId])).rows[0].n,
      // Its revision was built and deployed once: one job of each, completed (by either worker).
      jobs: (await client.query(`SELECT name, state FROM pgboss.job WHERE name IN ('revisions.build', 'revisions.deploy') AND data->>'revisionId' = $1 ORDER BY name`, [created.body.latest_revision_id])).rows,
    }));
    expect(counts.runtimes).toBe(1);
    expect(counts.jobs).toEqual([{ name: 'revisions.build', state: 'completed' }, { name: 'revisions.deploy', state: 'completed' }]);
  }, 300_000);

  it('replacing the workers one at a time while clients run: the deployment is handed over, no request fails, no run is lost', async () => {
    const created = await controlPlane(1)('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(echoGraph('v2')).url, { name: 'rolled' }) });
    await waitForDeployed(controlPlane(0), created.body.id, created.body.latest_revision_id);
    // The SDK as users have it: it retries what a gateway answers while a deployment moves (503).
    const retried = retriedStatuses();
    const client = new Client({ apiUrl: `${apis[0]!.url}/deployments/${created.body.id}`, defaultHeaders: { 'x-api-key': key }, callerOptions: { onFailedResponseHook: retried.hook } });
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'agent', { input: { input: 'before' } });

    const outcomes: string[] = [];
    let running = true;
    const threads: string[] = [];
    const traffic = (async () => {
      for (let i = 0; running; i++) {
        const other = await client.threads.create().catch((error: Error) => error);
        if (other instanceof Error) {
          outcomes.push(`create failed: ${other.message}`);
          continue;
        }
        threads.push(other.thread_id);
        // In turn a runs.wait, and a background run then joined. A stopping agent server answers the
        // waits and joins it holds once their runs end (wherever they run) rather than cut them: a
        // runs.wait asked again would start its run a second time.
        const input = { input: `during ${i}` };
        const state = await (i % 2
          ? client.runs.create(other.thread_id, 'agent', { input }).then((run) => client.runs.join(other.thread_id, run.run_id))
          : client.runs.wait(other.thread_id, 'agent', { input })
        ).catch((error: Error) => error);
        outcomes.push(state instanceof Error ? `run failed: ${state.message}` : (state as { reply: string }).reply === `v2: during ${i}` ? 'ok' : `wrong: ${JSON.stringify(state)}`);
      }
    })();
    const servedSince = () => outcomes.length;
    // Runs that outlast the stopping agent server's drain (8 s), each waited for from before a stop:
    // the run is cut short there, executed again by the agent server taking over, and the wait, held
    // by the stopping one meanwhile, answers its end.
    const long: Promise<unknown>[] = [];
    for (const index of [0, 1]) {
      const before = servedSince();
      const longThread = await client.threads.create();
      threads.push(longThread.thread_id);
      long.push(client.runs.wait(longThread.thread_id, 'agent', { input: { input: 'sleep 12000' } }).catch((error: Error) => error));
      // The run is under way before the stop.
      await expect.poll(async () => (await client.runs.list(longThread.thread_id)).map((run) => run.status), { timeout: 10_000, interval: 100 }).toEqual(['running']);
      // SIGTERM: the worker offers its agent servers to the other, which loads them and serves them
      // as soon as this one's runtime has let go (its agent server answering what it holds meanwhile).
      expect(await workers[index]!.stop()).toBe(0);
      await expect.poll(servedSince, { timeout: 90_000, interval: 200 }).toBeGreaterThan(before + 2);
      workers[index] = await spawnPlatform(['start', '--role', 'worker'], env, 150_000, WORKER_READY);
    }
    running = false;
    await traffic;
    expect(await Promise.all(long)).toEqual([expect.objectContaining({ reply: 'v2: sleep 12000' }), expect.objectContaining({ reply: 'v2: sleep 12000' })]);
    expect(outcomes.filter((outcome) => outcome !== 'ok')).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(6);
    // No run was lost or ran twice: each thread has its one run, ended.
    const runsPerThread = await Promise.all(threads.map(async (threadId) => (await client.runs.list(threadId)).map((run) => run.status)));
    for (const statuses of runsPerThread) expect(statuses).toEqual(['success']);
    console.log(
      `worker roll: ${outcomes.length + long.length} runs asked, ${outcomes.filter((outcome) => outcome !== 'ok').length} failed, ${runsPerThread.filter((statuses) => statuses.length !== 1).length} threads without exactly one run; statuses the SDK retried: ${JSON.stringify(retried.seen)}`,
    );
    // The thread from before is still there, with its run.
    expect((await client.threads.getState(thread.thread_id)).values).toMatchObject({ reply: 'v2: before' });
    expect(await onDatabase(async (db) => (await db.query('SELECT count(*)::int AS n FROM deployment_runtimes WHERE deployment_id = $1', [created.body.id])).rows[0].n)).toBe(1);
  }, 400_000);

  it('ingests through one api process, reads traces and usage through the other, and exports once', async () => {
    const traceId = randomUUID();
    const startTime = Date.now();
    const dottedOrder = `${new Date(startTime).toISOString().replace(/[-:.]/g, '')}${traceId}`;
    const writer = new LangSmith({ apiUrl: apis[0]!.url, apiKey: key });
    await writer.createRun({ id: traceId, trace_id: traceId, dotted_order: dottedOrder, name: 'scaled-trace', run_type: 'chain', inputs: { q: 1 }, project_name: 'scaled', start_time: startTime });
    await writer.updateRun(traceId, { outputs: { a: 2 }, end_time: startTime + 3, trace_id: traceId, dotted_order: dottedOrder });
    await writer.awaitPendingTraceBatches();

    const reader = new LangSmith({ apiUrl: apis[1]!.url, apiKey: key });
    const read = async () => {
      const found = [];
      for await (const traced of reader.listRuns({ projectName: 'scaled', traceId })) found.push(traced);
      return found;
    };
    await expect.poll(async () => (await read()).map((traced) => traced.end_time !== undefined && traced.end_time !== null), { timeout: 20_000, interval: 200 }).toEqual([true]);
    // Usage (folded by a worker's job) counts it, read through the other api process.
    const window = `start_time=${encodeURIComponent(new Date(startTime - 3_600_000).toISOString())}&end_time=${encodeURIComponent(new Date(startTime + 3_600_000).toISOString())}&workspace_ids=${workspaceId}`;
    const traces = async () => ((await rest(1, 'GET', `/orgs/current/billing/granular-usage?${window}`)) as { usage: { traces: number }[] }).usage.reduce((sum, bucket) => sum + bucket.traces, 0);
    await expect.poll(traces, { timeout: 30_000, interval: 500 }).toBeGreaterThanOrEqual(1);

    await s3.createBucket('scaled');
    const destination = await rest(0, 'POST', '/bulk-exports/destinations', {
      destination_type: 's3',
      display_name: 'Lake',
      config: { bucket_name: 'scaled', prefix: 'runs', endpoint_url: s3.endpoint, region: 'us-east-1' },
      credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
    });
    const project = await reader.readProject({ projectName: 'scaled' });
    // A minute each side: an export run per day of the range, and a range across midnight had one with nothing to write.
    const created = await rest(0, 'POST', '/bulk-exports', { bulk_export_destination_id: destination.id, session_id: project.id, start_time: new Date(startTime - 60_000).toISOString(), end_time: new Date(startTime + 60_000).toISOString() });
    await expect.poll(async () => (await rest(1, 'GET', `/bulk-exports/${created.id}`)).status, { timeout: 60_000, interval: 500 }).toBe('Completed');
    const runs = (await rest(1, 'GET', `/bulk-exports/${created.id}/runs`)) as { id: string; status: string }[];
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => 'Completed'));
    // Each file is named after the export run that wrote it (<run id>_<part>.parquet): every one is of
    // a run of this export, and no run wrote its part twice (by either worker).
    const files = (await listKeys(s3.client, 'scaled', 'runs/')).filter((file) => file.endsWith('.parquet'));
    const parts = files.map((file) => /([0-9a-f-]{36}_\d+)\.parquet$/.exec(file)?.[1] ?? file);
    expect(files.length).toBeGreaterThanOrEqual(1);
    expect(new Set(parts).size).toBe(parts.length);
    for (const part of parts) expect(runs.map((run) => run.id)).toContain(part.slice(0, 36));
  }, 180_000);

  it('replacing the api processes one at a time behind a balancer while clients stream runs and send traces: no request or stream fails, no trace is lost', async () => {
    // Runs that stream for about two seconds: ten custom events, one each 200 ms.
    const streaming = {
      'langgraph.json': JSON.stringify({ graphs: { agent: './agent.ts:graph' } }),
      'agent.ts': `
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ input: Annotation<string>(), reply: Annotation<string>() });
export const graph = new StateGraph(State)
  .addNode('answer', async (state, config) => {
    for (let step = 0; step < 10; step++) {
      config.writer?.({ step });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return { reply: 'streamed: ' + state.input };
  })
  .addEdge(START, 'answer')
  .addEdge('answer', END)
  .compile();
`,
    };
    const created = await controlPlane(0)('POST', '/v2/deployments', { body: deploymentBody(makeGitRepo(streaming).url, { name: 'streaming' }) });
    await waitForDeployed(controlPlane(1), created.body.id, created.body.latest_revision_id);

    const balancer = await startBalancer(apis.map((api) => api.url));
    try {
      const retried = retriedStatuses();
      const client = new Client({ apiUrl: `${balancer.url}/deployments/${created.body.id}`, defaultHeaders: { 'x-api-key': key }, callerOptions: { onFailedResponseHook: retried.hook } });
      const outcomes: string[] = [];
      let running = true;
      const consumer = async (who: number) => {
        for (let i = 0; running; i++) {
          const input = `${who}-${i}`;
          try {
            const thread = await client.threads.create();
            const steps: number[] = [];
            let reply: string | undefined;
            for await (const part of client.runs.stream(thread.thread_id, 'agent', { input: { input }, streamMode: ['values', 'custom'] })) {
              if (part.event === 'custom') steps.push((part.data as { step: number }).step);
              if (part.event === 'values') reply = (part.data as { reply?: string }).reply ?? reply;
            }
            // Every event once, in order, and the run's end: a stream cut by a stopping process went on elsewhere.
            outcomes.push(reply === `streamed: ${input}` && steps.join() === '0,1,2,3,4,5,6,7,8,9' ? 'ok' : `incomplete: ${reply} [${steps.join()}]`);
          } catch (error) {
            outcomes.push(`failed: ${(error as Error).message}`);
          }
        }
      };
      // An app tracing through the balancer meanwhile, a run posted and then patched each time (without
      // the SDK's batching, which only logs what fails): every call answered, every trace stored whole.
      const traced: string[] = [];
      const traceFailures: string[] = [];
      const tracer = async () => {
        const writer = new LangSmith({ apiUrl: balancer.url, apiKey: key, autoBatchTracing: false });
        for (let i = 0; running; i++) {
          const id = randomUUID();
          const startTime = Date.now();
          const dottedOrder = `${new Date(startTime).toISOString().replace(/[-:.]/g, '')}${id}`;
          try {
            await writer.createRun({ id, trace_id: id, dotted_order: dottedOrder, name: 'rolled', run_type: 'chain', inputs: { i }, project_name: 'rolling', start_time: startTime });
            await writer.updateRun(id, { outputs: { i }, end_time: Date.now(), trace_id: id, dotted_order: dottedOrder });
            traced.push(id);
          } catch (error) {
            traceFailures.push((error as Error).message);
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      const traffic = Promise.all([...[0, 1, 2].map(consumer), tracer()]);
      for (const index of [0, 1]) {
        const before = outcomes.length;
        const replacement = spawnPlatform(['start', '--role', 'api', '--port', '0'], env, 150_000);
        // SIGTERM, as an orchestrator replaces a process: it drains, then stops.
        expect(await apis[index]!.stop()).toBe(0);
        apis[index] = await replacement;
        balancer.backends = apis.map((api) => api.url);
        await expect.poll(() => outcomes.length, { timeout: 60_000, interval: 200 }).toBeGreaterThan(before + 3);
      }
      running = false;
      await traffic;
      expect(outcomes.filter((outcome) => outcome !== 'ok')).toEqual([]);
      expect(outcomes.length).toBeGreaterThan(6);
      expect(traceFailures).toEqual([]);
      expect(traced.length).toBeGreaterThan(10);
      const storedWhole = () =>
        onDatabase(async (db) => (await db.query('SELECT count(*)::int AS n FROM trace_runs WHERE id = ANY($1::uuid[]) AND end_time IS NOT NULL', [traced])).rows[0].n);
      await expect.poll(storedWhole, { timeout: 20_000, interval: 250 }).toBe(traced.length);
      console.log(
        `api roll: ${outcomes.length} streamed runs, ${outcomes.filter((outcome) => outcome !== 'ok').length} failed or incomplete; ${traced.length} traces sent, ${traceFailures.length} calls failed, ${traced.length - (await storedWhole())} lost; statuses the SDK retried: ${JSON.stringify(retried.seen)}`,
      );
    } finally {
      await balancer.close();
    }
  }, 400_000);
});
