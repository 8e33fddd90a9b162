// An N+1 guard: the number of SQL statements a GraphQL request issues must not grow with the number of
// rows it returns (Pothos's Prisma plugin folds relations into the parent query; fields that load per
// parent go through dataloaders). Every statement the app's pool runs is counted, Prisma's and raw SQL.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../../src/platform/app.js';
import { PreparingClient } from '../../../src/database/prepared-statements.js';
import { PrismaClient } from '../../../src/generated/prisma/client.js';
import { newId } from '../../../src/ids.js';
import { ViewerCache } from '../../../src/viewer-cache.js';
import { ingestRunBatch } from '../../../src/platform/ingest/ingest.service.js';
import { createDataset, createExamples } from '../../../src/platform/services/traces/datasets.service.js';
import { createFeedback } from '../../../src/platform/services/traces/feedback.service.js';
import { createProject } from '../../../src/platform/services/traces/projects.service.js';
import { authenticateApiKey } from '../../../src/platform/services/tenancy/authentication.service.js';
import { fixtureConfig } from '../../support/serve.js';
import { buildApiKey, buildTenant, buildWorkspace } from '../../support/factories.js';
import { graphql, startTestLocalDeployment, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
// The local deployments' agent servers this file runs, each on its own database.
const locals: { stop(): Promise<void> }[] = [];
let app: App;
let url: string;
let statements = 0;
/** Statements that read the workspaces table. */
let workspaceReads = 0;
let countingPool: pg.Pool;
let counting: PrismaClient;

/** A pool client that counts each statement it sends. */
class CountingClient extends PreparingClient {
  override query(...args: Parameters<PreparingClient['query']>): ReturnType<PreparingClient['query']> {
    statements++;
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
    if (text?.includes('FROM "public"."workspaces"')) workspaceReads++;
    return (super.query as (...rest: unknown[]) => ReturnType<PreparingClient['query']>)(...args);
  }
}

beforeAll(async () => {
  platform = await startTestPlatform();
  countingPool = new pg.Pool({ connectionString: platform.deps.db.url, max: 4, Client: CountingClient });
  counting = new PrismaClient({ adapter: new PrismaPg(countingPool) });
  // No API-key cache: every request counted authenticates, so one request's count equals another's.
  app = buildApp({ ...platform.deps, db: { ...platform.deps.db, pool: countingPool, prisma: counting }, viewers: new ViewerCache(0) });
  url = await app.start(0, '127.0.0.1');
});
afterAll(async () => {
  await app?.stop();
  await counting?.$disconnect();
  await countingPool?.end();
  for (const local of locals) await local.stop();
  await platform?.stop();
});

async function countFor(query: string, key: string, options: { tenant?: string; variables?: Record<string, unknown> } = {}) {
  statements = 0;
  workspaceReads = 0;
  const { body } = await graphql(url, query, { key, ...options });
  expect(body.errors).toBeUndefined();
  return { statements, workspaceReads, body };
}

const TENANCY = `{
  viewer { user { email } organization { name workspaces { id name organization { id } } } workspaces { id organization { name } } }
  apiKeys { shortKey user { email } workspace { name } }
}`;

const TRACES = `query($projectId: ID!) {
  tracingProjects { id runCount lastRunStartTime workspace { name } }
  runs(projectId: $projectId, isRoot: true) { edges { node { id feedback { key run { name } } project { name workspace { name } } children { name project { workspace { id } } children { name project { name workspace { name } } } } } } }
  bulkExports { id project { name } destination { displayName } runs { id status } }
}`;

// Not examples: a page of them (as of a version) is read per dataset, for a dataset's own page.
const DATASETS = `{ datasets { name exampleCount experiments { name runCount feedbackStats } } }`;

/** A tenant with `size` datasets of one example, each with two experiments of one scored run on it. */
async function datasetsOfSize(size: number) {
  const tenant = await buildTenant(platform.system);
  const ctx = { ...platform.deps, viewer: await authenticateApiKey(platform.deps, tenant.adminKey, tenant.workspace.id) };
  for (let i = 0; i < size; i++) {
    const dataset = await createDataset(ctx, { name: `dataset-${i}` });
    const [exampleId] = await createExamples(ctx, dataset.id, [{ inputs: { i } }]);
    for (const name of ['a', 'b']) {
      const project = await createProject(ctx, { name: `dataset-${i}-${name}`, referenceDatasetId: dataset.id });
      const runId = newId();
      await ingestRunBatch(platform.deps, { workspaceId: tenant.workspace.id }, {
        post: [{ id: runId, name: 'target', run_type: 'chain', start_time: new Date().toISOString(), session_name: project.name, reference_example_id: exampleId }],
      });
      await createFeedback(ctx, { runId, key: 'exact', score: name === 'a' ? 1 : 0 });
    }
  }
  return tenant;
}

const THREADS = `query($deploymentId: ID!) { threads(deploymentId: $deploymentId) { threadId runs(limit: 5) { runId status } } }`;

/**
 * A tenant with `size` traces (a root, two children, a grandchild) in a project `main`, each grandchild
 * in a project of its own, `size` finished bulk exports of two day runs, and (`deployment`) a local
 * deployment, its agent server running on its own database, with `size` threads of two runs.
 */
async function tenantOfSize(size: number, options: { deployment?: boolean } = {}) {
  const tenant = await buildTenant(platform.system, { planTier: 'plus' });
  const t0 = Date.parse('2026-03-01T12:00:00Z');
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  const post = [];
  for (let i = 0; i < size; i++) {
    const root = newId();
    const child = newId();
    post.push(
      { id: root, name: `trace-${i}`, run_type: 'chain', start_time: at(i * 1000), end_time: at(i * 1000 + 900), session_name: 'main' },
      { id: child, name: 'node-a', run_type: 'chain', parent_run_id: root, start_time: at(i * 1000 + 10), session_name: 'main' },
      { id: newId(), name: 'node-b', run_type: 'tool', parent_run_id: root, start_time: at(i * 1000 + 20), session_name: 'main' },
      // Each trace's grandchild in a project of its own, so a response holds runs of `size` + 1 projects.
      { id: newId(), name: 'model', run_type: 'llm', parent_run_id: child, start_time: at(i * 1000 + 30), session_name: `side-${i}` },
    );
  }
  await ingestRunBatch(platform.deps, { workspaceId: tenant.workspace.id }, { post });
  // Two feedback on each trace's root.
  const ctx = { ...platform.deps, viewer: await authenticateApiKey(platform.deps, tenant.adminKey, tenant.workspace.id) };
  for (const root of post.filter((run) => !run.parent_run_id)) {
    for (const key of ['correctness', 'thumbs']) await createFeedback(ctx, { runId: root.id, key, score: 1 });
  }
  const main = await platform.deps.db.prisma.tracingProject.findFirstOrThrow({ where: { workspaceId: tenant.workspace.id, name: 'main' } });
  for (let i = 0; i < size; i++) {
    // Finished already, so no export worker of another test file picks the runs up.
    await platform.deps.db.prisma.bulkExport.create({
      data: {
        id: newId(),
        workspaceId: tenant.workspace.id,
        sessionId: main.id,
        startTime: new Date('2026-03-01T00:00:00Z'),
        endTime: new Date('2026-03-03T00:00:00Z'),
        formatVersion: 'v1',
        compression: 'gzip',
        status: 'Completed',
        runs: {
          create: [1, 2].map((day) => ({
            id: newId(),
            status: 'Completed',
            startTime: new Date(`2026-03-0${day}T00:00:00Z`),
            endTime: new Date(`2026-03-0${day + 1}T00:00:00Z`),
          })),
        },
      },
    });
  }
  if (!options.deployment) return { tenant, projectId: main.id, deploymentId: '' };
  const { configPath } = fixtureConfig();
  const deployment = await startTestLocalDeployment(platform, { configPath, workspaceId: tenant.workspace.id });
  locals.push(deployment);
  // Its rows are in its own database.
  const { pool } = deployment.deps.db;
  const { rows } = await pool.query<{ assistant_id: string }>('SELECT id AS assistant_id FROM agent_assistants WHERE deployment_id = $1 LIMIT 1', [
    deployment.deploymentId,
  ]);
  for (let i = 0; i < size; i++) {
    const threadId = newId();
    await pool.query(`INSERT INTO agent_threads (id, deployment_id, updated_at) VALUES ($1, $2, now())`, [threadId, deployment.deploymentId]);
    for (const status of ['success', 'error']) {
      await pool.query(
        `INSERT INTO agent_runs (id, deployment_id, thread_id, assistant_id, status, updated_at) VALUES ($1, $2, $3, $4, $5, now())`,
        [newId(), deployment.deploymentId, threadId, rows[0]!.assistant_id, status],
      );
    }
  }
  return { tenant, projectId: main.id, deploymentId: deployment.deploymentId };
}

describe('GraphQL query count', () => {
  it('is the same for one workspace and two keys as for six workspaces and seven keys', async () => {
    const small = await buildTenant(platform.system);
    const large = await buildTenant(platform.system);
    for (let i = 0; i < 5; i++) {
      const workspace = await buildWorkspace(platform.system, large.organization.id);
      await buildApiKey(platform.system, large.organization.id, large.admin.id, workspace.id);
    }
    const one = await countFor(TENANCY, small.adminKey);
    const six = await countFor(TENANCY, large.adminKey);
    expect(six.body.data.viewer.workspaces).toHaveLength(6);
    expect(six.body.data.apiKeys).toHaveLength(7); // the admin and member keys, plus five
    expect(six.statements).toBe(one.statements);
  });

  it('is the same for one project, trace and export as for four: run counts, projects and their workspaces, children, feedback and its runs, exports with their projects and runs', async () => {
    const small = await tenantOfSize(1);
    const large = await tenantOfSize(4);
    // Each once before counting: a key's first use records it (last_used_at), and the first trace query
    // of a pool reads the list of trace_runs's partitions, which is then cached.
    for (const { tenant, projectId } of [small, large]) await countFor(TRACES, tenant.adminKey, { tenant: tenant.workspace.id, variables: { projectId } });
    const one = await countFor(TRACES, small.tenant.adminKey, { tenant: small.tenant.workspace.id, variables: { projectId: small.projectId } });
    const four = await countFor(TRACES, large.tenant.adminKey, { tenant: large.tenant.workspace.id, variables: { projectId: large.projectId } });
    const { tracingProjects, runs, bulkExports } = four.body.data;
    expect(tracingProjects).toHaveLength(5);
    expect(tracingProjects.find((project: { id: string }) => project.id === large.projectId).runCount).toBe(12);
    expect(runs.edges).toHaveLength(4);
    for (const { node } of runs.edges) {
      expect(node.project.name).toBe('main');
      expect(node.feedback.map((given: { key: string; run: { name: string } }) => [given.key, given.run.name]).sort()).toEqual([
        ['correctness', expect.stringMatching(/^trace-/)],
        ['thumbs', expect.stringMatching(/^trace-/)],
      ]);
      expect(node.project.workspace.name).toBe(large.tenant.workspace.name);
      expect(node.children.every((child: { project: { workspace: { id: string } } }) => child.project.workspace.id === large.tenant.workspace.id)).toBe(true);
      expect(node.children.map((child: { name: string }) => child.name)).toEqual(['node-a', 'node-b']);
      expect(node.children[0].children).toMatchObject([{ name: 'model', project: { workspace: { name: large.tenant.workspace.name } } }]);
    }
    const grandchildProjects = runs.edges.map(({ node }: { node: { children: { children: { project: { name: string } }[] }[] } }) => node.children[0]!.children[0]!.project.name);
    expect(new Set(grandchildProjects).size).toBe(4);
    expect(bulkExports).toHaveLength(4);
    expect(bulkExports.every((found: { runs: unknown[] }) => found.runs.length === 2)).toBe(true);
    // Each export's project by name (the console's exports page), from one read for them all.
    expect(bulkExports.map((found: { project: { name: string } | null }) => found.project?.name)).toEqual(['main', 'main', 'main', 'main']);
    expect(bulkExports.map((found: { destination: unknown }) => found.destination)).toEqual([null, null, null, null]);
    expect(four.statements).toBe(one.statements);
    // Workspaces are read once for the key's trace workspace and once for every project's (runs'
    // projects come from a dataloader, whose rows a Prisma relation would re-read per field path).
    expect(four.workspaceReads).toBeLessThanOrEqual(2);
  });

  it('is the same for one dataset as for four: example counts, experiments with run counts and scores', async () => {
    const small = await datasetsOfSize(1);
    const large = await datasetsOfSize(4);
    for (const tenant of [small, large]) await countFor(DATASETS, tenant.adminKey);
    const one = await countFor(DATASETS, small.adminKey);
    const four = await countFor(DATASETS, large.adminKey);
    expect(four.body.data.datasets).toHaveLength(4);
    for (const dataset of four.body.data.datasets) {
      expect(dataset.exampleCount).toBe(1);
      expect(dataset.experiments.map((e: { runCount: number; feedbackStats: any }) => [e.runCount, e.feedbackStats.exact.avg])).toEqual([
        [1, 1],
        [1, 0],
      ]);
    }
    expect(four.statements).toBe(one.statements);
  });

  it('is the same for one thread as for four: each thread’s runs', async () => {
    const small = await tenantOfSize(1, { deployment: true });
    const large = await tenantOfSize(4, { deployment: true });
    const one = await countFor(THREADS, small.tenant.adminKey, { variables: { deploymentId: small.deploymentId } });
    const four = await countFor(THREADS, large.tenant.adminKey, { variables: { deploymentId: large.deploymentId } });
    expect(four.body.data.threads).toHaveLength(4);
    for (const thread of four.body.data.threads) expect(thread.runs.map((run: { status: string }) => run.status).sort()).toEqual(['error', 'success']);
    expect(four.statements).toBe(one.statements);
  }, 120_000);
});
