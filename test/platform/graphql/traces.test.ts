// GraphQL over traces: projects, the runs connection with the filter language and cursor paging, and
// trace trees through TraceRun.children.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { ingestRunBatch } from '../../../src/platform/ingest/ingest.service.js';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let other: Awaited<ReturnType<typeof buildTenant>>;
let projectId: string;
const root = newId();

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  other = await buildTenant(platform.system);
  const t0 = Date.parse('2026-02-01T12:00:00Z');
  const at = (ms: number) => new Date(t0 + ms).toISOString();
  const child = newId();
  await ingestRunBatch(platform.deps, { workspaceId: tenant.workspace.id }, {
    post: [
      { id: root, name: 'agent', run_type: 'chain', start_time: at(0), end_time: at(900), session_name: 'gql', inputs: { q: 'hi' } },
      { id: child, name: 'node', run_type: 'chain', parent_run_id: root, start_time: at(10), end_time: at(800), session_name: 'gql' },
      {
        id: newId(), name: 'model', run_type: 'llm', parent_run_id: child, start_time: at(20), end_time: at(700), session_name: 'gql',
        outputs: { usage_metadata: { input_tokens: 1, output_tokens: 2, total_tokens: 3 } },
      },
      ...Array.from({ length: 5 }, (_, i) => ({ id: newId(), name: `solo-${i}`, run_type: 'tool', start_time: at(1000 + i), session_name: 'gql' })),
    ],
  });
  const { rows } = await platform.deps.db.pool.query('SELECT id FROM tracing_projects WHERE workspace_id = $1 AND name = $2', [tenant.workspace.id, 'gql']);
  projectId = rows[0].id;
});
afterAll(() => platform?.stop());

const RUNS = `query Runs($projectId: ID!, $filter: String, $first: Int, $after: String, $isRoot: Boolean) {
  runs(projectId: $projectId, filter: $filter, first: $first, after: $after, isRoot: $isRoot) {
    edges { cursor node { id name runType latency totalTokens children { name children { name totalTokens } } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

describe('GraphQL traces', () => {
  it('lists projects with run counts', async () => {
    const { body } = await graphql(platform.url, '{ tracingProjects { id name runCount } }', { key: tenant.adminKey });
    expect(body.data.tracingProjects).toEqual([{ id: projectId, name: 'gql', runCount: 8 }]);
  });

  it('returns a trace tree through children, with tokens on the LLM run', async () => {
    const { body } = await graphql(platform.url, RUNS, { key: tenant.adminKey, variables: { projectId, filter: 'eq(name, "agent")' } });
    expect(body.errors).toBeUndefined();
    const [edge] = body.data.runs.edges;
    // The root's tokens are its LLM descendant's, rolled up.
    expect(edge.node).toMatchObject({ id: root, name: 'agent', latency: 0.9, totalTokens: 3, children: [{ name: 'node', children: [{ name: 'model', totalTokens: 3 }] }] });
  });

  it('returns a whole trace in execution order through traceRuns, and nothing of another tenant’s', async () => {
    const query = 'query($traceId: ID!) { traceRuns(traceId: $traceId) { name parentRunId traceId } }';
    const { body } = await graphql(platform.url, query, { key: tenant.adminKey, variables: { traceId: root } });
    expect(body.errors).toBeUndefined();
    expect(body.data.traceRuns.map((run: { name: string }) => run.name)).toEqual(['agent', 'node', 'model']);
    expect(body.data.traceRuns[0]).toMatchObject({ parentRunId: null, traceId: root });
    const hidden = await graphql(platform.url, query, { key: other.adminKey, variables: { traceId: root } });
    expect(hidden.body.data.traceRuns).toEqual([]);
  });

  it('gives each project the error rate and latency of its newest traces', async () => {
    const t0 = Date.parse('2026-03-01T12:00:00Z');
    await ingestRunBatch(platform.deps, { workspaceId: tenant.workspace.id }, {
      post: [100, 200, 300, 400].map((ms, i) => ({
        id: newId(), name: `stat-${i}`, run_type: 'chain', session_name: 'stats',
        start_time: new Date(t0 + i * 1000).toISOString(), end_time: new Date(t0 + i * 1000 + ms).toISOString(),
        ...(i === 3 ? { error: 'boom' } : {}),
      })),
    });
    const { body } = await graphql(platform.url, '{ tracingProjects(nameContains: "stats") { name recentTraceStats { traces errors errorRate latencyP50 latencyP99 } } }', { key: tenant.adminKey });
    const [stats] = body.data.tracingProjects;
    expect(stats.recentTraceStats).toMatchObject({ traces: 4, errors: 1, errorRate: 0.25 });
    expect(stats.recentTraceStats.latencyP50).toBeCloseTo(0.25, 5);
    expect(stats.recentTraceStats.latencyP99).toBeCloseTo(0.397, 5);
  });

  it('pages the runs connection with first/after', async () => {
    const names: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const { body } = (await graphql(platform.url, RUNS, { key: tenant.adminKey, variables: { projectId, isRoot: true, first: 2, after } })) as any;
      names.push(...body.data.runs.edges.map((edge: { node: { name: string } }) => edge.node.name));
      if (!body.data.runs.pageInfo.hasNextPage) break;
      after = body.data.runs.pageInfo.endCursor;
    }
    expect(names).toEqual(['solo-4', 'solo-3', 'solo-2', 'solo-1', 'solo-0', 'agent']);
  });

  it('reports a malformed filter with its position, and hides other tenants’ projects', async () => {
    const bad = await graphql(platform.url, RUNS, { key: tenant.adminKey, variables: { projectId, filter: 'eq(name,' } });
    expect(bad.body.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/^Invalid filter at position 8/),
      extensions: { code: 'BAD_REQUEST', filter: { position: 8, line: 1, column: 9, expected: expect.arrayContaining([expect.any(String)]) } },
    });
    const hidden = await graphql(platform.url, RUNS, { key: other.adminKey, variables: { projectId } });
    expect(hidden.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('creates a project, and refuses a duplicate as a typed error', async () => {
    const mutation = `mutation($name: String!) { createTracingProject(input: { name: $name }) {
      __typename ... on MutationCreateTracingProjectSuccess { data { name runCount } } ... on AppError { code } } }`;
    const created = await graphql(platform.url, mutation, { key: tenant.adminKey, variables: { name: 'from-graphql' } });
    expect(created.body.data.createTracingProject.data).toEqual({ name: 'from-graphql', runCount: 0 });
    const again = await graphql(platform.url, mutation, { key: tenant.adminKey, variables: { name: 'from-graphql' } });
    expect(again.body.data.createTracingProject).toEqual({ __typename: 'AppError', code: 'CONFLICT' });
    const denied = await graphql(platform.url, mutation, { key: tenant.viewerKey, variables: { name: 'nope' } });
    expect(denied.body.data.createTracingProject).toEqual({ __typename: 'AppError', code: 'FORBIDDEN' });
  });
});
