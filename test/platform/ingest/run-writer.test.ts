// Group commit of ingest's posts (run-writer.ts): concurrent requests of one ingester share INSERT
// statements, yet each request is answered with its own outcome: its runs stored, its duplicates
// named (REST's 409), a value PostgreSQL rejects failing that request alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { type IngestResult, ingestRunBatch } from '../../../src/platform/ingest/ingest.service.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

let platform: TestPlatform;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
// One statement in flight at a time: while it runs, every other request waits to share the next.
let deps: Parameters<typeof ingestRunBatch>[0];

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  deps = { db: platform.deps.db, config: { ...platform.deps.config, ingestWriteConnections: 1 } };
});
afterAll(() => platform?.stop());

const who = () => ({ workspaceId: tenant.workspace.id, apiKeyId: null, userId: tenant.admin.id });
const root = (project: string, id = newId(), start_time = new Date().toISOString()) => ({ id, name: 'root', run_type: 'chain', session_name: project, start_time });

/** A new project, already known to ingest (so concurrent requests reach the writer in the order they are made). */
async function newProject(): Promise<string> {
  const project = `group-${newId().slice(-8)}`;
  await ingestRunBatch(deps, who(), { post: [root(project)] });
  return project;
}

async function storedIds(ids: string[]): Promise<string[]> {
  const { rows } = await platform.deps.db.pool.query<{ id: string }>('SELECT id FROM trace_runs WHERE tenant_id = $1 AND id = ANY($2::uuid[])', [tenant.workspace.id, ids]);
  return rows.map((row) => row.id).sort();
}

/** The usage delta rows of a project: one per statement that stored its roots (and hour). */
async function usageDeltas(project: string): Promise<{ statements: number; traces: number }> {
  const { rows } = await platform.deps.db.pool.query<{ statements: number; traces: number }>(
    `SELECT count(*)::int AS statements, COALESCE(sum(d.traces), 0)::int AS traces
       FROM usage_trace_deltas d JOIN tracing_projects p ON p.id = d.project_id WHERE p.workspace_id = $1 AND p.name = $2`,
    [tenant.workspace.id, project],
  );
  return rows[0]!;
}

describe('group commit of concurrent ingest requests', () => {
  it('stores the runs of concurrent requests in shared statements and answers each request after its commit', async () => {
    const project = await newProject();
    const batches = Array.from({ length: 12 }, () => Array.from({ length: 5 }, () => root(project)));
    const results = await Promise.all(
      batches.map(async (post) => {
        const result = await ingestRunBatch(deps, who(), { post });
        // Answered: the request's runs are committed, visible to any other connection.
        expect(await storedIds(post.map((run) => run.id))).toEqual(post.map((run) => run.id).sort());
        return result;
      }),
    );
    expect(results.every((result) => result.accepted === 5 && result.duplicates.length === 0)).toBe(true);
    // The first request is written alone; the others, waiting meanwhile, share the next statement(s).
    const deltas = await usageDeltas(project);
    expect(deltas.traces).toBe(61);
    expect(deltas.statements).toBeLessThan(12); // 13 requests, with the project's first
  });

  it('gives an id sent by two concurrent requests to one of them; the other names it as its duplicate', async () => {
    const project = await newProject();
    const shared = root(project);
    const first = [root(project), shared, root(project)];
    const second = [root(project), { ...shared, name: 'second copy' }];
    const blocker = ingestRunBatch(deps, who(), { post: [root(project)] }); // holds the one statement, so both wait and group
    const results: IngestResult[] = await Promise.all([ingestRunBatch(deps, who(), { post: first }), ingestRunBatch(deps, who(), { post: second })]);
    await blocker;
    expect(results.map((result) => result.duplicates)).toEqual([[], [shared.id]]);
    expect(results.map((result) => result.accepted)).toEqual([3, 1]);
    expect(await storedIds([...first, ...second].map((run) => run.id))).toEqual([...new Set([...first, ...second].map((run) => run.id))].sort());
    const { rows } = await platform.deps.db.pool.query('SELECT name FROM trace_runs WHERE tenant_id = $1 AND id = $2', [tenant.workspace.id, shared.id]);
    expect(rows).toEqual([{ name: 'root' }]);
  });

  it('fails only the request whose value PostgreSQL rejects, and stores the requests grouped with it', async () => {
    const project = await newProject();
    // 30 February parses in JavaScript (as 1 March) but PostgreSQL rejects it: a class 22 error.
    const bad = [root(project), root(project, newId(), '2026-02-30T10:00:00Z')];
    const good = Array.from({ length: 4 }, () => [root(project), root(project)]);
    const blocker = ingestRunBatch(deps, who(), { post: [root(project)] });
    const outcomes = await Promise.allSettled([good[0]!, good[1]!, bad, good[2]!, good[3]!].map((post) => ingestRunBatch(deps, who(), { post })));
    await blocker;
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ loc: ['body'], type: 'value_error' }] });
    const goodIds = good.flat().map((run) => run.id);
    expect(await storedIds(goodIds)).toEqual([...goodIds].sort());
    expect(await storedIds(bad.map((run) => run.id))).toEqual([]);
  });
});
