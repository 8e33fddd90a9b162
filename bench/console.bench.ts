// bench:console — how long the console's pages take to show their content in headless Chromium on
// loopback. Traces: a tracing project of 100k runs (--runs): the project list, the project's newest
// runs (plain and filtered), and one trace's tree with a run's detail. Deployments (--deployments,
// default 20, made through the public GraphQL API and built by the real pipeline: one deployed chat
// graph, the others at a ref that does not exist, so they fail their build quickly): the list with each
// latest revision's status, one deployment's revisions with its build and deploy logs, its threads
// (--threads, each with one exchange) with one opened. Exports (--exports, to s3rver on loopback, each
// of a 2,000-run project): the exports page with every export's runs. Each sample is a fresh browser
// context (no HTTP cache: the page's scripts are fetched and parsed too) and a warm one (the hashed
// assets cached, as on every visit after the first). Times are the page's own clock from navigation
// start until the content a person looks for is on screen (the browser's context and process start-up
// are not the page's); the platform runs as `npm start` does (embedded PostgreSQL, api and worker
// roles). Prints figures; asserts nothing.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@langchain/langgraph-sdk';
import { type Browser, chromium, type Page } from 'playwright-core';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';
import { createBenchTenant, startBenchPlatform } from './tenant.js';
import { FILL_SECONDS_PER_RUN, FILL_START, fastFillTraceRuns, uuidOf } from './trace-run-fill.js';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '100000' },
    samples: { type: 'string', default: '7' },
    deployments: { type: 'string', default: '20' },
    threads: { type: 'string', default: '20' },
    exports: { type: 'string', default: '10' },
  },
});
const RUNS = Number(args.runs);
const SAMPLES = Number(args.samples);
const DEPLOYMENTS = Math.max(1, Number(args.deployments));
const THREADS = Math.max(1, Number(args.threads));
const EXPORTS = Math.max(1, Number(args.exports));
const CHROMIUM_PATH = '/usr/bin/chromium';

type Measure = { name: string; path: string; ready: (page: Page) => Promise<unknown> };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

type Gql = <T = any>(query: string, variables?: Record<string, unknown>) => Promise<T>;

/** A local git repository holding a chat graph whose fake model answers at once. */
function makeChatRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-console-repo-'));
  // Readable by the deployment's own OS user, which clones it.
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { chat: './chat.ts:graph' } }));
  writeFileSync(
    join(dir, 'chat.ts'),
    `import { AIMessage } from '@langchain/core/messages';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
export const graph = new StateGraph(MessagesAnnotation)
  .addNode('reply', async (state) => ({ messages: [await new FakeStreamingChatModel({ sleep: 0, responses: [new AIMessage('A bench reply.')] }).invoke(state.messages)] }))
  .addEdge(START, 'reply').addEdge('reply', END).compile();
`,
  );
  const git = (...command: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.test', ...command], { cwd: dir });
  git('init', '--quiet', '--initial-branch=main');
  git('add', '-A');
  git('commit', '--quiet', '-m', 'bench');
  return dir;
}

const FINISHED_REVISION = ['DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED', 'UNKNOWN'];

/** Deployments through GraphQL: one deployed chat graph with `THREADS` threads of one exchange each, the rest failing their build. */
async function fillDeployments(gql: Gql, baseUrl: string, key: string | undefined, repo: string): Promise<{ deploymentId: string; threadId: string }> {
  const create = (name: string, ref: string) =>
    gql<{ createDeployment: { id: string; latestRevisionId: string } }>(
      'mutation($input: CreateDeploymentInput!) { createDeployment(input: $input) { id latestRevisionId } }',
      { input: { name, repoUrl: `file://${repo}`, repoRef: ref, graphConfigPath: 'langgraph.json', secrets: [{ name: 'BENCH_SECRET', value: 'x' }] } },
    ).then((data) => data.createDeployment);
  const finished = async (deployment: { id: string; latestRevisionId: string }) => {
    for (;;) {
      const { revision } = await gql<{ revision: { status: string } }>('query($d: ID!, $id: ID!) { revision(deploymentId: $d, id: $id) { status } }', { d: deployment.id, id: deployment.latestRevisionId });
      if (FINISHED_REVISION.includes(revision.status)) return revision.status;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  const chat = await create('bench-chat', 'main');
  const status = await finished(chat);
  if (status !== 'DEPLOYED') throw new Error(`the chat deployment ended ${status}`);
  for (let i = 1; i < DEPLOYMENTS; i++) await finished(await create(`bench-failing-${i}`, 'no-such-ref'));
  const { deployment } = await gql<{ deployment: { url: string } }>('query($id: ID!) { deployment(id: $id) { url } }', { id: chat.id });
  const sdk = new Client({ apiUrl: `${baseUrl}${deployment.url}`, apiKey: key });
  let threadId = '';
  for (let i = 0; i < THREADS; i++) {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, 'chat', { input: { messages: [{ role: 'user', content: `Question ${i}` }] } });
    threadId = thread.thread_id;
  }
  return { deploymentId: chat.id, threadId };
}

/** s3rver on loopback, a destination in it and `EXPORTS` exports of a 2,000-run project, all completed. */
async function fillExports(gql: Gql, pool: { query: (sql: string, values?: unknown[]) => Promise<{ rows: any[] }> }, workspaceId: string) {
  const directory = mkdtempSync(join(tmpdir(), 'bench-console-s3-'));
  const s3 = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: 'bench-console' }] });
  const address = (await s3.run()) as AddressInfo;
  const projectId = (
    await pool.query(`INSERT INTO tracing_projects (id, workspace_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'bench-export', now()) RETURNING id`, [workspaceId])
  ).rows[0]!.id as string;
  // Rows RUNS.. of the synthetic history (its row numbers make its ids): the 2,000 runs after the big project's.
  await fastFillTraceRuns(pool as never, workspaceId, [projectId], RUNS, RUNS + 2_000);
  const destination = await gql<{ createExportDestination: { data?: { id: string }; message?: string } }>(
    `mutation($config: ExportDestinationConfigInput!, $credentials: ExportCredentialsInput) {
      createExportDestination(displayName: "bench lake", config: $config, credentials: $credentials) {
        ... on MutationCreateExportDestinationSuccess { data { id } } ... on AppError { message } } }`,
    { config: { bucketName: 'bench-console', endpointUrl: `http://127.0.0.1:${address.port}` }, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } },
  );
  if (!destination.createExportDestination.data) throw new Error(`destination: ${destination.createExportDestination.message}`);
  const day = new Date(FILL_START.getTime() + RUNS * FILL_SECONDS_PER_RUN * 1000).toISOString();
  const next = new Date(FILL_START.getTime() + (RUNS + 2_000) * FILL_SECONDS_PER_RUN * 1000).toISOString();
  const ids: string[] = [];
  for (let i = 0; i < EXPORTS; i++) {
    const created = await gql<{ createBulkExport: { data?: { id: string }; message?: string } }>(
      `mutation($input: CreateBulkExportInput!) { createBulkExport(input: $input) { ... on MutationCreateBulkExportSuccess { data { id } } ... on AppError { message } } }`,
      { input: { destinationId: destination.createExportDestination.data.id, sessionId: projectId, startTime: day, endTime: next } },
    );
    if (!created.createBulkExport.data) throw new Error(`export: ${created.createBulkExport.message}`);
    ids.push(created.createBulkExport.data.id);
  }
  for (const id of ids) {
    for (;;) {
      const { bulkExport } = await gql<{ bulkExport: { status: string } }>('query($id: ID!) { bulkExport(id: $id) { status } }', { id });
      if (['Completed', 'Failed', 'Cancelled', 'TimedOut'].includes(bulkExport.status)) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  return {
    async stop() {
      await s3.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

async function main() {
  const platform = await startBenchPlatform({ AGENT_PLATFORM_ROLES: 'api,worker' });
  let browser: Browser | undefined;
  let s3: { stop(): Promise<void> } | undefined;
  const repo = makeChatRepo();
  try {
    const { deps } = platform;
    const tenant = await createBenchTenant(deps);
    const workspaceId = tenant.workspace.id;
    const projectId = (await deps.db.pool.query<{ id: string }>(
      `INSERT INTO tracing_projects (id, workspace_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'bench-100k', now()) RETURNING id`,
      [workspaceId],
    )).rows[0]!.id;
    const filled = performance.now();
    await fastFillTraceRuns(deps.db.pool, workspaceId, [projectId], 0, RUNS);
    await deps.db.pool.query('VACUUM ANALYZE trace_runs');
    console.log(`bench:console — ${RUNS.toLocaleString('en')} runs in one project (filled in ${((performance.now() - filled) / 1000).toFixed(1)} s); ${SAMPLES} samples per page`);
    // A trace from the middle of the history (every fifth run is a root with four children).
    const traceId = (await deps.db.pool.query<{ id: string }>(`SELECT ${uuidOf(`'trace-' || ${Math.floor(RUNS / 10)}`)} AS id`)).rows[0]!.id;

    const gql: Gql = async (query, variables = {}) => {
      const response = await fetch(`${platform.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': tenant.key, 'x-tenant-id': workspaceId },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await response.json()) as { data?: any; errors?: { message: string }[] };
      if (body.errors?.length) throw new Error(body.errors[0]!.message);
      return body.data;
    };
    const madeDeployments = performance.now();
    // The api role runs here (AGENT_PLATFORM_ROLES above): it has a url.
    const { deploymentId, threadId } = await fillDeployments(gql, platform.url!, tenant.key, repo);
    console.log(`${DEPLOYMENTS} deployments (1 deployed, ${DEPLOYMENTS - 1} failing their build), ${THREADS} threads: made in ${((performance.now() - madeDeployments) / 1000).toFixed(1)} s`);
    const madeExports = performance.now();
    s3 = await fillExports(gql, deps.db.pool, workspaceId);
    console.log(`${EXPORTS} exports of a 2,000-run project to s3rver: made in ${((performance.now() - madeExports) / 1000).toFixed(1)} s`);

    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    const measures: Measure[] = [
      { name: 'projects (run count, error rate, latency)', path: '/#/', ready: (page) => page.locator('table.projects tbody tr').first().waitFor() },
      { name: "project's newest 50 traces", path: `/#/projects/${projectId}`, ready: (page) => page.locator('table.runs tbody tr').nth(49).waitFor() },
      {
        name: '+ filter eq(run_type, "llm"), every run',
        path: `/#/projects/${projectId}?filter=${encodeURIComponent('eq(run_type, "llm")')}&all=1`,
        ready: (page) => page.locator('table.runs tbody tr').nth(49).waitFor(),
      },
      {
        // No index serves latency: the platform walks the project's runs back in windows.
        name: '+ filter gt(latency, "4.9s") (no index)',
        path: `/#/projects/${projectId}?filter=${encodeURIComponent('gt(latency, "4.9s")')}`,
        ready: (page) => page.locator('table.runs tbody tr').first().waitFor(),
      },
      { name: 'a trace: tree, waterfall, run detail', path: `/#/traces/${traceId}`, ready: (page) => page.locator('section.run-detail h2').waitFor() },
      { name: `deployments (${DEPLOYMENTS}, latest revision each)`, path: '/#/deployments', ready: (page) => page.locator('table.deployments tbody tr').nth(DEPLOYMENTS - 1).waitFor() },
      {
        name: 'a deployment: revisions, build + deploy logs',
        path: `/#/deployments/${deploymentId}`,
        ready: (page) => Promise.all([page.getByRole('log', { name: 'Build log' }).getByText(/Build succeeded/).waitFor(), page.getByRole('log', { name: 'Deploy log' }).getByText('Deployed').waitFor()]),
      },
      {
        name: `its threads (${THREADS}), one opened`,
        path: `/#/deployments/${deploymentId}/threads?thread=${threadId}`,
        ready: (page) => Promise.all([page.locator('nav.thread-list li').nth(THREADS - 1).waitFor(), page.locator('ol.conversation .message-assistant').waitFor(), page.getByText('State: done').waitFor()]),
      },
      { name: `exports (${EXPORTS}, each run's rows and files)`, path: '/#/exports', ready: (page) => page.locator('details.export').nth(EXPORTS - 1).getByText(/2,000 rows/).waitFor() },
    ];

    // Signed in as a person would be: the key and workspace in the tab's sessionStorage before the page's script runs.
    const signedIn = async () => {
      const context = await browser!.newContext({ viewport: { width: 1400, height: 900 } });
      await context.addInitScript(
        ([key, workspace]) => {
          sessionStorage.setItem('agent-platform.api-key', key!);
          sessionStorage.setItem('agent-platform.workspace', workspace!);
        },
        [tenant.key!, workspaceId],
      );
      return context;
    };
    // Milliseconds from the navigation's start (the page's own clock) until the content is on screen.
    const load = async (page: Page, measure: Measure) => {
      await page.goto(`${platform.url}${measure.path}`, { waitUntil: 'commit' });
      await measure.ready(page).catch(async (error: unknown) => {
        await page.screenshot({ path: '/tmp/bench-console-failed.png' });
        console.error(measure.name, await page.locator('body').innerText());
        throw error;
      });
      return page.evaluate(() => performance.now());
    };
    // One untimed pass: the server's first queries plan and JIT-compile, as on any running installation.
    {
      const context = await signedIn();
      const page = await context.newPage();
      for (const measure of measures) await load(page, measure);
      await context.close();
    }

    const showLoad = () => loadavg().map((value) => value.toFixed(2)).join(' ');
    console.log(`\nload average before the samples: ${showLoad()} (${navigator.hardwareConcurrency} cores)`);
    console.log(`${'page'.padEnd(44)} ${'cold p50'.padStart(9)} ${'cold max'.padStart(9)} ${'warm p50'.padStart(9)} ${'warm max'.padStart(9)}`);
    for (const measure of measures) {
      const cold: number[] = [];
      const warm: number[] = [];
      for (let sample = 0; sample < SAMPLES; sample++) {
        const context = await signedIn();
        const page = await context.newPage();
        cold.push(await load(page, measure));
        // The same tab again: assets from the HTTP cache, the data asked anew.
        await page.goto('about:blank');
        warm.push(await load(page, measure));
        await context.close();
      }
      const ms = (value: number) => `${Math.round(value)} ms`.padStart(9);
      console.log(`${measure.name.padEnd(44)} ${ms(median(cold))} ${ms(Math.max(...cold))} ${ms(median(warm))} ${ms(Math.max(...warm))}`);
    }
    console.log(`load average after: ${showLoad()}`);
  } finally {
    await browser?.close();
    await platform.stop();
    await s3?.stop();
    rmSync(repo, { recursive: true, force: true });
  }
}

await main();
